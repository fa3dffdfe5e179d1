"""How long each job held GPUs of each type, and the GPU-seconds of each type: for clusters of several types."""

from __future__ import annotations

from simcluster.job import Job
from simcluster.metrics.observer import RunObserver


class TypeSeconds(RunObserver):
    """Per job, the seconds it held GPUs of each type (``seconds_<type>`` in jobs.csv), and per type the
    GPU-seconds held (``gpu_seconds_per_type`` in summary.json; a GPU shared by two jobs counts twice, as
    each job's GPU-time does).  A job spread over types counts on each.

    >>> from simcluster.cluster import VirtualCluster
    >>> vc = VirtualCluster("c", groups=[("v100", 1, 4, 0.0), ("k80", 1, 4, 0.0)])
    >>> job = Job(index=0, job_id="a", vc="c", gpu_num=6, submit_time=0, duration=10)
    >>> job.allocation = ((vc.nodes[0], [0, 1, 2, 3]), (vc.nodes[1], [0, 1]))
    >>> seconds = TypeSeconds(vc.gpu_types)
    >>> seconds.begin(job, 0.0); seconds.end(job, 10.0)
    >>> seconds.of(job), seconds.gpu_seconds
    ({'v100': 10.0, 'k80': 10.0}, {'v100': 40.0, 'k80': 20.0})
    """

    def __init__(self, types: tuple[str, ...]) -> None:
        self.types = types
        self.gpu_seconds = dict.fromkeys(types, 0.0)
        self._held: dict[Job, dict[str, float]] = {}
        self._open: dict[Job, tuple[float, dict[str, int]]] = {}

    def begin(self, job: Job, now: float) -> None:
        counts: dict[str, int] = {}
        for node, ids in job.allocation:
            counts[node.gpu_type] = counts.get(node.gpu_type, 0) + len(ids)
        self._open[job] = (now, counts)

    def end(self, job: Job, now: float) -> None:
        opened = self._open.pop(job, None)
        if opened is None:
            return
        since, counts = opened
        held = self._held.setdefault(job, dict.fromkeys(self.types, 0.0))
        for gpu_type, gpus in counts.items():
            held[gpu_type] += now - since
            self.gpu_seconds[gpu_type] += (now - since) * gpus

    def close_all(self, now: float) -> None:
        """At the end of a run stopped early: count the jobs still running up to ``now``."""
        for job in list(self._open):
            self.end(job, now)

    def of(self, job: Job) -> dict[str, float]:
        return self._held.get(job, dict.fromkeys(self.types, 0.0))
