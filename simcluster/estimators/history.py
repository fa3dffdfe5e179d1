from __future__ import annotations

from collections import defaultdict

from simcluster.estimators.base import ESTIMATORS, Estimator
from simcluster.job import Job


class _Mean:
    __slots__ = ("count", "total")

    def __init__(self) -> None:
        self.total, self.count = 0.0, 0

    def add(self, value: float) -> None:
        self.total += value
        self.count += 1


@ESTIMATORS.register("history")
class History(Estimator):
    """Mean duration of the user's finished jobs of the same GPU count, else of the user, else of everyone.

    Before any job has finished the estimate is 0, so the queue falls back
    to GPU count and submit order.
    """

    def __init__(self, config) -> None:
        super().__init__(config)
        self._by_user_gpus: defaultdict[tuple[str, int], _Mean] = defaultdict(_Mean)
        self._by_user: defaultdict[str, _Mean] = defaultdict(_Mean)
        self._all = _Mean()

    def estimate(self, job: Job, now: float) -> float:
        for mean in (self._by_user_gpus.get((job.user, job.gpu_num)), self._by_user.get(job.user), self._all):
            if mean is not None and mean.count:
                return mean.total / mean.count
        return 0.0

    def observe(self, job: Job, now: float) -> None:
        self._by_user_gpus[(job.user, job.gpu_num)].add(job.duration)
        self._by_user[job.user].add(job.duration)
        self._all.add(job.duration)
