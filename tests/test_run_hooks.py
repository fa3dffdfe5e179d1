"""The engine's run hooks: a policy that keeps its running jobs in its own order sees every start and stop."""

from __future__ import annotations

import random
from unittest.mock import patch

from hypothesis import given, settings
from hypothesis import strategies as st

from simcluster.colocation.loader import load_colocation_model
from simcluster.config import SimConfig
from simcluster.engine import Simulation
from simcluster.job import Job
from simcluster.policies import quota
from simcluster.run import resolve_run


def random_jobs(seed: int, n: int = 60, fractional: bool = False) -> list[Job]:
    """``fractional``: durations with fractions of a second, so that end times are not whole numbers."""
    rng = random.Random(seed)
    return [Job(index=i, job_id=str(i), vc=rng.choice("ab"), gpu_num=rng.choice((1, 2, 4, 8, 16)),
                submit_time=rng.randrange(0, 5_000),
                duration=rng.randrange(1, 3_000) + (rng.random() if fractional else 0)) for i in range(n)]


def end_of_run(job: Job) -> tuple[float, int]:
    """When its run ends at full speed (summed as srtf sums remaining time), then trace order."""
    return job.run_started_at + job.overhead_left + job.work_left, job.index


def check_srtf_order_at_every_pass(sim: Simulation) -> list[int]:
    """Wrap the policy's pass: before each, srtf's ordered running jobs must be the VC's, by end of run."""
    policy, checked = sim.policy, []
    schedule = policy.schedule

    def checking(vc, ctx):
        order = policy._orders.get(vc.name)
        kept = list(order) if order is not None else []
        assert kept == sorted(vc.running, key=end_of_run)
        if order is not None:
            order.check()
            assert order.gpus == sum(j.gpu_num for j in vc.running)
        checked.append(len(kept))
        schedule(vc, ctx)

    policy.schedule = checking
    return checked


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), mtbf=st.sampled_from([0, 20_000]))
def test_srtf_keeps_each_vcs_running_jobs_in_order_of_their_end_through_preemptions_and_failures(seed, mtbf):
    jobs = random_jobs(seed)
    sim = Simulation(jobs, resolve_run(config=SimConfig(policy="srtf", node_mtbf=mtbf, node_repair=600,
                                                       on_no_progress="abandon"), cluster={"a": 2, "b": 2}))
    checked = check_srtf_order_at_every_pass(sim)
    sim.run()
    assert checked and max(checked) > 0
    assert all(not order for order in sim.policy._orders.values())  # every start was matched by a stop


def test_only_policies_that_define_the_hooks_are_called():
    jobs = random_jobs(1, 5)
    resolved = resolve_run(config=SimConfig(policy="srtf"), cluster={"a": 2, "b": 2})
    assert Simulation(jobs, resolved)._policy_on_run_start
    for policy in ("fifo", "srtf-ars", "srtf-wrs"):  # sharing variants: a shared job's speed varies, no end order
        resolved = resolve_run(config=SimConfig(policy=policy), cluster={"a": 2, "b": 2},
                               colocation=load_colocation_model("default"))
        sim = Simulation(random_jobs(1, 5), resolved)
        assert not sim._policy_on_run_start and not sim._policy_on_run_stop
    # tiresias keeps its running jobs in order; tiresias-gittins, whose keys move as jobs run, keeps what they hold
    # (and notes stopped jobs for its promote knob)
    resolved = resolve_run(config=SimConfig(policy="tiresias"), cluster={"a": 2, "b": 2})
    sim = Simulation(random_jobs(1, 5), resolved)
    assert sim._policy_on_run_stop and sim._policy_on_run_start
    for knob in (0.0, 2.0):
        resolved = resolve_run(config=SimConfig(policy="tiresias-gittins", promote_knob=knob),
                               cluster={"a": 2, "b": 2})
        sim = Simulation(random_jobs(1, 5), resolved)
        assert sim._policy_on_run_stop and sim._policy_on_run_start


def walk_every_pass(sim: Simulation) -> None:
    """Make srtf take the plain quota walk at every pass (every running job walked, no shortcut)."""
    from simcluster.policies.quota import queue_streams, walk_quota

    def plain(vc, ctx):
        if not vc.pending:
            return
        running = [(end_of_run(job)[0] - ctx.now, job) for job in vc.running]  # (end - now, as srtf sums it)
        if walk_quota(vc, ctx, running, queue_streams(vc)):
            ctx.wake_at(ctx.now)

    sim.policy.schedule = plain


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), mtbf=st.sampled_from([0, 20_000]), n=st.sampled_from([8, 60, 200]),
       fractional=st.booleans(), jumps=st.booleans())
def test_srtf_shortcuts_decide_as_the_plain_walk_at_every_pass(seed, mtbf, n, fractional, jumps):
    """srtf's kept order, its shortcuts and (``jumps``: even for the few running jobs of these small VCs) the walk
    from one change to the next decide as the plain walk that sorts every running job at every pass."""
    with patch("simcluster.policies.quota.SMALL_ORDER", 0 if jumps else quota.SMALL_ORDER):
        runs = srtf_runs(seed, mtbf, n, fractional)
    assert runs[0] == runs[1]


def srtf_runs(seed: int, mtbf: float, n: int, fractional: bool) -> list[list[tuple]]:
    """Each job's (start, end, preemptions, restarts) under srtf, then under the plain walk."""
    config = SimConfig(policy="srtf", node_mtbf=mtbf, node_repair=600, on_no_progress="abandon",
                       preempt_overhead_small=7.5 if fractional else 40.0)
    runs = []
    for plain in (False, True):
        jobs = random_jobs(seed, n, fractional)
        sim = Simulation(jobs, resolve_run(config=config, cluster={"a": 2, "b": 2}))
        if plain:
            walk_every_pass(sim)
        sim.run()
        runs.append([(j.start_time, j.end_time, j.preemptions, j.restarts) for j in jobs])
    return runs
