"""Scheduling state kept as jobs start and stop decides exactly as the state recomputed at every pass.

A :class:`RunningOrder` answers what the quota walk and EASY's reservation ask; the ranked walk over running
jobs the policy ranked itself walks as the pairs walk; Tiresias re-files a running job
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

from simcluster.api import simulate
from simcluster.config import SimConfig
from simcluster.engine import Simulation
from simcluster.job import Job, JobState
from simcluster.placement.consolidate import Consolidate
from simcluster.policies.easy_backfill import EasyBackfill, reservation
from simcluster.policies.quota import _walk_pairs, _walk_ranked
from simcluster.policies.running_order import Minus, RunningOrder, gpu_count
from simcluster.policies.sharing import may_share_on
from simcluster.policies.sharing import shared_plan as real_plan
from simcluster.policies.slurm import Slurm
from simcluster.policies.srtf_ars import SrtfAllShared
from simcluster.policies.tiresias import Tiresias
from simcluster.run import resolve_run
from simcluster.tables import load_tables
from simcluster.traces.synth import SynthSpec, synthesize

# --- the ranked walk against the pairs walk --------------------------------------------------------------------

@settings(max_examples=400, deadline=None)
@given(running=st.lists(st.tuples(st.integers(0, 6), st.sampled_from([1, 1, 2, 4, 8])), max_size=30),
       waiting=st.lists(st.tuples(st.integers(0, 6), st.sampled_from([1, 2, 4, 8, 16])), max_size=15),
       quota=st.integers(0, 70), start=st.integers(0, 30))
def test_the_ranked_walk_starts_and_preempts_as_the_pairs_walk(running, waiting, quota, start):
    jobs = [Job(index=i, job_id=str(i), vc="v", gpu_num=g, submit_time=0, duration=1)
            for i, (_, g) in enumerate(running + waiting)]
    ranked = sorted((key, job.index, job) for (key, _), job in zip(running, jobs))
    keys, in_order = [key for key, _, _ in ranked], [job for _, _, job in ranked]
    streams: dict[int, tuple[list, list, int]] = {}  # the queue's streams by GPU count, in (key, trace index) order
    for (key, gpus), job in sorted(zip(waiting, jobs[len(running):]), key=lambda p: (p[0][0], p[1].index)):
        entries, queued, _ = streams.setdefault(gpus, ([], [], 0))
        entries.append((key, job.index))
        queued.append(job)
    start = min(start, len(in_order))
    ends = list(accumulate(job.gpu_num for job in in_order))
    # (the jobs before start come first and fit: they hold their GPUs out of the quota, as tiresias-gittins hands
    # the running jobs ahead of the queue's head theirs)
    left = quota - (ends[start - 1] if start else 0)
    pairs = [(key, job) for key, job in zip(keys[start:], in_order[start:])]
    expected = _walk_pairs(pairs, streams, False, left, gpu_count)
    assert _walk_ranked(in_order, ends, lambda key: bisect_right(keys, key), start, streams, left) == expected


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
            for mapped in (Minus(3.5), lambda k: k - 3.5):  # a key map: searched near, or called at every step
                m = (bisect_right if after else bisect_left)([k - 3.5 for k, _, _ in flat], probe)
                assert order.locate(probe, mapped, after_ties=after) == position(m)
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
    resolved = resolve_run(config=config, cluster={"a": 4, "b": 3})
    sim = Simulation(jobs, resolved, policy=policy, placement=placement)
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


@settings(max_examples=36, deadline=None)
@given(seed=st.integers(0, 1_000_000), knob=st.sampled_from([0.0, 1.0, 2.0]), mtbf=st.sampled_from([0.0, 50_000.0]),
       thresholds=st.sampled_from([(18_000.0,), (3_600.0, 36_000.0), (1_000.0, 7_000.0, 40_000.0)]))
def test_tiresias_kept_order_and_timers_decide_as_keying_every_running_job(seed, knob, mtbf, thresholds):
    check_tiresias_kept_against_plain(seed, knob, mtbf, thresholds)


def check_tiresias_kept_against_plain(seed: int, knob: float, mtbf: float, thresholds: tuple[float, ...]) -> None:
    config = SimConfig(policy="tiresias", promote_knob=knob, node_mtbf=mtbf, node_repair=900,
                       on_no_progress="abandon", thresholds=thresholds, until=400_000.0)
    kept = outcome(random_jobs(seed, 120), config)
    plain = outcome(random_jobs(seed, 120), config, policy=PlainTiresias(config))
    assert kept == plain


def test_a_crossing_on_a_quantum_boundary_wakes_the_kept_order_where_the_key_changes():
    """Seed 500: job 37 (3 GPUs, promoted) restarts at 20,280 s with its attained service 0.0, so its crossing of
    18,000 GPU-s extrapolates to 26,280.0 exactly, a boundary: the boundary after it was 26,340.  A pass at 24,840
    extrapolated 26,279.999999999996 (boundary 26,280), and the key at 26,280 (18,000.000000000007 > 18,000)
    agrees with that pass.  The kept order, which sets the timer once at the start, woke a quantum late; both now
    step to where the key itself changes (:meth:`Tiresias.crossing_boundary`).  The run as it was found: without
    the promotion guard (issue 55), which keys job 37 otherwise on that run."""
    with patch.object(Tiresias, "_note_promoted_start", lambda self, job: None):
        check_tiresias_kept_against_plain(500, 2.0, 50_000.0, (18_000.0,))
    policy = Tiresias(SimConfig(policy="tiresias", thresholds=(18_000.0,)))
    job = Job(index=37, job_id="37", vc="b", gpu_num=3, submit_time=0, duration=40_000.0)
    job.state, job.busy_time, job.run_started_at = JobState.RUNNING, 12087.84506977417, 20_280.0
    policy._forgiven[job] = 36263.53520932251
    assert policy.attained(job, 20_280.0) == 0.0 and policy.attained(job, 26_280.0) > 18_000.0
    assert policy.crossing_boundary(job, 18_000.0, 26_340.0, 20_280.0) == 26_280.0  # (extrapolated: 26,340)


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


# --- sharing: searches that stop early, against the scan of every node ------------------------------------------

def scanned_plan(job, vc, ctx, partner_cost):
    """shared_plan as it was: every node's usable GPUs, then the best node or the most usable nodes first."""
    config, costs = ctx.config, {}
    max_jobs, memory = config.max_jobs_per_gpu, job.memory

    def usable(node):
        shareable = []
        limit = node.gpu_memory or config.gpu_memory
        for i, holders in enumerate(node.gpus):
            if not holders or len(holders) >= max_jobs or holders[0].gpu_milli < 1000:
                continue
            if node.memory_used(i) + memory > limit:
                continue
            worst = 0.0
            for resident in holders:
                if resident not in costs:
                    costs[resident] = partner_cost(job, resident)
                if costs[resident] is None:
                    break
                worst = max(worst, costs[resident])
            else:
                shareable.append((worst, i))
        return list(node.free_ids), sorted(shareable)

    need = job.gpu_num
    one_node = need <= vc.gpus_per_node
    candidates = [(node, *usable(node)) for node in vc.nodes if node.up and node.used and job.speed_on(node.gpu_type)
                  and (not one_node or may_share_on(node, need, max_jobs))]
    if one_node:
        best = None
        for node, idle, shareable in candidates:
            shared_needed = need - len(idle)
            if 0 < shared_needed <= len(shareable):
                key = (shared_needed, sum(c for c, _ in shareable[:shared_needed]), node.index)
                if best is None or key < best[0]:
                    best = (key, node, idle + [i for _, i in shareable[:shared_needed]])
        return None if best is None else [(best[1], sorted(best[2]))]
    pool = sorted(candidates + [(node, list(node.free_ids), []) for node in vc.nodes
                                if node.up and not node.used and job.speed_on(node.gpu_type)],
                  key=lambda c: (-(len(c[1]) + len(c[2])), c[0].index))
    plan, left = [], need
    for node, idle, shareable in pool:
        take = (idle + [i for _, i in shareable])[:left]
        if take:
            plan.append((node, sorted(take)))
            left -= len(take)
        if not left:
            return plan
    return None


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10_000), policy=st.sampled_from(["sjf-ffs", "sjf-bsbf", "srtf-ars", "srtf-wrs"]),
       max_jobs=st.sampled_from([2, 3]), mtbf=st.sampled_from([0.0, 40_000.0]))
