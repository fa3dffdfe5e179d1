"""Scheduling state kept as jobs start and stop decides exactly as the state recomputed at every pass.

A :class:`RunningOrder` answers what the quota walk and EASY's reservation ask; Tiresias re-files a running job
only when it crosses a threshold and sets a timer only for crossings no pass has announced yet; EASY and
Slurm reserve from their running jobs kept by expected end; the engine skips placements that a monotone
placement has already failed.  Each is held equal here to the plain way that sorts or scans every job.
"""

from __future__ import annotations

import random
from bisect import bisect_left, bisect_right
from itertools import accumulate
from unittest.mock import patch

from hypothesis import given, settings
from hypothesis import strategies as st

from simcluster.config import SimConfig
from simcluster.engine import Simulation
from simcluster.job import Job
from simcluster.placement.consolidate import Consolidate
from simcluster.policies.easy_backfill import EasyBackfill, reservation
from simcluster.policies.running_order import RunningOrder
from simcluster.policies.slurm import Slurm
from simcluster.policies.tiresias import Tiresias

# --- RunningOrder against a sorted list ---------------------------------------------------------------------

ops = st.lists(st.tuples(st.sampled_from(["add", "add", "remove", "rekey"]), st.integers(0, 400),
                         st.integers(0, 60)), min_size=20, max_size=1500)


@settings(max_examples=60, deadline=None)
@given(steps=ops, probes=st.lists(st.integers(-5, 70), min_size=1, max_size=8),
       budgets=st.lists(st.integers(0, 3000), min_size=1, max_size=6))
def test_a_running_order_answers_as_a_sorted_list(steps, probes, budgets):
    with patch("simcluster.policies.running_order._LOAD", 4):  # blocks of 4 to 8: many blocks, splits, merges
        check_against_a_sorted_list(steps, probes, budgets)


def check_against_a_sorted_list(steps, probes, budgets) -> None:
    jobs = [Job(index=i, job_id=str(i), vc="v", gpu_num=1 + i % 9, submit_time=0, duration=1) for i in range(401)]
    order, model = RunningOrder(), {}  # model: job → key
    for op, i, key in steps:
        job = jobs[i]
        if op == "add" and job not in model:
            order.add(key, job)
            model[job] = key
        elif op == "remove" and job in model:
            order.remove(job)
            del model[job]
        elif op == "rekey" and job in model:
            order.rekey(job, key)
            model[job] = key
    order.check()
    flat = sorted((key, job.index, job) for job, key in model.items())
    weights = [job.gpu_num for _, _, job in flat]
    assert list(order) == [job for _, _, job in flat] and order.gpus == sum(weights) and len(order) == len(flat)

    def position(n: int):  # the n-th entry as a Position, by walking the order's own items
        return next((p for p in _positions(order) if p[1] == n), (order.end, len(flat)))[0]

    for probe in probes:
        for after in (False, True):
            n = (bisect_right if after else bisect_left)([k for k, _, _ in flat], probe)
            at = order.locate(probe, after_ties=after)
            assert at == position(n)
            assert order.gpus_before(at) == sum(weights[:n]) and order.count_from(at) == len(flat) - n
            assert [j for _, j in order.items(at)] == [job for _, _, job in flat[n:]] == order.jobs_between(at)
    for budget in budgets:
        for start in (0, len(flat) // 3):
            running = list(accumulate(weights[start:]))
            n = bisect_right(running, budget)
            over, held = order.first_over(position(start), budget)
            expected = None if n == len(running) else position(start + n)
            assert (over, held) == (expected, running[n - 1] if n else 0)
            assert order.reach(position(start), [budget])[0] == expected
    if len(flat) >= 2:
        assert order.gpus_between(position(1), position(len(flat) - 1)) == sum(weights[1:-1])


def _positions(order: RunningOrder):
    at, n = order.start, 0
    while at != order.end:
        yield at, n
        at, n = order.following(at), n + 1


# --- policies: the kept state against the plain way --------------------------------------------------------

def random_jobs(seed: int, n: int, vcs: str = "ab") -> list[Job]:
    rng = random.Random(seed)
    return [Job(index=i, job_id=str(i), vc=rng.choice(vcs), gpu_num=rng.choice((1, 1, 2, 3, 4, 5, 6, 7, 8, 8, 12, 16, 24)),
                submit_time=rng.randrange(0, 20_000) // 7 * 7, duration=rng.randrange(1, 40_000) + rng.random(),
                user=f"u{rng.randrange(4)}") for i in range(n)]


def outcome(jobs: list[Job], config: SimConfig, policy=None, placement=None) -> tuple[list, list]:
    """Every job's life, and the timeline (one row per pass: the passes and their order)."""
    passes: list[tuple] = []
    sim = Simulation(jobs, {"a": 4, "b": 3}, config, policy=policy, placement=placement)
    schedule = sim.policy.schedule

    def noted(vc, ctx):
        passes.append((ctx.now, vc.name))
        schedule(vc, ctx)

    sim.policy.schedule = noted
    sim.run()
    return [(j.start_time, j.end_time, j.preemptions, j.restarts, j.queue_vc) for j in jobs], passes


class PlainTiresias(Tiresias):
    """Tiresias keying every running job at every decision and setting every crossing's timer at every pass."""

    keeps_order = False


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), knob=st.sampled_from([0.0, 2.0]), mtbf=st.sampled_from([0.0, 50_000.0]),
       thresholds=st.sampled_from([(18_000.0,), (3_600.0, 36_000.0)]))
