"""What a scheduling policy is.

A policy orders jobs and says which to start or preempt; it never picks GPUs
(that is the placement's job) and never records metrics (the observer's).
It acts through a :class:`SchedulingContext` that the engine hands it for
one VC at one instant.
"""

from __future__ import annotations

from typing import Any, ClassVar, Protocol

from simcluster.cluster import Cluster, VirtualCluster
from simcluster.config import SimConfig
from simcluster.job import Job
from simcluster.queue import submit_order
from simcluster.registry import Registry


class SchedulingContext(Protocol):
    @property
    def now(self) -> float: ...

    @property
    def config(self) -> SimConfig: ...

    def try_start(self, job: Job) -> bool:
        """Place and start a pending job; False if placement found no GPUs."""
        ...

    def preempt(self, job: Job, overhead: float | None = None, moving: bool = False) -> None:
        """Checkpoint a running job, free its GPUs and queue it again.  ``overhead``: restore seconds it
        owes (default: the configured preemption overhead); ``moving``: the caller restarts it elsewhere
        at once (counted as a migration, not a preemption)."""
        ...

    def wake_at(self, when: float) -> None:
        """Run the policy on this VC again at ``when`` (merged with any other wake-up then)."""
        ...

    def start_on(self, job: Job, plan: Any) -> None:
        """Start a pending job on exactly these GPUs (a sharing policy's own placement)."""
        ...

    def move(self, job: Job, partition: str) -> None:
        """Send a job (waiting or running; it keeps its progress) to another partition's queue."""
        ...

    @property
    def colocation(self) -> Any:
        """The colocation model (slowdowns, memory) when the policy shares GPUs."""
        ...

    @property
    def throughputs(self) -> Any:
        """The throughput table the jobs' per-type speeds come from (pairs included), or None."""
        ...

    def pair_speeds(self, a: Job, b: Job) -> tuple[float, float]:
        """Predicted speeds (shared ÷ alone) of two jobs sharing GPUs of this VC."""
        ...


class Policy:
    """Base class: FIFO queue order and no timers; subclasses override."""

    name: str = "?"
    preemptive: bool = False
    shares_gpus: bool = False  # True: the engine loads a colocation model and times shared GPUs
    own_placement: str | None = None  # the policy places jobs itself (named so in summaries); None: --placement
    # the policy's own settings: a frozen dataclass whose fields are made with ``sdk.setting`` (default, help)
    Settings: ClassVar[type | None] = None

    def __init__(self, config: SimConfig | None = None) -> None:
        self.config = config or SimConfig()
        self.settings: Any = self.Settings() if self.Settings is not None else None

    def partitions(self) -> dict[str, int]:
        """Partitions of the policy's own (name → nodes), e.g. lucid's profiler."""
        return {}

    def attach(self, cluster: Cluster) -> None:
        """Hook: the run's cluster, once built and before the first arrival (a policy with partitions of its
        own may keep what it reads of them, e.g. how many jobs wait for lucid's profiler)."""

    def borrowed_nodes(self) -> dict[str, int]:
        """Nodes the policy's partitions take out of the trace's VCs (VC → nodes); the others come beside them."""
        return {}

    def pending_key(self, job: Job) -> Any:
        """The queue order; must not change while the job waits."""
        return submit_order(job)

    def schedule(self, vc: VirtualCluster, ctx: SchedulingContext) -> None:
        raise NotImplementedError

    def on_submit(self, job: Job, now: float) -> None:
        """Hook called when a job arrives, before it is queued (e.g. to estimate its duration)."""

    def on_finish(self, job: Job, now: float) -> None:
        """Hook for policies that learn from finished jobs."""

    def on_run_start(self, job: Job, vc: VirtualCluster) -> None:
        """Hook: ``job`` has just got GPUs of ``vc`` and runs (called only where a policy defines it, so that a
        policy may keep its running jobs in its own order instead of sorting them at every pass)."""

    def on_run_stop(self, job: Job, vc: VirtualCluster) -> None:
        """Hook: ``job`` has left its GPUs of ``vc`` (finished, preempted, evicted or moved); called after the
        job's own accounting of the run, with :meth:`on_run_start`'s figures gone stale."""

    def report(self) -> dict[str, Any]:
        """Figures the policy adds to ``summary.json`` (e.g. estimator quality)."""
        return {}


POLICIES: Registry[type[Policy]] = Registry("policy")


def start_in_order_until_blocked(vc: VirtualCluster, ctx: SchedulingContext) -> None:
    """Start queued jobs in queue order; the first that cannot be placed blocks the rest."""
    first, try_start = vc.pending.first, ctx.try_start
    while (job := first()) is not None and try_start(job):
        pass
