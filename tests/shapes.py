"""What every run must respect, whatever the policy and the cluster's shape: an observer that checks it."""

from __future__ import annotations

from collections import Counter

from simcluster.job import Job
from simcluster.metrics.observer import Observer


class Audit(Observer):
    """Checks each start as it happens and keeps what the end of a run must show.

    At every start: the job is not finished, runs only on GPU types it can run on (on one type when
    ``one_type``), and no GPU holds more than it can — thousandths summing to at most 1000 for jobs
    taking fractions, at most ``max_jobs`` whole-GPU jobs.  Kept: the most GPUs of each type busy at
    once, how often each job finished, and the most work any job had left when it finished.
    """

    def __init__(self, one_type: bool = False, max_jobs: int = 2) -> None:
        self.one_type, self.max_jobs = one_type, max_jobs
        self.holders: Counter[tuple[str, int]] = Counter()  # (node, GPU) → jobs on it
        self.milli: Counter[tuple[str, int]] = Counter()
        self.type_of: dict[str, str] = {}
        self.held: dict[Job, list[tuple[str, int]]] = {}
        self.busy: Counter[str] = Counter()
        self.most_busy: Counter[str] = Counter()
        self.finished: Counter[int] = Counter()
        self.work_left_at_finish = 0.0

    def on_start(self, job: Job, now: float) -> None:
        assert job.index not in self.finished, f"{job.job_id} started after it finished"
        types = {node.gpu_type for node, _ in job.allocation}
        assert all(job.speed_on(t) > 0 for t in types), f"{job.job_id} on {types}, where it cannot run"
        assert not self.one_type or len(types) == 1, f"{job.job_id} spread over GPU types {types}"
        gpus = [(node.name, i) for node, ids in job.allocation for i in ids]
        assert len(gpus) == job.gpu_num, f"{job.job_id} got {len(gpus)} GPUs, asked {job.gpu_num}"
        for node, _ in job.allocation:
            self.type_of[node.name] = node.gpu_type
        for gpu in gpus:
            if not self.holders[gpu]:
                self.busy[self.type_of[gpu[0]]] += 1
            self.holders[gpu] += 1
            self.milli[gpu] += job.gpu_milli
            whole = job.gpu_milli >= 1000
            assert (self.holders[gpu] <= self.max_jobs) if whole else (self.milli[gpu] <= 1000), \
                f"GPU {gpu} overcommitted: {self.holders[gpu]} jobs, {self.milli[gpu]} thousandths"
        self.held[job] = gpus
        for t, n in self.busy.items():
            self.most_busy[t] = max(self.most_busy[t], n)

    def _leave(self, job: Job, now: float) -> None:
        for gpu in self.held.pop(job, []):
            self.holders[gpu] -= 1
            self.milli[gpu] -= job.gpu_milli
            if not self.holders[gpu]:
                self.busy[self.type_of[gpu[0]]] -= 1

    on_preempt = on_restart = on_move = _leave

    def on_finish(self, job: Job, now: float) -> None:
        self._leave(job, now)
        self.finished[job.index] += 1
        self.work_left_at_finish = max(self.work_left_at_finish, job.work_left)
