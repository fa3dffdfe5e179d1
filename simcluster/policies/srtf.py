from __future__ import annotations

from collections.abc import Iterable
from operator import itemgetter

from simcluster.cluster import VirtualCluster
from simcluster.config import SimConfig
from simcluster.job import Job
from simcluster.policies.base import POLICIES, Policy, SchedulingContext
from simcluster.policies.quota import (
    queue_is_tiered,
    queue_streams,
    walk_changes_nothing,
    walk_quota,
)
from simcluster.policies.running_order import Minus, RunningOrder, TierMinus
from simcluster.policies.sharing import PartnerCost, share_waiting_jobs
from simcluster.tiers.eviction import tier_rank


@POLICIES.register("srtf")
class ShortestRemainingTimeFirst(Policy):
    """Preemptive shortest remaining time first, within the VC's GPU quota.

    At every scheduling event, running and pending jobs are ordered by
    remaining time (ties: pending before running, then trace order) and
    walked while handing each job its GPU count out of the VC's quota; a job
    that does not fit is skipped and the walk goes on.  Running jobs left
    outside the quota are preempted (their remaining time grows by the
    checkpoint overhead); pending jobs inside it start if placement succeeds.
    These are the Helios/Lucid simulators' semantics.

    Where the trace gives tiers (docs/tiers.md) every key is ``(tier, remaining time)``: a higher tier goes first,
    so a waiting job preempts only running jobs of its tier (by remaining time) or of a lower one.
    """

    priority_first = True  # (by tier first where the trace gives tiers, running and waiting jobs alike)
    preemptive = True
    vc_independent = True

    def __init__(self, config: SimConfig | None = None) -> None:
        super().__init__(config)
        # per VC, its running jobs by the end of their run at full speed: the order of their remaining times at
        # any instant, kept by the engine's run hooks instead of being sorted at every pass
        self._orders: dict[str, RunningOrder] = {}
        self._tiered: bool | None = None  # whether the keys are (tier, ...): known at the first pass with a job waiting

    def on_run_start(self, job: Job, vc: VirtualCluster) -> None:
        order = self._orders.get(vc.name)
        if order is None:
            order = self._orders[vc.name] = RunningOrder()
        # (start + overhead) + work, as the remaining time was always summed: (end - now) is then that same float
        end = job.run_started_at + job.overhead_left + job.work_left
        order.add((tier_rank(job), end) if self._tiered else end, job)

    def on_run_stop(self, job: Job, vc: VirtualCluster) -> None:
        self._orders[vc.name].remove(job)

    def pending_key(self, job: Job) -> float:
        return job.remaining_at(0.0)  # constant while pending

    def schedule(self, vc: VirtualCluster, ctx: SchedulingContext) -> None:
        if not vc.pending:
            return  # running jobs fit the quota by construction: nothing can change
        if self._tiered is None:
            self._tiered = queue_is_tiered(vc)
        pending, order = vc.pending, self._orders.get(vc.name) or RunningOrder()
        if len(pending) == 1 and order.gpus + pending.first().gpu_num <= vc.total_gpus:  # type: ignore[union-attr]
            # the one waiting job fits beside every running one: the walk would start it and preempt none
            ctx.try_start(pending.first())  # type: ignore[arg-type]
            return
        now = ctx.now
        if walk_quota(vc, ctx, order, key=TierMinus(now) if self._tiered else Minus(now)):  # (end - now: remaining)
            # the preempted jobs' remaining time grew by the overhead, which may let others in: look again
            # at once, as the artifacts' per-second loop does
            ctx.wake_at(now)


