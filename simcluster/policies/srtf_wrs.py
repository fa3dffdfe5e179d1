from __future__ import annotations

from simcluster.policies.base import POLICIES, SchedulingContext
from simcluster.policies.sharing import PartnerCost, wise_partner_cost
from simcluster.policies.srtf import SrtfSharing


@POLICIES.register("srtf-wrs")
class SrtfWiseSharing(SrtfSharing):
    """SRTF, and a waiting job shares a resident's GPUs only when that lowers their average completion time.

    Wise (conditional) sharing: for waiting job A and resident B with
    remaining times a, b and slowdowns ξA, ξB, share only if
    t_con < t_seq (formulas in :mod:`simcluster.policies.sharing`); partner
    GPUs are taken in ascending t_con, and if too few qualify A waits.
    Sharing never preempts.
    """

    def partner_cost(self, ctx: SchedulingContext) -> PartnerCost:
        return wise_partner_cost(ctx)
