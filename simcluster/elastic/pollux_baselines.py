"""The baselines of Pollux's simulator, as it defines them: Optimus+Oracle and its two-queue Tiresias.

Both are called once per scheduling interval with the active jobs (submitted, unfinished, in
submission order) and the current allocations (job → a node index per GPU), and return new
allocations in the same form, as the authors' ``optimus.py`` and ``tiresias.py`` do; every rule and
tie-break is theirs, so that a simulation driving them the same way matches their results job by job:

* **Optimus+Oracle**: every job gets one GPU (while GPUs last, in the order given), then GPUs go one at
  a time to the job whose remaining time falls most from one more GPU — the step time at n and n + 1
  GPUs (measured, at the job's fixed total batch, placed four GPUs per node) times the iterations it
  has left (the *oracle*: read from the validation runs, not estimated).  Jobs whose GPU count is
  unchanged keep their GPUs; the others are placed smallest first, each GPU on the node with the most
  free GPUs (earliest node on ties).
* **Tiresias** (two queues, no starvation guard): a job is demoted from the first queue to the second
  once it has run 16 GPU-hours (its requested GPUs × its running time, counted in whole seconds since
  the last interval); queues in order, first come first served within each, every job that still fits
  in the cluster's free GPU count runs (later jobs may pass an earlier one that does not fit); a job
  that stops running is preempted.  New jobs are placed like Optimus's.

>>> free = free_gpus({0: 4, 1: 4}, {"a": [0, 0, 0]})
>>> place(3, free), dict(free)
([1, 1, 1], {0: 1, 1: 1})
"""

from __future__ import annotations

import collections
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from simcluster.elastic.pollux_apps import PolluxApp

Allocations = dict[str, list[int]]  # job → the node of each of its GPUs


def free_gpus(node_gpus: Mapping[int, int], allocations: Mapping[str, list[int]]) -> collections.Counter[int]:
    """Free GPUs per node as the authors count them: a Counter difference, so full nodes are absent."""
    used: collections.Counter[int] = collections.Counter(g for alloc in allocations.values() for g in alloc)
    return collections.Counter(dict(node_gpus)) - used


def place(count: int, free: collections.Counter[int]) -> list[int]:
    """``count`` GPUs, each run of them on the node with the most free GPUs now (``Counter.most_common``:
    the earliest such node on ties); ``free`` is updated."""
    alloc: list[int] = []
    while len(alloc) < count:
        node, available = free.most_common(1)[0]
        take = min(available, count - len(alloc))
        alloc.extend([node] * take)
        free[node] -= take
    return alloc


# ----------------------------------------------------------------------------- Optimus+Oracle
@dataclass
class OptimusJob:
    """An active job as Optimus sees it: its application, fixed total batch and current epoch."""

    app: PolluxApp
    target_batch_size: int
    epoch: int
    max_replicas: int  # target batch ÷ smallest per-GPU batch (1 for ncf)


def packed_layout(num_replicas: int, per_node: int = 4) -> tuple[int, ...]:
    """Four GPUs per node, the remainder on the last (the authors' simulator assumes 4-GPU nodes here).

    >>> packed_layout(10), packed_layout(3)
    ((4, 4, 2), (3,))
    """
    full, rest = divmod(num_replicas, per_node)
    return (per_node,) * full + ((rest,) if rest else ())


def optimus_step_time(job: OptimusJob, num_replicas: int) -> float:
    """Seconds per optimiser step on ``num_replicas`` GPUs at the job's fixed batch (accumulating at least
    once on one GPU, as Optimus's predictor assumes)."""
    app = job.app
    local = math.ceil(job.target_batch_size / num_replicas - 1e-8)
    accum = math.ceil(local / app.max_local_bsz - 1e-8) - 1
    if num_replicas == 1:
        accum = max(1, accum)
    atomic = math.ceil(local / (accum + 1) - 1e-8)
    atomic = min(atomic, int(app.max_batch_size / (num_replicas * (accum + 1))))
    step, sync = app.step_times(packed_layout(num_replicas), atomic)
    return step + (step - sync) * accum


