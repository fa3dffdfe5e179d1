from __future__ import annotations

from simcluster.policies.base import POLICIES, SchedulingContext
from simcluster.policies.sharing import PartnerCost, share_anyone
from simcluster.policies.srtf import SrtfSharing


@POLICIES.register("srtf-ars")
class SrtfAllShared(SrtfSharing):
    """SRTF, and a job that cannot get idle GPUs takes GPUs holding one job, no interference check ("all shared").

    The SRTF walk counts a shared GPU as half a GPU for each of its two jobs,
    so sharing alone never pushes a running job out of the quota.  Jobs
    still waiting after the walk are offered shared GPUs in SRTF order
    (:mod:`simcluster.policies.sharing`).
    """

    def partner_cost(self, ctx: SchedulingContext) -> PartnerCost:
        return share_anyone
