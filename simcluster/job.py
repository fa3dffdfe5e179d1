"""A training job and the one method that moves it between states.

A job's *work* is measured in seconds of exclusive execution (the trace's
``duration``).  While it runs it first pays any pending restore overhead
(after a preemption it must reload its checkpoint) and then makes progress.
Keeping the two apart is what lets the simulator be exact: a job's busy time
is always its duration plus the overheads it was charged.

On a cluster of several GPU types a job's work is counted at its fastest type (speed 1); its
:class:`TypeSpeeds` say how fast it goes on each type (a Gavel trace: throughput there ÷ the best
throughput).  Jobs of traces without per-type speeds run at 1× on every GPU.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from simcluster.cluster import Node
    from simcluster.elastic.state import ElasticState
    from simcluster.topology.request import TopologyRequest


@dataclass(frozen=True, slots=True)
class Workload:
    """What the job trains; keys into profiled throughput and colocation tables."""

    model: str
    dataset: str
    batchsize: int
    amp: int


UNKNOWN_WORKLOAD = Workload("unknown", "unknown", 1, 0)  # what a job of a trace without workload columns runs


@dataclass(frozen=True, slots=True)
class TypeSpeeds:
    """A job's speed on each GPU type relative to its fastest (1.0); a type not listed: 0, it cannot run there.

    ``rate``: its iterations per second at speed 1, so that seconds of work × rate = iterations;
    ``key``: its row in the throughput table (job type, batch size, scale factor), for pair lookups.
    Jobs of one job type share one object.

    >>> TypeSpeeds({"v100": 1.0, "k80": 0.25}, rate=8.0).on("k80"), TypeSpeeds({"v100": 1.0}).on("a100")
    (0.25, 0.0)
    """

    speeds: Mapping[str, float]
    rate: float = 1.0
    key: tuple[str, int, int] | None = None

    def on(self, gpu_type: str) -> float:
        return self.speeds.get(gpu_type, 0.0)


class JobState(enum.Enum):
    PENDING = "pending"
    RUNNING = "running"
    FINISHED = "finished"


# The states by module name: on Python 3.11 ``JobState.RUNNING`` costs about 10× a global's lookup, and a job's
# state is read at every start, stop and finish (``from simcluster.job import RUNNING`` in hot paths)
PENDING, RUNNING, FINISHED = JobState.PENDING, JobState.RUNNING, JobState.FINISHED


@dataclass(slots=True, eq=False)
class Job:
    """One job of a trace plus its life in the simulation.

    >>> job = Job(index=0, job_id="j1", vc="vc1", gpu_num=2, submit_time=10, duration=100)
    >>> job.start(now=30)
    >>> job.stop(now=70, overhead=40)      # preempted: 40 s done, 40 s restore owed
    >>> job.remaining_at(70)
    100.0
    >>> job.start(now=100); job.finish_time()
    200.0
    """

    index: int  # position in the trace (ties in submit time keep file order)
    job_id: str
    vc: str
    gpu_num: int
    submit_time: float  # seconds (whole seconds in job logs)
    duration: float  # seconds of work at speed 1 (whole seconds in job logs)
    user: str = ""
    workload: Workload | None = None
    memory: float = 0.0  # GPU memory (MiB) on each of its GPUs; what limits sharing
    queue_vc: str = ""  # the partition whose queue and GPUs it uses now: its VC, or a policy's own (lucid's profiler)
    speeds: TypeSpeeds | None = None  # per GPU type; None: 1× on every GPU
    gpu_milli: int = 1000  # thousandths of each of its GPUs it takes (openb pods may take less and share by fraction)
    job_type: str = ""  # Gavel's job type, e.g. "ResNet-50 (batch size 64)"
    total_steps: float = 0.0  # iterations, for traces that count them (Gavel)
    priority_weight: float = 1.0  # Gavel's priority weight
    deadline: float | None = None  # when it should be done (same clock as submit_time); None: best-effort
    priority: int = 0  # its tier: higher first (a trace's priority, or its priority class's value)
    preemptible: bool = False  # it may be evicted for work of its tier or above (spot)
    cluster_queue: str = ""  # the Kueue ClusterQueue its LocalQueue sends it to (--kueue); "" without

    # its life in the simulation (not arguments of Job(...): __init__ starts each at its default)
    state: JobState = field(default=PENDING, init=False)
    work_left: float = field(init=False)  # seconds of progress still to make
    overhead_left: float = field(default=0.0, init=False)  # restore time to pay before progress resumes
    speed: float = field(default=1.0, init=False)  # progress per second now (below 1 while sharing GPUs)
    shared_seconds: float = field(default=0.0, init=False)  # time run while sharing a GPU
    sharing: bool = field(default=False, init=False)
    progress_at_checkpoint: float = field(default=0.0, init=False)
    start_time: float | None = field(default=None, init=False)  # first start
    end_time: float | None = field(default=None, init=False)
    queue_time: float = field(default=0.0, init=False)  # all time spent waiting (first wait and after preemptions)
    busy_time: float = field(default=0.0, init=False)  # all time spent holding GPUs
    preemptions: int = field(default=0, init=False)
    restarts: int = field(default=0, init=False)  # node failures survived
    overhead_total: float = field(default=0.0, init=False)
    lost_work: float = field(default=0.0, init=False)  # progress thrown away by failures
    migrations: int = field(default=0, init=False)  # moves to other GPUs at one instant (a round policy's new type)
    evictions: int = field(default=0, init=False)  # stopped for work of a higher tier, its work since a checkpoint lost
    pending_since: float = field(init=False)
    run_started_at: float = field(default=0.0, init=False)
    allocation: tuple[tuple[Node, list[int]], ...] = field(default=(), init=False)  # (node, GPU indices) while running
    # the SimPy event due at the end of its current run (engine/life.py); None while it waits
    run_end: Any = field(default=None, init=False)
    # an elastic job's scaling model, batch and epoch (simcluster.elastic.state); None: a fixed-size job
    elastic: ElasticState | None = field(default=None, init=False)
    # where its pods must or should lie in the cluster's topology (simcluster.topology.request); None: anywhere
    topology: TopologyRequest | None = field(default=None, init=False)

    def __init__(self, index: int, job_id: str, vc: str, gpu_num: int, submit_time: float, duration: float,
                 user: str = "", workload: Workload | None = None, memory: float = 0.0, queue_vc: str = "",
                 speeds: TypeSpeeds | None = None, gpu_milli: int = 1000, job_type: str = "", total_steps: float = 0.0,
                 priority_weight: float = 1.0, deadline: float | None = None, priority: int = 0,
                 preemptible: bool = False, cluster_queue: str = "") -> None:
        # (written out rather than generated: the generated one takes every field as an argument and calls
        # __post_init__, ~15 % more per job on a million; test_job checks the life fields' defaults here)
        self.index, self.job_id, self.vc, self.gpu_num = index, job_id, vc, gpu_num
        self.submit_time, self.duration, self.user, self.workload = submit_time, duration, user, workload
        self.memory, self.queue_vc, self.speeds, self.gpu_milli = memory, queue_vc or vc, speeds, gpu_milli
        self.job_type, self.total_steps, self.priority_weight = job_type, total_steps, priority_weight
        self.deadline, self.priority, self.preemptible, self.cluster_queue = deadline, priority, preemptible, cluster_queue
        self.state = PENDING
        self.work_left = float(duration)
        self.overhead_left = 0.0
        self.speed = 1.0
        self.shared_seconds = 0.0
        self.sharing = False
        self.progress_at_checkpoint = 0.0
        self.start_time = None
        self.end_time = None
        self.queue_time = 0.0
        self.busy_time = 0.0
        self.preemptions = 0
        self.restarts = 0
        self.overhead_total = 0.0
        self.lost_work = 0.0
        self.migrations = 0
        self.evictions = 0
        self.pending_since = float(submit_time)
        self.run_started_at = 0.0
        self.allocation = ()
        self.run_end = None
        self.elastic = None
        self.topology = None

    # --- derived ---------------------------------------------------------
    @property
    def progress(self) -> float:
        return self.duration - self.work_left

    @property
    def gpus(self) -> float:
        """GPUs it occupies: its GPU count, times its fraction of each for a fractional job."""
        return self.gpu_num if self.gpu_milli >= 1000 else self.gpu_num * self.gpu_milli / 1000

    def speed_on(self, gpu_type: str) -> float:
        """Its speed alone on a GPU of ``gpu_type``: 0 where it cannot run, 1 on its fastest type."""
        return 1.0 if self.speeds is None else self.speeds.on(gpu_type)

    def remaining_at(self, now: float) -> float:
        """Seconds of exclusive execution (overhead included) still needed at ``now``."""
        overhead = self.overhead_left
        left = overhead + self.work_left
        if self.state is RUNNING:
            ran = now - self.run_started_at
            # min(ran, overhead), without the builtin's call: policies ask this of running jobs at every pass
            paid = overhead if overhead < ran else ran  # noqa: FURB136
            left -= paid + (ran - paid) * self.speed
        return left

    def work_left_at(self, now: float) -> float:
        """Seconds of work (at speed 1, overhead excluded) still to do at ``now``."""
        if self.state is not RUNNING:
            return self.work_left
        ran, overhead = now - self.run_started_at, self.overhead_left
        paid = overhead if overhead < ran else ran  # noqa: FURB136  # (min(ran, overhead), as in remaining_at)
        return self.work_left - (ran - paid) * self.speed

    def time_left(self) -> float:
        """Wall-clock seconds until the current run ends at the current speed (from its segment start)."""
        return self.overhead_left + self.work_left / self.speed

    def finish_time(self) -> float:
        """When the current run ends if nothing interrupts it."""
        return self.run_started_at + self.time_left()

    def change_speed(self, now: float, speed: float, sharing: bool) -> None:
        """Close the current run segment at the old speed and go on at ``speed``."""
        assert self.state is RUNNING
        self._account_run(now)
        self.run_started_at = now
        self.speed, self.sharing = speed, sharing

    # --- transitions -----------------------------------------------------
    def start(self, now: float) -> None:
        assert self.state is PENDING, self
        self.state = RUNNING
        self.queue_time += now - self.pending_since
        if self.start_time is None:
            self.start_time = now
        self.run_started_at = now

    def owe(self, seconds: float) -> None:
        """``seconds`` without progress, paid first thing when the job next runs (a restore, a stall, an eviction's
        cost), and counted in its overhead."""
        self.overhead_left += seconds
        self.overhead_total += seconds

    def stop(self, now: float, overhead: float = 0.0, lose_since_checkpoint: float | None = None) -> None:
        """Leave the GPUs: account the run, then charge what the stop costs.

        ``overhead`` is restore time added for a checkpointed preemption.
        ``lose_since_checkpoint`` (a checkpoint interval, 0 = none) makes the
        job lose the progress made since its last checkpoint, as on a failure.
        """
        assert self.state is RUNNING, self
        self._account_run(now)
        if lose_since_checkpoint is None:
            self.progress_at_checkpoint = self.duration - self.work_left  # a preemption checkpoints first (its progress)
        else:
            periodic = 0.0
            if lose_since_checkpoint > 0:
                periodic = (self.progress // lose_since_checkpoint) * lose_since_checkpoint
            kept = max(self.progress_at_checkpoint, periodic)
            self.lost_work += self.progress - kept
            self.work_left = self.duration - kept
        self.owe(overhead)
        self.state = PENDING
        self.pending_since = now

    def finish(self, now: float) -> None:
        assert self.state is RUNNING, self
        self._account_run(now)
        self.state = FINISHED
        self.end_time = now

    def _account_run(self, now: float) -> None:
        ran = now - self.run_started_at
        self.busy_time += ran
        if self.sharing:
            self.shared_seconds += ran
        # min(ran, overhead) and max(0.0, left), without the builtins' calls: this runs at every stop and finish
        overhead = self.overhead_left
        paid = overhead if overhead < ran else ran  # noqa: FURB136
        self.overhead_left = overhead - paid
        left = self.work_left - (ran - paid) * self.speed
        self.work_left = left if left > 0.0 else 0.0  # noqa: FURB136

    # --- results ---------------------------------------------------------
    @property
    def jct(self) -> float:
        assert self.end_time is not None
        return self.end_time - self.submit_time


def table_keys(table: Any, a: Job, b: Job) -> tuple[tuple[str, int, int], tuple[str, int, int]] | None:
    """The rows of ``a`` and ``b`` in a throughput table when there is one and both have a row (their
    sharing is then the table's to say), else None (the colocation model's)."""
    if table is None or a.speeds is None or b.speeds is None or not a.speeds.key or not b.speeds.key:
        return None
    return a.speeds.key, b.speeds.key
