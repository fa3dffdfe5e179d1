"""Tiresias' PromoteKnob starvation guard, bounded (issue 55, item 3).

A job that waited longer than knob × its last run is promoted to the top queue.  Unguarded, a promoted job was
preempted at its first decision by the next promotion of an older job, which then starved a knob's multiple of
that one quantum and was promoted in turn: on an overloaded cluster the knob fed itself (a promotion and a
preemption per quantum).  Guarded, a promoted job keeps its promotion on its first run until it has had the top
queue's quantum of service (up to the first threshold), so no later promotion preempts it before that.

Kueue's analogue is a ClusterQueue's ``withinClusterQueue: LowerOrNewerEqualPriority`` preemption policy
(https://kueue.sigs.k8s.io/docs/concepts/preemption/; pkg/scheduler/preemption/preemption.go): a workload may
preempt ones of lower priority, or of equal priority created after it, never an older equal: here a promoted
job (top priority) is not preempted by a later promotion while it has its top queue's quantum.
"""

from __future__ import annotations

import random
import time

from simcluster.api import simulate
from simcluster.config import SimConfig
from simcluster.engine import Simulation
from simcluster.job import Job
from simcluster.metrics import Observer
from simcluster.run import resolve_run
from simcluster.traces.synth import SynthSpec, synthesize


def overloaded_trace():
    """The issue's trace: 800 jobs on 256 GPUs (one VC of 32 nodes of 8) at offered load 3."""
    return synthesize(SynthSpec(jobs=800, nodes=32, vcs=1, load=3.0, seed=0))


def test_tiresias_gittins_with_knob_2_ends_on_the_overloaded_trace_and_serves_every_job():
    """Unguarded it had not ended after 100 s (29,419 promotions in its first 100,000 simulated seconds)."""
    started = time.process_time()
    # (a horizon past its end, about 425,000 s, so that an unguarded run fails in seconds, not hours)
    result = simulate(overloaded_trace(), SimConfig(policy="tiresias-gittins", promote_knob=2.0, until=600_000.0))
    cpu = time.process_time() - started
    summary = result.summary
    assert result.jobs["end_time"].notna().all()  # every job served to its end
    assert 0 < summary["promotions"] <= len(result.jobs)  # counted in the summary, and bounded
    assert cpu < 30  # (about 0.3 CPU-s on a quiet machine)


def test_tiresias_with_knob_2_ends_on_the_overloaded_trace():
    """(Plain Tiresias' order by submit time ended here unguarded too: 186 promotions; the guard keeps it so.)"""
    result = simulate(overloaded_trace(), SimConfig(policy="tiresias", promote_knob=2.0, until=600_000.0))
    assert result.jobs["end_time"].notna().all() and 0 < result.summary["promotions"] <= len(result.jobs)


class GuardCheck(Observer):
    """Notes each promotion (the policy requeues a job only to promote it) and each start and preemption, and
    fails on a job preempted on its first run since a promotion while still in the top queue."""

    def __init__(self) -> None:
        self.policy = None  # (the run's, once made)
        self.promoted_at: dict[Job, float] = {}
        self.first_run_since: dict[Job, float] = {}  # a promoted job → when its first run since then started
        self.guarded_preemptions = self.promotions = 0
        self.checked = 0

    def promoted(self, job: Job, now: float) -> None:
        self.promoted_at[job] = now
        self.promotions += 1

    def on_start(self, job: Job, now: float) -> None:
        if job in self.promoted_at:
            self.first_run_since[job] = now
            del self.promoted_at[job]
        else:
            self.first_run_since.pop(job, None)

    def on_preempt(self, job: Job, now: float) -> None:
        if job in self.first_run_since:
            self.checked += 1
            # its service since the promotion, as the policy keys it: within the top queue means still guarded
            if self.policy.queue_of(self.policy.attained(job, now)) == 0:
                self.guarded_preemptions += 1
            del self.first_run_since[job]

    def on_restart(self, job: Job, now: float) -> None:
        self.first_run_since.pop(job, None)  # (a node failure ends the run: the guard goes with it)


class NotingPromotions:
    """A VC's context that tells the check of every requeued job (Tiresias requeues a job only to promote it)."""

    def __init__(self, ctx, check: GuardCheck) -> None:
        self._ctx, self._check = ctx, check

    def __getattr__(self, name: str):
        return getattr(self._ctx, name)

    def requeue(self, job: Job) -> None:
        self._check.promoted(job, self._ctx.now)
        self._ctx.requeue(job)


def checked_run(policy: str, jobs: list[Job], knob: float = 2.0, hold: bool = True) -> GuardCheck:
    config = SimConfig(policy=policy, promote_knob=knob, thresholds=(3_600.0, 36_000.0), quantum=60.0,
                       node_mtbf=80_000.0, node_repair=900, on_no_progress="abandon", until=300_000.0,
                       promotion_hold=hold)
    check = GuardCheck()
    sim = Simulation(jobs, resolve_run(config=config, cluster={"a": 2}), [check],
                     wrap_context=lambda ctx, vc: NotingPromotions(ctx, check))
    check.policy = sim.policy
    sim.run()
    assert check.promotions == sim.policy.promotions
    return check


def busy_jobs(seed: int, n: int = 150) -> list[Job]:
    """Many small and some long jobs on 16 GPUs: long ones are demoted, starve and are promoted."""
    rng = random.Random(seed)
    return [Job(index=i, job_id=str(i), vc="a", gpu_num=rng.choice((1, 1, 2, 4, 8)),
                submit_time=rng.randrange(0, 40_000), duration=rng.choice((300, 900, 3_000, 20_000)) + rng.random())
            for i in range(n)]


def test_no_promoted_job_is_preempted_in_the_top_queue_on_its_first_run_since_its_promotion():
    for policy in ("tiresias", "tiresias-gittins"):
        checks = [checked_run(policy, busy_jobs(seed)) for seed in range(4)]
        assert sum(check.promotions for check in checks) > 20  # the knob fires
        assert sum(check.checked for check in checks) > 0  # promoted jobs are preempted, after their quantum
        assert all(check.guarded_preemptions == 0 for check in checks)


def test_without_the_hold_a_promoted_job_may_be_preempted_at_once_as_in_the_artifact():
    for policy in ("tiresias", "tiresias-gittins"):
        checks = [checked_run(policy, busy_jobs(seed), hold=False) for seed in range(4)]
        assert sum(check.guarded_preemptions for check in checks) > 0, policy


def test_the_knob_changes_nothing_where_it_never_fires():
    rows = [Job(index=i, job_id=str(i), vc="a", gpu_num=1 + i % 4, submit_time=600 * i, duration=400.0)
            for i in range(40)]
    runs = []
    for knob in (0.0, 2.0):
        result = simulate_jobs(rows, knob)
        runs.append(result)
    assert runs[0][1] == 0 == runs[1][1] and runs[0][0] == runs[1][0]


def simulate_jobs(rows: list[Job], knob: float) -> tuple[list, int]:
    jobs = [Job(index=j.index, job_id=j.job_id, vc=j.vc, gpu_num=j.gpu_num, submit_time=j.submit_time,
                duration=j.duration) for j in rows]
    config = SimConfig(policy="tiresias-gittins", promote_knob=knob, thresholds=(300.0,))
    sim = Simulation(jobs, resolve_run(config=config, cluster={"a": 1}))
    sim.run()
    return [(j.start_time, j.end_time, j.preemptions) for j in jobs], sim.policy.promotions
