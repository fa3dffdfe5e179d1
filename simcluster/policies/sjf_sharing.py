"""The non-preemptive SJF forms of the two sharing rules (IWQoS'24: SJF-FFS and SJF-BSBF)."""

from __future__ import annotations

from simcluster.cluster import VirtualCluster
from simcluster.policies.base import POLICIES, SchedulingContext
from simcluster.policies.sharing import PartnerCost, share_anyone, shared_plan, wise_partner_cost
from simcluster.policies.sjf import ShortestJobFirst


class _SjfSharing(ShortestJobFirst):
    shares_gpus = True
    vc_independent = False  # one colocation model, fallback counts per run

    def partner_cost(self, ctx: SchedulingContext) -> PartnerCost:
        raise NotImplementedError

    def schedule(self, vc: VirtualCluster, ctx: SchedulingContext) -> None:
        cost = self.partner_cost(ctx)
        while (job := vc.pending.first()) is not None:
            if ctx.try_start(job):
                continue
            plan = shared_plan(job, vc, ctx, cost) if job.gpu_milli >= 1000 else None
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
