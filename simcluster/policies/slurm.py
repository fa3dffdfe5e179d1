"""``slurm``: Slurm's default shape — multifactor job priority over EASY backfilling.

Slurm orders each partition's queue by a job priority and backfills around it.  The priority, as the
Slurm documentation's *Multifactor Priority Plugin* page defines it, is a weighted sum of factors that
each lie between 0 and 1; this policy computes the three that a job trace can give:

* **age** — the time the job has waited, divided by ``PriorityMaxAge``, capped at 1;
* **job size** — the GPUs it asks for as a fraction of the cluster's GPUs (``PriorityFavorSmall``
  turns it round: the smallest job gets 1);
* **fair share**, Slurm's classic formula — ``2^(−U/S)``, where ``U`` is the user's share of all recorded
  usage and ``S`` the user's normalised share of the cluster.  Usage is GPU-seconds, decayed with
  ``PriorityDecayHalfLife`` (usage from one half-life ago counts half); every user who has submitted a
  job holds an equal share (one association per user, all under one account).

priority = ``PriorityWeightAge`` × age + ``PriorityWeightFairshare`` × fair share +
``PriorityWeightJobSize`` × job size.  Higher first; equal priorities go by submit time, then trace order.
Priorities are recomputed every ``PriorityCalcPeriod``, at a VC's first scheduling pass that long after
the last (between two, a queue keeps its order; each user's fair-share factor is computed once per
recalculation); a new job gets its priority when it is submitted.  The
partition, QOS, association, TRES, nice and site factors are left out: one partition per VC gives every
job of a queue the same partition factor, and a trace records none of the others.

Slurm's own defaults set every weight to 0, which leaves submit order (``easy-backfill``).  The defaults
here are the documentation's configuration example (``PriorityWeightAge=1000``,
``PriorityWeightFairshare=10000``, ``PriorityWeightJobSize=1000``, ``PriorityMaxAge=14-0``,
``PriorityDecayHalfLife=14-0``; ``PriorityCalcPeriod`` at Slurm's default, 5 minutes).

Backfill is EASY's (:mod:`~simcluster.policies.easy_backfill`): the highest-priority job that cannot
start gets a reservation that later jobs may not delay.  (Slurm's backfill plugin reserves for every
higher-priority job it tests; EASY is the case of one.)

>>> usage = DecayingUsage()
>>> usage.run(0.0, 8, half_life=100.0); usage.settle(100.0, 100.0)  # 8 GPUs for one half-life
>>> round(usage.value, 1)  # 800 GPU-s used, earlier seconds decayed: 8 × 100 / ln 2 × (1 − 1/2)
577.1
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from simcluster.policies.easy_backfill import EasyBackfill
from simcluster.policies.fifo_backfill import BackfillSettings
from simcluster.sdk import ClusterView, JobView, SchedulingContext, VCView, register_policy, setting

DAY = 86400.0


@dataclass(frozen=True)
class SlurmSettings(BackfillSettings):
    priority_weight_age: float = setting(
        1000.0, "PriorityWeightAge: weight of the age factor (Slurm's default 0; its documentation's example "
        "1000).", min=0)
    priority_weight_fairshare: float = setting(
        10000.0, "PriorityWeightFairshare: weight of the fair-share factor (Slurm's default 0; example 10000).",
        min=0)
    priority_weight_job_size: float = setting(
        1000.0, "PriorityWeightJobSize: weight of the job-size factor (Slurm's default 0; example 1000).", min=0)
    priority_max_age: float = setting(
        14 * DAY, "PriorityMaxAge, seconds: the wait at which the age factor reaches 1 (Slurm's default 7 days; "
        "example 14).", above=0)
    priority_decay_half_life: float = setting(
        14 * DAY, "PriorityDecayHalfLife, seconds: usage this old counts half in the fair-share factor; 0 = "
        "usage never decays (Slurm's default 7 days; example 14).", min=0)
    priority_calc_period: float = setting(
        300.0, "PriorityCalcPeriod, seconds: how often priorities are recomputed (Slurm's default 5 minutes).",
        above=0)
    priority_favor_small: bool = setting(
        False, "PriorityFavorSmall: the smallest job gets the largest job-size factor (Slurm's default: no, "
        "the largest job does).")


class DecayingUsage:
    """GPU-seconds used, each decayed by half every half-life: value(t) = ∫ gpus(s) · 2^(−(t − s)/h) ds.

    Kept exactly, in O(1) per change: between two changes the GPUs in use are constant, so the integral
    has a closed form (:meth:`settle`).  A half-life of 0 means no decay (plain GPU-seconds).
    """

    __slots__ = ("at", "gpus", "value")

    def __init__(self) -> None:
        self.value, self.at, self.gpus = 0.0, 0.0, 0

    def settle(self, now: float, half_life: float) -> None:
        """Bring :attr:`value` up to ``now``."""
        elapsed = now - self.at
        if elapsed > 0:
            if half_life > 0:
                kept = 2.0 ** (-elapsed / half_life)
                self.value = self.value * kept + self.gpus * half_life / math.log(2) * (1.0 - kept)
            else:
                self.value += self.gpus * elapsed
        self.at = now

    def run(self, now: float, gpus: int, half_life: float) -> None:
        """``gpus`` more (or, negative, fewer) GPUs in use from ``now`` on."""
        self.settle(now, half_life)
        self.gpus += gpus


@register_policy("slurm")
class Slurm(EasyBackfill):
    """Slurm's default shape: multifactor priority (age, job size, fair share) over EASY backfilling.

    Fair share is per user, its usage decayed by a half-life.  Weights and periods are settings with Slurm's
    names (``priority_weight_age`` is PriorityWeightAge…); defaults are the Slurm documentation's configuration
    example (age 1000, fair share 10000, job size 1000, 14-day max age and usage half-life), since Slurm's own
    default weights (0) leave submit order.
    """

    Settings = SlurmSettings
    # Every waiting job's priority changes at each recalculation (its age), so the queue is sorted afresh every
    # PriorityCalcPeriod and an index of it would be filed afresh as often: on the congested traces of issue 55
    # that cost more than the walks it saved (queues of ~100 jobs, a dozen passes per period).
    indexes_queue = False

    def __init__(self, config: Any = None) -> None:
        super().__init__(config)
        self.priority: dict[JobView, float] = {}
        self._usage: dict[str, DecayingUsage] = {}  # user → decayed GPU-seconds
        self._total = DecayingUsage()  # every user's, together
        self._calculated: dict[str, float] = {}  # VC → when its queue's priorities were last recomputed
        self._cluster_gpus = 1

    def attach(self, cluster: ClusterView) -> None:
        super().attach(cluster)
        self._cluster_gpus = max(cluster.total_gpus, 1)

    def pending_key(self, job: JobView) -> tuple[float, float]:
        return (-self.priority[job], job.submit_time)

    def job_priority(self, job: JobView, now: float) -> float:
        """The weighted sum of the age, fair-share and job-size factors of ``job`` at ``now``."""
        return self._weighted(job, now, self.fair_share(job.user, now))

    def _weighted(self, job: JobView, now: float, fair_share: float) -> float:
        s = self.settings
        age = min((now - job.submit_time) / s.priority_max_age, 1.0)
        size = job.gpu_num / self._cluster_gpus
        if s.priority_favor_small:
            size = (self._cluster_gpus - job.gpu_num + 1) / self._cluster_gpus
        return (s.priority_weight_age * age + s.priority_weight_fairshare * fair_share
                + s.priority_weight_job_size * size)

    def recalculate(self, jobs: Iterable[JobView], now: float) -> None:
        """Every one of ``jobs``' priority at ``now``, as :meth:`job_priority` computes it (the same terms in the same
        order: the same floats), with each user's fair-share factor computed once (usage settled to ``now`` does
        not move at ``now`` again)."""
        s = self.settings
        w_age, w_share, w_size, max_age = (s.priority_weight_age, s.priority_weight_fairshare,
                                           s.priority_weight_job_size, s.priority_max_age)
        cluster, favor_small = self._cluster_gpus, s.priority_favor_small
        shares: dict[str, float] = {}
        priority, fair_share = self.priority, self.fair_share
        for job in jobs:
            share = shares.get(job.user)
            if share is None:
                share = shares[job.user] = fair_share(job.user, now)
            age = min((now - job.submit_time) / max_age, 1.0)
            size = (cluster - job.gpu_num + 1) / cluster if favor_small else job.gpu_num / cluster
            priority[job] = w_age * age + w_share * share + w_size * size

    def fair_share(self, user: str, now: float) -> float:
        """Slurm's classic fair-share factor 2^(−U/S): U the user's share of the decayed usage, S = 1/users."""
        half_life = self.settings.priority_decay_half_life
        total, mine = self._total, self._usage[user]
        total.settle(now, half_life)
        mine.settle(now, half_life)
        if total.value <= 0:
            return 1.0
        return float(2.0 ** (-(mine.value / total.value) * len(self._usage)))

    def on_submit(self, job: JobView, now: float) -> None:
        super().on_submit(job, now)
        self._usage.setdefault(job.user, DecayingUsage())
        self.priority[job] = self.job_priority(job, now)

    def on_run_start(self, job: JobView, vc: VCView) -> None:
        super().on_run_start(job, vc)
        self._use(job, job.gpu_num, self.now)

    def on_run_stop(self, job: JobView, vc: VCView) -> None:
        super().on_run_stop(job, vc)
        self._use(job, -job.gpu_num, self.now)

    def _use(self, job: JobView, gpus: int, now: float) -> None:
        half_life = self.settings.priority_decay_half_life
        self._usage[job.user].run(now, gpus, half_life)
        self._total.run(now, gpus, half_life)

    def on_finish(self, job: JobView, now: float) -> None:
        super().on_finish(job, now)
        del self.priority[job]

    def schedule(self, vc: VCView, ctx: SchedulingContext) -> None:
        now = ctx.now
        if now - self._calculated.get(vc.name, -math.inf) >= self.settings.priority_calc_period:
            self._calculated[vc.name] = now
            self.recalculate(vc.pending, now)
            ctx.reorder()
            self.forget_order(vc)  # (when it indexes its queue)
        super().schedule(vc, ctx)
