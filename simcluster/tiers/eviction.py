"""Evictions: a waiting job of a higher tier takes preemptible jobs' GPUs (docs/tiers.md, "Priorities and evictions").

The rule, for every policy that orders its queue by priority first (``Policy.priority_first``) and places whole
GPUs through the run's placement: after the policy's pass on a VC, the head of its queue (the highest tier waiting
there) may evict running jobs it outranks when that frees enough GPUs for it.  A job outranks a victim that is
preemptible (with ``--evict lower-priority``: any job) and of lower priority, or of the same priority when the job
itself is not preemptible.  Victims go in the order ``--victims`` names until the head starts:

* ``least-work-lost``: fewest GPUs × seconds of work since their last checkpoint (Alibaba's rule, OSDI'26);
* ``newest``: the most recently started first (Kueue's order among equals);
* ``lowest-priority``: the lowest priority first, the newest among equals;
* ``random``: in an order drawn from the run's seed (the baseline Alibaba compares with).

An evicted job loses its work since its last checkpoint (``--checkpoint-interval``; 0: since it last started) and
waits again in its queue, behind the work that outranks it; the head that evicted owes ``--eviction-cost`` seconds
without progress first (the victims' time to leave: Alibaba measured 13 s on average).  Only the head evicts: the
jobs behind it wait, as behind a blocked head of a queue.  Each eviction starts a job that outranks every one of its
victims, so a pass's evictions end.

>>> from simcluster.job import Job
>>> spot = Job(index=0, job_id="spot", vc="v", gpu_num=8, submit_time=0, duration=100, preemptible=True)
>>> prod = Job(index=1, job_id="prod", vc="v", gpu_num=8, submit_time=5, duration=100, priority=0)
>>> outranks(prod, spot, any_lower=False), outranks(spot, prod, any_lower=False), tier_rank(prod) < tier_rank(spot)
(True, False, True)
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from simcluster.job import Job, JobState
from simcluster.metrics.observer import Observer

if TYPE_CHECKING:
    from simcluster.cluster import Node, VirtualCluster
    from simcluster.engine.context import VcContext

VICTIM_RULES = ("least-work-lost", "newest", "lowest-priority", "random")
EVICT_MODES = ("preemptible", "lower-priority", "off")
Pool = tuple[int, bool]  # (priority, preemptible): the running jobs of one tier


def tier_rank(job: Job) -> tuple[int, bool]:
    """A waiting job's tier, smallest first: higher priority first, and among equals the non-preemptible first."""
    return (-job.priority, job.preemptible)


def outranks(job: Job, victim: Job, any_lower: bool) -> bool:
    """Whether ``job`` may evict ``victim``: a lower tier that is preemptible (``any_lower``: of any kind)."""
    return _outranks_pool(job, (victim.priority, victim.preemptible), any_lower)


def _outranks_pool(job: Job, pool: Pool, any_lower: bool) -> bool:
    priority, preemptible = pool
    if not (preemptible or any_lower):
        return False
    if job.priority != priority:
        return job.priority > priority
    return preemptible and not job.preemptible