def test_shared_plans_stop_early_and_choose_as_the_scan_of_every_node(seed, policy, max_jobs, mtbf):
    """Jobs of one node's GPUs or of several (up to 32 on nodes of 8), slowdowns of the default model."""
    trace = synthesize(SynthSpec(jobs=250, nodes=6, vcs=1, load=1.6, sizes="pow2:32", seed=seed))
    checked = [0]

    def both(job, vc, ctx, partner_cost):
        plan = real_plan(job, vc, ctx, partner_cost)
        assert plan == scanned_plan(job, vc, ctx, partner_cost)
        checked[0] += 1
        return plan

    config = SimConfig(policy=policy, max_jobs_per_gpu=max_jobs, node_mtbf=mtbf, node_repair=900,
                       on_no_progress="abandon", until=300_000.0)
    with patch("simcluster.policies.sharing.shared_plan", both), patch("simcluster.policies.sjf_sharing.shared_plan", both):
        simulate(trace, config)
    assert checked[0] > 0


class WalkingSrtfArs(SrtfAllShared):
    """srtf-ars walking every running job at every pass, even where every waiting job fits."""

    def _every_waiting_job_fits(self, vc, ctx):
        return False


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 10_000), max_jobs=st.sampled_from([2, 3]), load=st.sampled_from([0.5, 1.6]))
def test_srtf_sharing_starts_every_waiting_job_without_a_walk_as_the_walk_would(seed, max_jobs, load):
    trace = synthesize(SynthSpec(jobs=250, nodes=6, vcs=1, load=load, sizes="pow2:32", seed=seed))
    config = SimConfig(policy="srtf-ars", max_jobs_per_gpu=max_jobs, until=300_000.0)
    colocation = load_tables(trace, config, True).colocation
    runs = []
    for policy in (SrtfAllShared(config), WalkingSrtfArs(config)):
        jobs = trace.make_jobs()
        resolved = resolve_run(config=config, cluster=trace.vc_nodes, colocation=colocation)
        Simulation(jobs, resolved, policy=policy).run()
        runs.append([(j.start_time, j.end_time, j.preemptions, j.shared_seconds) for j in jobs])
    assert runs[0] == runs[1]


