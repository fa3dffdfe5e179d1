from __future__ import annotations

from simcluster.cluster import VirtualCluster
from simcluster.policies.base import POLICIES, Policy, SchedulingContext
from simcluster.policies.quota import gpu_share
from simcluster.policies.sharing import share_waiting_jobs, wise_partner_cost
from simcluster.policies.srtf import ShortestRemainingTimeFirst


@POLICIES.register("srtf-wrs")
class SrtfWiseSharing(ShortestRemainingTimeFirst):
    """SRTF, and a waiting job shares a resident's GPUs only when that lowers their average completion time.

    Wise (conditional) sharing: for waiting job A and resident B with
    remaining times a, b and slowdowns ξA, ξB, share only if
    t_con < t_seq (formulas in :mod:`simcluster.policies.sharing`); partner
    GPUs are taken in ascending t_con, and if too few qualify A waits.
    Sharing never preempts.
    """

    shares_gpus = True
    quota_of = staticmethod(gpu_share)
    # not srtf's order of end times (a shared job's speed varies): every pass takes its running jobs as they are
    on_run_start = Policy.on_run_start
    on_run_stop = Policy.on_run_stop

    def schedule(self, vc: VirtualCluster, ctx: SchedulingContext) -> None:
        super().schedule(vc, ctx)
        if vc.pending:
            share_waiting_jobs(vc, ctx, wise_partner_cost(ctx))