class KeptShares:
    """:func:`~simcluster.policies.quota.gpu_share` per running job, kept until one of its nodes' jobs change.

    A shared job's share sums a fraction per GPU, thousands for a big job, and srtf's sharing walk asks for it at
    every pass that may preempt; it changes only when a job starts or stops beside it, which bumps that node's
    :attr:`~simcluster.cluster.Node.version`.  So each share is kept with its run's allocation, its nodes'
    versions and the sum before each node, and summed again (the same additions in the same order: the same
    float) only from the first node whose version moved.

    >>> from simcluster.cluster import Cluster
    >>> from simcluster.cluster_spec import ClusterSpec
    >>> from simcluster.policies.quota import gpu_share
    >>> first, second = Cluster(ClusterSpec.uniform({"v": 2}, 2), 2).vcs["v"].nodes
    >>> a, b = [Job(index=i, job_id=str(i), vc="v", gpu_num=4 - 3 * i, submit_time=0, duration=9) for i in range(2)]
    >>> a.allocation = ((first, first.attach(a, [0, 1])), (second, second.attach(a, [0, 1]))); a.sharing = True
    >>> shares = KeptShares()
    >>> shares(a)
    4.0
    >>> b.allocation = ((second, second.attach(b, [1])),)
    >>> shares(a), gpu_share(a)
    (3.5, 3.5)
    """

    __slots__ = ("_kept",)

    def __init__(self) -> None:
        # job → (allocation, its nodes' versions, the share summed before each node and after the last)
        self._kept: dict[Job, tuple[object, list[int], list[float]]] = {}

    def __call__(self, job: Job) -> float:
        if not job.sharing:
            return job.gpu_num
        allocation = job.allocation
        versions = [node.version for node, _ in allocation]
        kept = self._kept.get(job)
        if kept is None or kept[0] is not allocation:
            kept = self._kept[job] = (allocation, [-1] * len(versions), [0] * (len(versions) + 1))
        elif kept[1] == versions:
            return kept[2][-1]
        _, seen, sums = kept
        first, count = 0, len(versions)
        while first < count and seen[first] == versions[first]:
            first += 1
        share = sums[first]
        for k in range(first, count):  # (gpu_share's additions, from the first node that changed)
            node, ids = allocation[k]
            gpus = node.gpus
            for i in ids:
                share += 1.0 / len(gpus[i])
            sums[k + 1] = share
        seen[first:] = versions[first:]
        return share

    def keep_only(self, running: Iterable[Job]) -> None:
        """Forget the jobs not in ``running`` (they stopped: their next run has a new allocation anyway)."""
        self._kept = {job: self._kept[job] for job in running if job in self._kept}

    def __len__(self) -> int:
        return len(self._kept)


class SrtfSharing(ShortestRemainingTimeFirst):
    """SRTF's walk for the sharing variants, then the jobs still waiting offered shared GPUs in SRTF order
    (:mod:`simcluster.policies.sharing`), each variant with its rule for a partner (:meth:`partner_cost`).

    A job's speed varies with its partners and a shared GPU counts as a fraction of one for each of its jobs
    (:func:`~simcluster.policies.quota.gpu_share`), so a pass that may preempt walks every running job with its
    remaining time then (not srtf's order of end times: its run hooks are off).  A pass where the running jobs'
    shares and every waiting job's GPUs fit the VC together (the walk would start every waiting job in queue
    order and preempt none) starts them without the walk.
    """

    shares_gpus = True
    vc_independent = False  # one colocation model, fallback counts per run
    on_run_start = Policy.on_run_start
    on_run_stop = Policy.on_run_stop

    def __init__(self, config: SimConfig | None = None) -> None:
        super().__init__(config)
        self._shares = KeptShares()

    def partner_cost(self, ctx: SchedulingContext) -> PartnerCost:
        raise NotImplementedError

    def schedule(self, vc: VirtualCluster, ctx: SchedulingContext) -> None:
        if not vc.pending:
            return
        if self._tiered is None:
            self._tiered = queue_is_tiered(vc)
        if self._every_waiting_job_fits(vc, ctx):
            for job in list(vc.pending):  # (the walk's order, the queue's: every one of them fits its turn)
                ctx.try_start(job)
        else:
            self._walk(vc, ctx)
        if vc.pending:
            share_waiting_jobs(vc, ctx, self.partner_cost(ctx))

    def _every_waiting_job_fits(self, vc: VirtualCluster, ctx: SchedulingContext) -> bool:
        """Whether the running jobs' shares and every waiting job's GPUs fit the VC's GPUs together, where that
        is exact: a GPU holds at most two whole-GPU jobs, so that the jobs on a GPU in use share it whole (each
        with half, or one with all of it) and together hold the VC's GPUs in use.  (Thirds would sum with
        rounding that the walk's own sums need not share.)"""
        if ctx.config.max_jobs_per_gpu > 2 or vc.fractional:
            return False
        room = vc.total_gpus - vc.used_gpus
        for job in vc.pending:
            room -= job.gpu_num
            if room < 0:
                return False
        return True

    def _walk(self, vc: VirtualCluster, ctx: SchedulingContext) -> None:
        now = ctx.now
        if self._tiered:
            running = [((tier_rank(j), j.remaining_at(now)), j) for j in vc.running]
        else:
            running = [(j.remaining_at(now), j) for j in vc.running]
        shares = self._shares
        if len(shares) > 2 * len(running) + 64:
            shares.keep_only(vc.running)
        head = vc.pending.first_entry()[0]
        quota_used: float = 0
        if running and head > max(map(itemgetter(0), running)):
            running = []  # every running job comes first and fits: only what is left is handed out
            quota_used = sum(shares(j) for j in vc.running)
            if walk_changes_nothing(vc, quota_used):
                return  # and no waiting job fits what is left (none at all when nothing is)
        streams = queue_streams(vc, vc.total_gpus - quota_used)
        walk_quota(vc, ctx, running, streams, reserved=quota_used, quota_of=shares)
        # (no second look after a preemption, unlike srtf's: sharing variants would chase their own tail)