# --- lucid: pair candidates kept by the run hooks ------------------------------------------------------------

@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 10_000), mtbf=st.sampled_from([0.0, 40_000.0]), choice=st.sampled_from(["best", "first"]))
def test_lucid_keeps_its_pair_candidates_as_the_running_exclusive_jobs_in_start_order(seed, mtbf, choice):
    trace = synthesize(SynthSpec(jobs=250, nodes=6, vcs=2, load=1.6, seed=seed))
    config = SimConfig(policy="lucid", lucid_sharing="always", pair_choice=choice, node_mtbf=mtbf, node_repair=900,
                       on_no_progress="abandon", until=300_000.0, estimator="oracle")
    resolved = resolve_run(config=config, cluster=trace.vc_nodes,
                           colocation=load_tables(trace, config, True).colocation)
    sim = Simulation(trace.make_jobs(), resolved)
    policy, schedule, checked = sim.policy, sim.policy.schedule, [0]

    def checking(vc, ctx):
        kept = {size: [job for _, job in jobs] for size, jobs in policy._exclusive.get(vc.name, {}).items() if jobs}
        snapshot: dict[int, list] = {}
        for job in vc.running:
            if not job.sharing:
                snapshot.setdefault(job.gpu_num, []).append(job)
        assert kept == snapshot
        checked[0] += bool(snapshot)
        schedule(vc, ctx)

    policy.schedule = checking
    sim.run()
    assert checked[0] and policy.counts["paired"] > 0
