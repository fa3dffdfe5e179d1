"""A training job and the one method that moves it between states.

A job's *work* is measured in seconds of exclusive execution (the trace's
``duration``).  While it runs it first pays any pending restore overhead
(after a preemption it must reload its checkpoint) and then makes progress.
Keeping the two apart is what lets the simulator be exact: a job's busy time
is always its duration plus the overheads it was charged.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from simcluster.cluster import Node


@dataclass(frozen=True, slots=True)
class Workload:
    """What the job trains; keys into profiled throughput and colocation tables."""

    model: str
    dataset: str
    batchsize: int
    amp: int


UNKNOWN_WORKLOAD = Workload("unknown", "unknown", 1, 0)  # what a job of a trace without workload columns runs


class JobState(enum.Enum):
    PENDING = "pending"
    RUNNING = "running"
    FINISHED = "finished"


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
    submit_time: int
    duration: int
    user: str = ""
    workload: Workload | None = None
    memory: float = 0.0  # GPU memory (MiB) on each of its GPUs; what limits sharing
    queue_vc: str = ""  # the partition whose queue and GPUs it uses now: its VC, or a policy's own (lucid's profiler)

    state: JobState = JobState.PENDING
    work_left: float = field(init=False)  # seconds of progress still to make
    overhead_left: float = 0.0  # restore time to pay before progress resumes
    speed: float = 1.0  # progress per second now (below 1 while sharing GPUs)
    shared_seconds: float = 0.0  # time run while sharing a GPU
    sharing: bool = False
    progress_at_checkpoint: float = 0.0
    start_time: float | None = None  # first start
    end_time: float | None = None
    queue_time: float = 0.0  # all time spent waiting (first wait and after preemptions)
    busy_time: float = 0.0  # all time spent holding GPUs
    preemptions: int = 0
    restarts: int = 0  # node failures survived
    overhead_total: float = 0.0
    lost_work: float = 0.0  # progress thrown away by failures
    pending_since: float = field(init=False)
    run_started_at: float = 0.0
    allocation: tuple[tuple[Node, list[int]], ...] = ()  # (node, GPU indices) while running
    process: Any = None  # the SimPy process living this job's life
    started: Any = None  # SimPy event: succeeds when the scheduler gives the job GPUs

    def __post_init__(self) -> None:
        self.work_left = float(self.duration)
        self.queue_vc = self.queue_vc or self.vc
        self.pending_since = float(self.submit_time)

    # --- derived ---------------------------------------------------------
    @property
    def progress(self) -> float:
        return self.duration - self.work_left

    def remaining_at(self, now: float) -> float:
        """Seconds of exclusive execution (overhead included) still needed at ``now``."""
        left = self.overhead_left + self.work_left
        if self.state is JobState.RUNNING:
            ran = now - self.run_started_at
            paid = min(ran, self.overhead_left)
            left -= paid + (ran - paid) * self.speed
        return left

    def time_left(self) -> float:
        """Wall-clock seconds until the current run ends at the current speed (from its segment start)."""
        return self.overhead_left + self.work_left / self.speed

    def finish_time(self) -> float:
        """When the current run ends if nothing interrupts it."""
        return self.run_started_at + self.time_left()

    def change_speed(self, now: float, speed: float, sharing: bool) -> None:
        """Close the current run segment at the old speed and go on at ``speed``."""
        assert self.state is JobState.RUNNING
        self._account_run(now)
        self.run_started_at = now
        self.speed, self.sharing = speed, sharing

    # --- transitions -----------------------------------------------------
    def start(self, now: float) -> None:
        assert self.state is JobState.PENDING, self
        self.state = JobState.RUNNING
        self.queue_time += now - self.pending_since
        if self.start_time is None:
            self.start_time = now
        self.run_started_at = now

    def stop(self, now: float, overhead: float = 0.0, lose_since_checkpoint: float | None = None) -> None:
        """Leave the GPUs: account the run, then charge what the stop costs.

        ``overhead`` is restore time added for a checkpointed preemption.
        ``lose_since_checkpoint`` (a checkpoint interval, 0 = none) makes the
        job lose the progress made since its last checkpoint, as on a failure.
        """
        assert self.state is JobState.RUNNING, self
        self._account_run(now)
        if lose_since_checkpoint is None:
            self.progress_at_checkpoint = self.progress  # a preemption checkpoints first
        else:
            periodic = 0.0
            if lose_since_checkpoint > 0:
                periodic = (self.progress // lose_since_checkpoint) * lose_since_checkpoint
            kept = max(self.progress_at_checkpoint, periodic)
            self.lost_work += self.progress - kept
            self.work_left = self.duration - kept
        self.overhead_left += overhead
        self.overhead_total += overhead
        self.state = JobState.PENDING
        self.pending_since = now

    def finish(self, now: float) -> None:
        assert self.state is JobState.RUNNING, self
        self._account_run(now)
        self.state = JobState.FINISHED
        self.end_time = now

    def _account_run(self, now: float) -> None:
        ran = now - self.run_started_at
        self.busy_time += ran
        if self.sharing:
            self.shared_seconds += ran
        paid = min(ran, self.overhead_left)
        self.overhead_left -= paid
        self.work_left = max(0.0, self.work_left - (ran - paid) * self.speed)

    # --- results ---------------------------------------------------------
    @property
    def jct(self) -> float:
        assert self.end_time is not None
        return self.end_time - self.submit_time
