"""What a policy may do to one VC at one instant: the engine's side of :class:`~simcluster.policies.SchedulingContext`."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol

from simcluster.cluster import VirtualCluster
from simcluster.colocation.loader import ColocationModel
from simcluster.config import SimConfig
from simcluster.job import Job
from simcluster.placement import Plan

if TYPE_CHECKING:  # pragma: no cover
    from simcluster.engine.simulation import Simulation
    from simcluster.throughputs import ThroughputTable


class PassStep(Protocol):
    """What acts on a VC after each of the policy's passes there (a feature's: the tiers' evictions), through the
    VC's own context (its :meth:`VcContext.evict` included)."""

    def __call__(self, vc: VirtualCluster, ctx: VcContext) -> None: ...


class VcContext:
    """One VC's context; the engine makes one per VC and hands it to every pass there."""

    __slots__ = ("clock", "sim", "try_start", "vc", "wake_at")

    def __init__(self, sim: Simulation, vc: VirtualCluster) -> None:
        self.sim, self.vc, self.clock = sim, vc, sim.clock
        # bound to this VC once, positionally: policies call try_start for every job they start
        self.try_start: Callable[[Job], bool] = partial(sim.try_start_in, vc)
        self.wake_at: Callable[[float], None] = partial(sim.wake_at, vc)

    @property
    def now(self) -> float:
        return self.clock()

    def start_on(self, job: Job, plan: Plan, batch: Any = None, delay: float | None = None) -> None:
        self.sim.start(job, self.vc, plan, batch, delay)

    def resize(self, job: Job, plan: Plan, batch: Any = None, delay: float | None = None) -> None:
        self.sim.resize(job, self.vc, plan, batch, delay)

    def resize_many(self, changes: Mapping[Job, Plan], batches: Mapping[Job, Any] | None = None,
                    delay: float | None = None) -> None:
        batches = batches or {}
        self.sim.resize_many(self.vc, [(job, plan, batches.get(job), delay) for job, plan in changes.items()])

    def decline(self, job: Job) -> None:
        self.sim.decline(job, self.vc)

    @property
    def throughputs(self) -> ThroughputTable | None:
        return self.sim.speed.throughputs

    def pair_speeds(self, a: Job, b: Job) -> tuple[float, float]:
        return self.sim.speed.pair_speeds(a, b, self.vc.gpu_types)

    @property
    def colocation(self) -> ColocationModel:
        assert self.sim.speed.colocation is not None, "only sharing policies ask for the colocation model"
        return self.sim.speed.colocation

    @property
    def config(self) -> SimConfig:
        return self.sim.config

    def preempt(self, job: Job, overhead: float | None = None, moving: bool = False) -> None:
        self.sim.preempt(job, self.vc, overhead, moving)

    def stall(self, job: Job, seconds: float) -> None:
        self.sim.stall(job, self.vc, seconds)

    def evict(self, job: Job, by: Job) -> None:
        """Take running ``job``'s GPUs for waiting ``by`` without a checkpoint (the tiers' evictions: not a
        policy's action, so not in :class:`~simcluster.policies.SchedulingContext`)."""
        self.sim.evict(job, self.vc, by)

    def requeue(self, job: Job) -> None:
        queue = self.vc.pending
        queue.remove(job)
        queue.push(job)

    def reorder(self) -> None:
        self.vc.pending.rekey()

    def move(self, job: Job, partition: str) -> None:
        self.sim.move(job, partition)

    def partition_names(self) -> list[str]:
        return list(self.sim.cluster.vcs)