def test_tiresias_kept_order_and_timers_decide_as_keying_every_running_job(seed, knob, mtbf, thresholds):
    config = SimConfig(policy="tiresias", promote_knob=knob, node_mtbf=mtbf, node_repair=900,
                       on_no_progress="abandon", thresholds=thresholds, until=400_000.0)
    kept = outcome(random_jobs(seed, 120), config)
    plain = outcome(random_jobs(seed, 120), config, policy=PlainTiresias(config))
    assert kept == plain


class PlainEasy(EasyBackfill):
    """EASY reserving from every running job's expected end, sorted at every reservation."""

    def reserve(self, head, vc, now):
        ends = [(max(now, run.start_time + self.expected[run]), run.gpu_num) for run in vc.running]
        shadow, spare = reservation(head.gpu_num, vc.free_gpus, ends)
        return max(shadow, now), spare


class PlainSlurm(Slurm):
    reserve = PlainEasy.reserve


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), estimator=st.sampled_from(["oracle", "history"]),
       policy=st.sampled_from(["easy-backfill", "slurm"]), mtbf=st.sampled_from([0.0, 50_000.0]))
def test_easy_and_slurm_reserve_from_kept_ends_as_from_sorted_ends(seed, estimator, policy, mtbf):
    """With history estimates many running jobs outlive theirs (expected to end now, smallest first)."""
    config = SimConfig(policy=policy, estimator=estimator, node_mtbf=mtbf, node_repair=900, on_no_progress="abandon",
                       until=400_000.0)
    plain = (PlainEasy if policy == "easy-backfill" else PlainSlurm)(config)
    assert outcome(random_jobs(seed, 150), config) == outcome(random_jobs(seed, 150), config, policy=plain)


class CountedConsolidate(Consolidate):
    def __init__(self, monotone: bool) -> None:
        super().__init__()
        self.monotone, self.calls = monotone, 0

    def place(self, job, vc):
        self.calls += 1
        return super().place(job, vc)


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), policy=st.sampled_from(["fifo-backfill", "easy-backfill", "srtf", "tiresias"]))
def test_placements_known_to_fail_are_skipped_without_changing_a_run(seed, policy):
    """Consolidate is monotone: the engine skips a job as big as one it found no room for, until GPUs are freed."""
    config = SimConfig(policy=policy, node_mtbf=60_000.0, node_repair=900, on_no_progress="abandon",
                       until=400_000.0)
    skipping, searching = CountedConsolidate(True), CountedConsolidate(False)
    assert outcome(random_jobs(seed, 150), config, placement=skipping) == \
        outcome(random_jobs(seed, 150), config, placement=searching)
    assert skipping.calls <= searching.calls


def test_placements_are_skipped_on_a_congested_cluster():
    config = SimConfig(policy="fifo-backfill")
    skipping, searching = CountedConsolidate(True), CountedConsolidate(False)
    outcome(random_jobs(7, 300), config, placement=skipping)
    outcome(random_jobs(7, 300), config, placement=searching)
    assert skipping.calls < searching.calls * 0.8
