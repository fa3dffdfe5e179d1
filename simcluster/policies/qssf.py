from __future__ import annotations

from typing import Any

from simcluster.cluster import VirtualCluster
from simcluster.config import SimConfig
from simcluster.estimators import EstimateQuality, make_estimator
from simcluster.estimators.from_file import TieOrder
from simcluster.job import Job
from simcluster.policies.base import POLICIES, Policy, SchedulingContext, start_in_order_until_blocked


@POLICIES.register("qssf")
class QuasiShortestServiceFirst(Policy):
    """Quasi-shortest-service-first (Helios): estimated duration × GPUs, non-preemptive.

    Priority = estimated duration × GPU count, the estimate coming from a
    plug-in estimator (``--estimator oracle|history|file|ebm``) at the job's
    submission.  As in the Helios/Lucid artifacts, when every waiting job has
    just arrived the queue is ordered by GPU count; whenever older jobs are
    waiting too it is ordered by priority (ties: GPU count, then trace order).
    Jobs start in that order until the first that cannot be placed.

    Against the Lucid artifact, given its LightGBM estimates (``--estimator file --estimates
    qssf_lgb_priority.csv``), the schedule is the artifact's job for job but for one thing, an
    accident of its code: it loads the trace with pandas' default sort (quicksort, not stable), which
    reorders jobs submitted in the same second — differently with each numpy version and CPU — and
    equal priorities then go by that order.  Ours keeps the trace's order (the order the cluster
    received them); ``--tie-order LOG`` takes the order from an artifact's per-job log instead, and
    then every job's JCT is the artifact's.  (The artifact's ``run.sh`` runs qssf in a sweep whose
    estimator loads the EBM estimates, negatives set to 1000: ``--estimates lucid_ebm_priority.csv
    --negative-estimates 1000`` reproduces that run.)
    """

    default_estimator = "oracle"

    def __init__(self, config: SimConfig | None = None) -> None:
        super().__init__(config)
        self.estimator = make_estimator(self.config)
        self.quality = EstimateQuality()
        self.ties = TieOrder(self.config.tie_order)
        self._priority: dict[Job, float] = {}
        self._arrivals: dict[str, tuple[float, int]] = {}  # VC → (latest submit instant, jobs submitted then)

    def on_submit(self, job: Job, now: float) -> None:
        estimate = self.estimator.estimate(job, now)
        self.quality.record(estimate, job)
        self._priority[job] = estimate * job.gpu_num
        when, count = self._arrivals.get(job.vc, (None, 0))
        self._arrivals[job.vc] = (now, count + 1 if when == now else 1)

    def pending_key(self, job: Job) -> tuple[float, int, int]:
        return (self._priority[job], job.gpu_num, self.ties.rank(job))

    def schedule(self, vc: VirtualCluster, ctx: SchedulingContext) -> None:
        when, newcomers = self._arrivals.get(vc.name, (None, 0))
        if when == ctx.now and len(vc.pending) == newcomers:
            # nobody older is waiting: the artifacts order the newcomers by GPU count alone
            for job in sorted(vc.pending, key=lambda j: (j.gpu_num, self.ties.rank(j))):
                if not ctx.try_start(job):
                    break
            return
        start_in_order_until_blocked(vc, ctx)

    def on_finish(self, job: Job, now: float) -> None:
        self.estimator.observe(job, now)
        del self._priority[job]

    def report(self) -> dict[str, Any]:
        return {"estimator": self.estimator.name, "estimate_quality": self.quality.report()}