class Evictions(Observer):
    """The evictions of one simulation: the evictable running jobs of each VC by tier (kept by the run's hooks, so
    a pass reads what it may take, never every running job), the step the engine runs after each pass, and the
    figures.

    ``rule``: one of :data:`VICTIM_RULES`; ``cost``: seconds the evicting job owes; ``checkpoint``: the progress
    between periodic checkpoints (0: none), for ``least-work-lost``; ``any_lower``: every job is evictable by a
    higher priority, not only preemptible ones.
    """

    def __init__(self, rule: str, cost: float, checkpoint: float, any_lower: bool, seed: int) -> None:
        if rule not in VICTIM_RULES:
            raise ValueError(f"--victims {rule!r}: one of {', '.join(VICTIM_RULES)}")
        self.rule, self.cost, self.checkpoint, self.any_lower = rule, cost, checkpoint, any_lower
        self._rng = random.Random(seed)
        self._pools: dict[str, dict[Pool, dict[Job, float]]] = {}  # VC → tier → its running jobs → started at
        self._gpus: dict[str, dict[Pool, float]] = {}  # VC → tier → the GPUs its running jobs hold
        self.evictions = 0
        self.evicted: set[str] = set()  # ids of the jobs evicted at least once
        self.gpu_seconds_lost = 0.0  # GPUs × seconds of work thrown away
        self.claimants = 0  # evictions' heads that started
        self.futile = 0  # evictions that freed GPUs where the placement still found no room for the head
        self._epoch = 0  # GPUs freed for good (a finish) or a node's state changed: a stuck head may start again
        self._stuck: dict[str, tuple[Job, int]] = {}  # VC → the head no eviction could start, and the epoch then

    # --- the running jobs by tier, kept by the run's hooks --------------------------------------------------------
    def on_start(self, job: Job, now: float) -> None:
        if job.preemptible or self.any_lower:
            pool = (job.priority, job.preemptible)
            self._pools.setdefault(job.queue_vc, {}).setdefault(pool, {})[job] = now
            gpus = self._gpus.setdefault(job.queue_vc, {})
            gpus[pool] = gpus.get(pool, 0.0) + job.gpus

    def _left(self, job: Job, now: float) -> None:
        pools = self._pools.get(job.queue_vc)
        pool = (job.priority, job.preemptible)
        if pools is not None and pools.get(pool, {}).pop(job, None) is not None:
            self._gpus[job.queue_vc][pool] -= job.gpus

    on_preempt = _left

    def on_finish(self, job: Job, now: float) -> None:
        self._left(job, now)
        self._epoch += 1

    def on_node_up(self, node_name: str, now: float) -> None:
        self._epoch += 1

    on_node_down = on_node_up

    def on_restart(self, job: Job, now: float) -> None:  # a failure: back in its queue unless a spare took over
        if job.state is not JobState.RUNNING:
            self._left(job, now)

    # --- the step after each pass ------------------------------------------------------------------------------------
    def __call__(self, vc: VirtualCluster, ctx: VcContext) -> None:
        """While the head of ``vc``'s queue can start by evicting jobs it outranks, evict them and start it."""
        gpus = self._gpus.get(vc.name)
        if not gpus:
            return
        while (head := vc.pending.first()) is not None:
            if self._stuck.get(vc.name) == (head, self._epoch):
                return  # (nothing freed for good since no eviction could start it: the same answer)
            pools = [pool for pool, held in gpus.items() if held > 0 and _outranks_pool(head, pool, self.any_lower)]
            if not pools or vc.free_gpus + sum(gpus[pool] for pool in pools) < head.gpus:
                return
            candidates = [(job, since) for pool in pools for job, since in self._pools[vc.name][pool].items()]
            victims = self._victims_for(head, candidates, vc, ctx.now, ctx.sim.placement.may_use)
            if victims is None or not self._evict_for(head, victims, ctx):
                self._stuck[vc.name] = (head, self._epoch)
                return

    def _evict_for(self, head: Job, victims: list[Job], ctx: VcContext) -> bool:
        """Evict ``victims`` and start ``head``; whether it started."""
        now = ctx.now
        for victim in victims:
            self._evict(victim, head, ctx, now)
        if not ctx.try_start(head):
            self.futile += 1  # (the victims gone, the placement still finds no room: the figures say so)
            return False
        self.claimants += 1
        if self.cost:
            ctx.stall(head, self.cost)
        return True

    def _evict(self, victim: Job, head: Job, ctx: VcContext, now: float) -> None:
        lost_before = victim.lost_work
        ctx.evict(victim, head)
        self.evictions += 1
        self.evicted.add(victim.job_id)
        self.gpu_seconds_lost += (victim.lost_work - lost_before) * victim.gpus

    def _victims_for(self, head: Job, candidates: list[tuple[Job, float]], vc: VirtualCluster,
                     now: float, may_use: Callable[[Job, Node], bool] | None = None) -> list[Job] | None:
        """The victims to evict for ``head``, chosen by node as a placement that keeps jobs together needs the room:
        for a job of one node's GPUs or fewer, the node where the rule's cheapest victims free enough; for a larger
        one, the cheapest nodes that can be freed whole.  Only nodes ``head`` may use count (``may_use``: the
        placement's, where it keeps some jobs off some nodes: spot nodes).  None where no choice gives it room."""
        keys = {job: self._key(job, since, now) for job, since in sorted(candidates, key=lambda c: c[0].index)}
        by_key = sorted(keys, key=lambda job: (keys[job], job.index))
        size = vc.gpus_per_node
        if head.gpu_milli < 1000 or not size:  # a fraction of a GPU: the rule's order until enough are free
            free, chosen = vc.free_gpus, []
            for job in by_key:
                if free >= head.gpus:
                    break
                chosen.append(job)
                free += job.gpus
            return chosen if free >= head.gpus else None
        on_node: dict[Node, list[Job]] = {}
        for job in by_key:
            for node, ids in job.allocation:
                if node.up and (may_use is None or may_use(head, node)):
                    on_node.setdefault(node, []).append(job)
        if head.gpu_num <= size:
            best: tuple[Any, int, list[Job]] | None = None
            for node, jobs in on_node.items():
                free, chosen = node.free_gpus, []
                for job in jobs:
                    if free >= head.gpu_num:
                        break
                    chosen.append(job)
                    free += _gpus_on(job, node)
                if free >= head.gpu_num and (best is None or (self._cost(chosen, keys), node.slot) < best[:2]):
                    best = (self._cost(chosen, keys), node.slot, chosen)
            return best[2] if best is not None else None
        idle = (vc.buckets[size].bit_count() if may_use is None else
                sum(may_use(head, node) for node in vc.nodes_with_free(size)))
        needed = -(-head.gpu_num // size) - idle  # whole nodes still to free
        whole = sorted((self._cost(jobs, keys), node.slot, jobs) for node, jobs in on_node.items()
                       if node.gpu_count == size and node.free_gpus + sum(_gpus_on(j, node) for j in jobs) == size)
        if needed <= 0 or len(whole) < needed:
            return None
        return list(dict.fromkeys(job for _, _, jobs in whole[:needed] for job in jobs))

    def _key(self, job: Job, since: float, now: float) -> Any:
        """What the rule evicts first, smallest first: work lost (GPU-seconds), time run (newest first), priority
        then time run, or a number drawn from the run's seed."""
        if self.rule == "least-work-lost":
            return self.work_lost(job, now) * job.gpus
        if self.rule == "newest":
            return now - since
        if self.rule == "lowest-priority":
            return (job.priority, now - since)
        return self._rng.random()

    def _cost(self, victims: list[Job], keys: dict[Job, Any]) -> Any:
        """A node's victims' cost: the work they lose together (least-work-lost), else their worst key."""
        if self.rule == "least-work-lost":
            return sum(keys[job] for job in victims)
        return max(keys[job] for job in victims)

    def work_lost(self, job: Job, now: float) -> float:
        """Seconds of work ``job`` would lose if evicted at ``now``: its progress since its last checkpoint.

        >>> job = Job(index=0, job_id="a", vc="v", gpu_num=2, submit_time=0, duration=1000)
        >>> job.start(0.0)
        >>> Evictions("least-work-lost", 0.0, 300.0, False, 1).work_lost(job, 700.0)
        100.0
        """
        progress = job.duration - job.work_left_at(now)
        periodic = (progress // self.checkpoint) * self.checkpoint if self.checkpoint > 0 else 0.0
        return progress - max(job.progress_at_checkpoint, periodic)

    def figures(self) -> dict[str, Any]:
        """The run's evictions: how many, of how many jobs, the GPU-hours of work they threw away, the rule."""
        return {"evictions": self.evictions, "jobs_evicted": len(self.evicted),
                "gpu_hours_lost": round(self.gpu_seconds_lost / 3600.0, 4), "victims": self.rule,
                "eviction_cost_s": self.cost, "evicting_starts": self.claimants, "futile_evictions": self.futile}



def _gpus_on(job: Job, node: Node) -> int:
    """How many of ``node``'s GPUs ``job`` holds."""
    return next((len(ids) for held, ids in job.allocation if held is node), 0)
