"""The non-preemptive SJF forms of the two sharing rules (IWQoS'24: SJF-FFS and SJF-BSBF)."""

from __future__ import annotations

from simcluster.cluster import VirtualCluster
from simcluster.policies.base import POLICIES, SchedulingContext
from simcluster.policies.sharing import PartnerCost, share_anyone, shared_plan, wise_partner_cost
from simcluster.policies.sjf import ShortestJobFirst


class _SjfSharing(ShortestJobFirst):
    """SJF's head-of-line order, and a head that cannot get idle GPUs offered shared ones (:func:`shared_plan`).

    Where partners cost nothing (SJF-FFS), a head asking for more GPUs than every idle and singly used GPU
    together is not searched for: no node could make up the difference, and the search would look up no
    partner's slowdown.  (SJF-BSBF's search looks some up, which ``colocation_fallbacks`` counts, so it
    searches; a search over several nodes that cannot succeed asks those partners without building every node's
    lists, :func:`~simcluster.policies.sharing.ask_every_partner`.)
    """

    shares_gpus = True
    vc_independent = False  # one colocation model, fallback counts per run

    def partner_cost(self, ctx: SchedulingContext) -> PartnerCost:
        raise NotImplementedError

    def schedule(self, vc: VirtualCluster, ctx: SchedulingContext) -> None:
        cost = self.partner_cost(ctx)
        bounded = cost is share_anyone
        pairs_only = ctx.config.max_jobs_per_gpu == 2
        while (job := vc.pending.first()) is not None:
            if ctx.try_start(job):
                continue
            if job.gpu_milli < 1000:
                return  # a fraction of a GPU never shares with whole-GPU jobs: head-of-line blocking, as in sjf
            if bounded and job.gpu_num > vc.free_gpus + vc.used_gpus - (vc.shared_gpus if pairs_only else 0):
                return  # not even every idle and singly used GPU would do
            plan = shared_plan(job, vc, ctx, cost)
            if plan is None:
                return  # head-of-line blocking, as in sjf
            ctx.start_on(job, plan)


@POLICIES.register("sjf-ffs")
class SjfAllShared(_SjfSharing):
    """SJF; a job that cannot get idle GPUs takes GPUs holding one job, no interference check (SJF-FFS)."""

    def partner_cost(self, ctx: SchedulingContext) -> PartnerCost:
        return share_anyone


@POLICIES.register("sjf-bsbf")
class SjfWiseSharing(_SjfSharing):
    """SJF; a job shares a resident's GPUs only when that lowers their average completion time (SJF-BSBF)."""

    def partner_cost(self, ctx: SchedulingContext) -> PartnerCost:
        return wise_partner_cost(ctx)