def remaining_iterations(job: OptimusJob) -> float:
    """The oracle: iterations left at the job's batch until its last epoch ends (1 once past it)."""
    app = job.app
    last = app.max_epochs - 1
    if last <= job.epoch:
        return 1.0
    return app.iterations(job.target_batch_size, last) - app.iterations(job.target_batch_size, job.epoch)


def optimus_allocate(jobs: Mapping[str, OptimusJob], node_gpus: Mapping[int, int], previous: Allocations,
                     step_time: Callable[[OptimusJob, int], float] = optimus_step_time) -> Allocations:
    """New allocations (see the module's docstring); ``jobs`` in submission order."""
    allocations = {k: v for k, v in previous.items() if k in jobs}
    remaining = {key: remaining_iterations(job) for key, job in jobs.items()}
    gpus = sum(node_gpus.values())
    replicas: dict[str, int] = {}
    gain: dict[str, float] = {}

    def marginal(key: str) -> float:
        job = jobs[key]
        if replicas[key] + 1 > job.max_replicas or gpus < 1:
            return 0.0
        return (step_time(job, replicas[key]) - step_time(job, replicas[key] + 1)) * remaining[key]

    for key in jobs:  # (the authors sort by a minimum of one GPU each: a stable sort, submission order)
        if gpus < 1:
            replicas[key], gain[key] = 0, 0.0
            continue
        replicas[key] = 1
        gpus -= 1
        gain[key] = marginal(key)
    while gpus > 0 and gain and max(gain.values()) > 0:
        key = max(gain, key=lambda k: gain[k])
        replicas[key] += 1
        gain[key] = marginal(key)
        gpus -= 1
    allocations = {k: v for k, v in allocations.items() if len(v) == replicas[k]}
    free = free_gpus(node_gpus, allocations)
    for key in sorted(jobs, key=lambda k: replicas[k]):
        if replicas[key] > 0 and not allocations.get(key):
            allocations[key] = place(replicas[key], free)
    return allocations


# ----------------------------------------------------------------------------- Tiresias
@dataclass
class TiresiasTwoQueue:
    """The two-queue Tiresias of Pollux's simulator; call :meth:`allocate` once per interval."""

    queue_threshold: float = 3600 * 16  # GPU-seconds in the first queue
    queue0: list[str] = field(default_factory=list)
    queue1: list[str] = field(default_factory=list)
    running: dict[str, bool] = field(default_factory=dict)
    last_check: collections.Counter[str] = field(default_factory=collections.Counter)
    executed: collections.Counter[str] = field(default_factory=collections.Counter)

    def allocate(self, now: float, requests: Mapping[str, int], node_gpus: Mapping[int, int],
                 previous: Allocations) -> Allocations:
        """``requests``: each active job's GPU count, in submission order."""
        event_time = int(now)
        self.queue0 = [k for k in self.queue0 if k in requests]
        self.queue1 = [k for k in self.queue1 if k in requests]
        self.running = {k: v for k, v in self.running.items() if k in requests}
        allocations = {k: v for k, v in previous.items() if k in requests}
        for key in requests:
            if key not in self.running:
                self.running[key] = False
                self.queue0.append(key)
        for key, gpus in requests.items():
            elapsed = int(event_time - self.last_check[key])
            self.last_check[key] = event_time
            if self.running[key]:
                self.executed[key] = int(self.executed[key] + elapsed)
                if key in self.queue0 and int(self.executed[key] * gpus) >= self.queue_threshold:
                    self.queue0.remove(key)
                    self.queue1.append(key)
        free_count = sum(node_gpus.values())
        for queue in (self.queue0, self.queue1):
            for key in queue:
                if requests[key] <= free_count:
                    self.running[key] = True
                    free_count -= requests[key]
                else:
                    self.running[key] = False
                    allocations.pop(key, None)
        free = free_gpus(node_gpus, allocations)
        for queue in (self.queue0, self.queue1):
            for key in queue:
                if self.running[key] and not allocations.get(key):
                    allocations[key] = place(requests[key], free)
        return allocations
