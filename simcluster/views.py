"""Read-only views of jobs, queues, nodes, VCs and the cluster: what policies and placements read.

These are typing protocols: at run time a policy gets the engine's own objects (no copy per decision,
which keeps a pass as cheap as the work it does), typed as views so that a type checker flags a write,
and ``lucid-sim check-policy`` (:mod:`simcluster.testing`) catches one at run time.  Iterating a queue
or a VC's running jobs walks a snapshot: starting or preempting jobs meanwhile is safe.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Protocol

from simcluster.job import JobState, TypeSpeeds, Workload


class JobView(Protocol):
    """A job as a policy sees it.  Times are seconds; *work* is seconds of exclusive execution at speed 1."""

    index: int  # position in the trace: the final tie-break of every order
    job_id: str
    vc: str  # its tenant's VC
    queue_vc: str  # the partition whose queue and GPUs it uses now (its VC, or a policy's own partition)
    user: str
    gpu_num: int
    gpu_milli: int  # thousandths of each of its GPUs (1000: whole GPUs)
    submit_time: float
    duration: float  # its work: what an oracle knows (use an estimator for what a scheduler knows)
    workload: Workload | None
    memory: float  # MiB per GPU
    speeds: TypeSpeeds | None  # per GPU type; None: 1× everywhere
    state: JobState
    work_left: float
    overhead_left: float  # restore seconds owed before progress resumes
    speed: float  # progress per second now
    sharing: bool  # shares a GPU now
    start_time: float | None  # first start
    pending_since: float  # when it last started waiting
    run_started_at: float  # when the current run (or speed segment) began
    busy_time: float  # seconds it has held GPUs, runs that ended only
    queue_time: float
    preemptions: int
    restarts: int
    allocation: tuple[tuple[Any, list[int]], ...]  # (node, GPU indices) while it runs

    @property
    def progress(self) -> float: ...
    def remaining_at(self, now: float) -> float:
        """Seconds of exclusive execution (overhead included) still needed at ``now``."""
        ...
    def speed_on(self, gpu_type: str) -> float: ...
    def time_left(self) -> float: ...
    def finish_time(self) -> float: ...


class QueueView(Protocol):
    """A VC's waiting jobs in the policy's order (:meth:`~simcluster.policies.base.Policy.pending_key`)."""

    def first(self) -> Any:
        """The head (None if empty)."""
        ...
    def first_entry(self) -> tuple[Any, int]:
        """The head's (key, trace index) as the queue holds it; the queue must not be empty."""
        ...
    def none_fits(self, gpus: float) -> bool:
        """Whether no waiting job asks for at most ``gpus`` GPUs."""
        ...
    def runs_by_size(self, max_gpus: float) -> dict[int, tuple[list[Any], list[Any], int]]:
        """Per GPU count, its jobs in order, read in place (see :meth:`simcluster.queue.JobQueue.runs_by_size`)."""
        ...
    def __iter__(self) -> Iterator[Any]: ...
    def __len__(self) -> int: ...
    def __bool__(self) -> bool: ...
    def __contains__(self, job: object) -> bool: ...


class NodeView(Protocol):
    """A machine of one GPU type."""

    name: str
    index: int  # position in its VC (placement tie-break order)
    gpu_count: int
    gpu_type: str
    gpu_memory: float
    up: bool
    used: int  # GPUs holding at least one job
    shared: int  # GPUs holding two or more
    free_ids: list[int]
    jobs: Mapping[Any, list[int]]
    milli: list[int] | None  # thousandths in use per GPU, in runs with GPU fractions

    @property
    def free_gpus(self) -> int: ...
    @property
    def gpus(self) -> list[list[Any]]: ...
    def partners(self, job: Any) -> set[Any]: ...
    def memory_used(self, gpu: int) -> float: ...


class PoolView(Protocol):
    """Nodes (of one GPU type, or all of a VC's) with their free GPUs: what a placement searches."""

    gpu_type: str
    nodes: list[Any]
    gpus_per_node: int
    total_gpus: int
    free_gpus: int
    buckets: list[int]  # buckets[k]: bit i set <=> nodes[i] is up with exactly k free GPUs

    def nodes_with_free(self, k: int) -> Iterator[Any]: ...


class VCView(PoolView, Protocol):
    """A tenant's share of the cluster: its nodes and its jobs."""

    name: str
    pending: QueueView
    running: Any  # its running jobs, in start order (iterate, len, ``in``)
    used_gpus: int
    shared_gpus: int
    gpu_types: tuple[str, ...]
    pools: Mapping[str, Any]  # GPU type → its pool (the VC itself when it has one type)
    fastest_first: tuple[str, ...]
    to_arrive: int  # its jobs not submitted yet


class ClusterView(Protocol):
    """Every VC (and the policy's own partitions) by name."""

    vcs: Mapping[str, Any]
    total_gpus: int
    gpus_per_node: int
