from __future__ import annotations

from simcluster.cluster import VirtualCluster
from simcluster.policies.base import POLICIES, Policy, SchedulingContext
from simcluster.policies.quota import gpu_share
from simcluster.policies.sharing import share_anyone, share_waiting_jobs
from simcluster.policies.srtf import ShortestRemainingTimeFirst


@POLICIES.register("srtf-ars")
class SrtfAllShared(ShortestRemainingTimeFirst):
    """SRTF, and a job that cannot get idle GPUs takes GPUs holding one job, no interference check ("all shared").

    The SRTF walk counts a shared GPU as half a GPU for each of its two jobs,
    so sharing alone never pushes a running job out of the quota.  Jobs
    still waiting after the walk are offered shared GPUs in SRTF order
    (:mod:`simcluster.policies.sharing`).
    """

    shares_gpus = True
    quota_of = staticmethod(gpu_share)
    # not srtf's order of end times (a shared job's speed varies): every pass takes its running jobs as they are
    on_run_start = Policy.on_run_start
    on_run_stop = Policy.on_run_stop

    def schedule(self, vc: VirtualCluster, ctx: SchedulingContext) -> None:
        super().schedule(vc, ctx)
        if vc.pending:
            share_waiting_jobs(vc, ctx, share_anyone)
