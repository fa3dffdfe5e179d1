"""Tiresias, its Gittins variant and QSSF: hand-computed schedules and their invariants."""

from __future__ import annotations

import random
from bisect import bisect_right
from itertools import accumulate
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from conftest import make_trace
from hypothesis import given, settings
from hypothesis import strategies as st

from simcluster.api import simulate
from simcluster.config import ConfigError, SimConfig
from simcluster.engine import Simulation
from simcluster.estimators import make_estimator
from simcluster.job import Job, JobState
from simcluster.metrics import Observer
from simcluster.policies.quota import queue_streams, walk_quota
from simcluster.policies.tiresias import Tiresias
from simcluster.policies.tiresias_gittins import GittinsIndex, TiresiasGittins
from simcluster.run import resolve_run


def times(rows, vc_nodes, **cfg):
    result = simulate(make_trace(rows, vc_nodes), SimConfig(**cfg))
    jobs = result.jobs.set_index("job_id")
    return [(jobs.at[f"j{i}", "start_time"], jobs.at[f"j{i}", "end_time"]) for i in range(len(rows))], result


# --- tiresias ---------------------------------------------------------------------------------------
def test_tiresias_demotes_a_job_past_its_threshold_and_decides_on_quantum_boundaries():
    # j0 crosses 480 GPU-s after 60 s but is only demoted at the next boundary (120), where j1 takes over;
    # j1's completion at 220 is acted on at 240, when j0 resumes with 880 s + 40 s overhead left.
    rows = [("a", 8, 0, 1000), ("a", 8, 30, 100)]
    got, result = times(rows, {"a": 1}, policy="tiresias", thresholds=(480.0,), quantum=60)
    assert got == [(0, 1160), (120, 220)]
    assert result.jobs.set_index("job_id").at["j0", "preemptions"] == 1


def test_tiresias_keeps_fifo_order_inside_a_queue():
    rows = [("a", 8, 0, 300), ("a", 8, 10, 100), ("a", 8, 20, 100)]
    got, _ = times(rows, {"a": 1}, policy="tiresias", thresholds=(1e9,))
    assert got == [(0, 300), (300, 400), (420, 520)]  # j1 ends at 400, acted on at 420


def test_tiresias_with_three_queues():
    # thresholds 480 and 4800 GPU-s; j0 (8 GPUs) is demoted at 120 (960 > 480) below newcomer j1
    rows = [("a", 8, 0, 2000), ("a", 8, 100, 50)]
    got, _ = times(rows, {"a": 1}, policy="tiresias", thresholds=(480.0, 4800.0))
    assert got == [(0, 2000 + 40 + 60), (120, 170)]


class QueueInversionGuard(Observer):
    """After every decision: no waiting job sits in a higher queue than a running one."""

    def __init__(self) -> None:
        self.sim: Simulation | None = None
        self.checked = 0

    def on_sample(self, now, used_gpus, shared_gpus, running, pending):
        policy: Tiresias = self.sim.policy
        if now % policy.quantum:
            return
        for vc in self.sim.cluster.vcs.values():
            if vc.pending and vc.running:
                best_waiting = min(policy.queue_of(policy.attained(j, now)) for j in vc.pending)
                worst_running = max(policy.queue_of(policy.attained(j, now)) for j in vc.running)
                assert best_waiting >= worst_running, (now, best_waiting, worst_running)
                self.checked += 1


@settings(max_examples=30, deadline=None)
@given(rows=st.lists(st.tuples(st.integers(0, 600), st.integers(1, 900)), min_size=2, max_size=30),
       thresholds=st.lists(st.sampled_from([60.0, 200.0, 600.0, 3000.0]), min_size=1, max_size=3, unique=True))
def test_a_running_job_never_sits_in_a_lower_queue_than_a_waiting_job_that_fits(rows, thresholds):
    # single-GPU jobs: a waiting job fits whenever a lower-queue job holds a GPU
    trace = make_trace([("a", 1, t, d) for t, d in sorted(rows)], {"a": 1})
    guard = QueueInversionGuard()
    config = SimConfig(policy="tiresias", thresholds=tuple(sorted(thresholds)))
    sim = Simulation(trace.make_jobs(), resolve_run(config=config, cluster=trace.vc_nodes), [guard])
    guard.sim = sim
    sim.run()
    assert all(j.state is JobState.FINISHED for j in sim.jobs)


class WaitLog(Observer):
    def __init__(self, job_id: str) -> None:
        self.job_id, self.waits, self.runs, self._since = job_id, [], [], None

    def on_preempt(self, job, now):
        if job.job_id == self.job_id:
            self.runs.append(now - job.run_started_at)
            self._since = now

    def on_start(self, job, now):
        if job.job_id == self.job_id and self._since is not None:
            self.waits.append((now - self._since, self.runs[-1]))
            self._since = None


@pytest.mark.parametrize("knob", [0.0, 2.0])
def test_the_promote_knob_bounds_how_long_a_demoted_job_starves(knob):
    # j0 (8 GPUs, long) is demoted after 120 s; a stream of short single-GPU jobs keeps the top queue busy
    # for 6,000 s. Without the knob j0 waits for the whole stream; with knob 2 never longer than
    # 2 × its last run plus two quanta.
    stream = [("a", 1, t, 50) for t in range(30, 6000, 50) for _ in range(8)]
    rows = [("a", 8, 0, 3000), *stream]
    log = WaitLog("j0")
    simulate(make_trace(rows, {"a": 1}), SimConfig(policy="tiresias", thresholds=(480.0,), promote_knob=knob), [log])
    assert log.waits
    if knob:
        assert all(wait <= knob * run + 120 for wait, run in log.waits)
    else:
        assert max(wait for wait, _ in log.waits) > 5000


def promote_by_scanning(self, vc, ctx, now):
    """The promote knob as written first: every waiting job tested at every pass."""
    for job in [j for j in vc.pending if self._starving(j, now)]:
        self._forgiven[job] = self._forgiven.get(job, 0.0) + self.attained(job, now)
        ctx.requeue(job)
        self.promotions += 1


def promotion_timers_by_scanning(self, vc, ctx, now):
    for job in vc.pending:
        last = self.last_run(job)
        if last > 0 and self.attained(job, now) > 0:
            ctx.wake_at(self._boundary_at_or_after(max(now + self.quantum, job.pending_since + self.knob * last)))


@settings(max_examples=25, deadline=None)
@given(rows=st.lists(st.tuples(st.sampled_from([1, 2, 4, 8]), st.integers(0, 3000), st.integers(1, 4000)),
                     min_size=2, max_size=40),
       policy=st.sampled_from(["tiresias", "tiresias-gittins"]), knob=st.sampled_from([0.5, 1.0, 2.0]),
       mtbf=st.sampled_from([0.0, 5_000.0]))
def test_the_promote_knob_by_eligibility_times_decides_as_scanning_every_waiting_job(rows, policy, knob, mtbf):
    rows = [("a", g, t, d) for g, t, d in sorted(rows, key=lambda r: r[1])]
    config = {"policy": policy, "thresholds": (300.0, 3000.0), "promote_knob": knob, "node_mtbf": mtbf,
              "node_repair": 600, "on_no_progress": "abandon"}
    with pytest.MonkeyPatch.context() as patch:
        fast, a = times(rows, {"a": 2}, **config)
        patch.setattr(Tiresias, "_promote_starving", promote_by_scanning)
        patch.setattr(Tiresias, "_set_promotion_timers", promotion_timers_by_scanning)
        scanned, b = times(rows, {"a": 2}, **config)
    assert fast == scanned
    assert a.timeline.equals(b.timeline)
    assert a.summary["promotions"] == b.summary["promotions"]


# --- tiresias-gittins ----------------------------------------------------------------------------
def test_gittins_index_from_finished_services():
    g = GittinsIndex()
    assert g.index(0, float("inf")) == 0.0  # nothing finished yet
    for s in (800, 800, 8000):
        g.add(s)
    g.refresh()
    assert g.index(0, float("inf")) == pytest.approx(3 / 9600)
    assert g.index(480, float("inf")) == pytest.approx(3 / (9600 - 3 * 480))
    assert g.index(0, 1000) == pytest.approx(2 / (1600 + 1000))
    assert g.index(9000, 100) == 0.0  # outlived every finished job



@settings(max_examples=50, deadline=None)
@given(st.lists(st.lists(st.floats(min_value=0, max_value=1e7, allow_nan=False), max_size=20), max_size=8))
def test_gittins_refreshed_piece_by_piece_keeps_the_same_sums_as_summing_from_scratch(batches):
    g, seen = GittinsIndex(), []
    for batch in batches:
        for s in batch:
            g.add(s)
        seen += batch
        g.refresh()
        assert g._services.tolist() == sorted(seen)
        assert g._prefix.tolist() == [0.0, *accumulate(sorted(seen))]  # exactly: same additions, same order

@settings(max_examples=800, deadline=None)
@given(services=st.lists(st.integers(1, 40).map(lambda k: k * 7.3), max_size=30),
       thresholds=st.lists(st.integers(1, 40).map(lambda k: k * 7.3), min_size=1, max_size=3, unique=True),
       jobs=st.lists(st.tuples(st.sampled_from([1, 2, 4, 8]), st.floats(0.0, 30.0), st.floats(0.0, 100.0),
                               st.integers(0, 3)), min_size=1, max_size=8),
       steps=st.lists(st.floats(0.0, 9.0), min_size=1, max_size=12))
def test_gittins_running_jobs_ranked_as_arrays_are_keyed_and_ordered_as_by_the_index_exactly(services, thresholds,
                                                                                             jobs, steps):
    # _ranked computes every running job's key as arrays, _split_running one by one from each job's segment of the
    # distribution kept between passes; both must be the very floats _key computes through GittinsIndex.index,
    # pass after pass (odd thresholds included, where attained + quantum can miss the threshold, and a service
    # equal to it, by an ulp), ranked as sorting (key, trace index) ranks them
    policy = TiresiasGittins(SimConfig(policy="tiresias-gittins", thresholds=tuple(thresholds)))
    for service in services:
        policy.gittins.add(service)
    policy.gittins.refresh()
    running = {}
    vc = SimpleNamespace(name="a", running=running)
    for i, (gpus, busy, started, submit) in enumerate(jobs):
        job = Job(index=i, job_id=f"j{i}", vc="a", gpu_num=gpus, submit_time=submit, duration=1e9)
        job.state, job.busy_time, job.run_started_at = JobState.RUNNING, busy, started
        running[job] = None
        policy.on_run_start(job, vc)
    now = 100.0
    for step in steps:
        now += step
        columns = policy._columns["a"]
        attained = columns.attained(now)
        ends = policy._ends[np.searchsorted(policy._ends[:-1], attained, "left")]
        assert policy.gittins.indices(attained, ends).tolist() == [-policy._key(j, now)[1] for j in columns.jobs]
        _, entries = policy._split_running(vc, now, None)  # (the one-by-one way: each job's segment kept)
        assert [key for key, _ in entries] == [policy._key(job, now) for job in running]
        ranked, gpus, place = policy._ranked(vc, now)
        keyed = sorted((policy._key(job, now), job.index, job) for job in running)
        assert ranked == [job for _, _, job in keyed]
        assert gpus.tolist() == [job.gpu_num for job in ranked]
        keys = [key for key, _, _ in keyed]
        for probe in [*keys, (0, 0.0, 0), (0, -1.0, 5), (len(thresholds), 0.0, 9)]:
            assert place(probe) == bisect_right(keys, probe)
    for job in list(running)[::2]:  # a stopped job's row is taken by the last one
        policy.on_run_stop(job, vc)
        del running[job]
    assert sorted(j.index for j in policy._columns["a"].jobs) == sorted(j.index for j in running)
    assert policy._columns["a"].index.tolist() == [j.index for j in policy._columns["a"].jobs]


def test_tiresias_gittins_serves_the_job_likely_to_finish_soonest(monkeypatch):
    monkeypatch.setattr(TiresiasGittins, "REFRESH_SECONDS", 0.0)
    # services seen: 800, 800 → a fresh job (index 2/1600) beats j2, which has outlived them (index 0)
    rows = [("a", 8, 0, 100), ("a", 8, 0, 100), ("a", 8, 0, 1000), ("a", 8, 400, 100)]
    got, _ = times(rows, {"a": 1}, policy="tiresias-gittins", thresholds=(1e9,))
    assert got == [(0, 100), (120, 220), (240, 1400), (420, 520)]



@settings(max_examples=80, deadline=None)
@given(rows=st.lists(st.tuples(st.sampled_from([1, 2, 4, 8]), st.integers(0, 3000), st.integers(1, 4000)),
                     min_size=2, max_size=40),
       refresh=st.sampled_from([0.0, 120.0, 600.0]), knob=st.sampled_from([0.0, 1.0]),
       vcs=st.sampled_from([{"a": 2}, {"a": 1, "b": 1}]), ranked_from=st.sampled_from([1, 3, 64]))
def test_tiresias_gittins_decides_the_same_by_its_shortcut_and_ranked_walk_as_by_the_general_walk(rows, refresh,
                                                                                                 knob, vcs,
                                                                                                 ranked_from):
    rows = [("ab"[t % len(vcs)], g, t, d) for g, t, d in sorted(rows, key=lambda r: r[1])]
    config = {"policy": "tiresias-gittins", "thresholds": (900.0, 9000.0), "promote_knob": knob}
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(TiresiasGittins, "REFRESH_SECONDS", refresh)
        patch.setattr(TiresiasGittins, "RANKED_FROM", ranked_from)  # (1: every pass ranks as arrays; 64: none here)
        fast, a = times(rows, vcs, **config)
        patch.setattr(TiresiasGittins, "decide", Tiresias.decide)  # running keys, then the queue, then the walk
        patch.setattr(TiresiasGittins, "_set_timers", timers_of_gittins_one_by_one)
        general, b = times(rows, vcs, **config)
    assert fast == general
    assert a.timeline.equals(b.timeline)


_TIRESIAS_TIMERS = Tiresias._set_timers


def timers_of_gittins_one_by_one(self, vc, ctx, now):
    """TiresiasGittins._set_timers as it was before its running jobs were read as arrays."""
    _TIRESIAS_TIMERS(self, vc, ctx, now)
    if vc.pending:
        ctx.wake_at(now + self.quantum)


def walk_always(vc, ctx, used, rest, running):
    """Tiresias.walk_rest without its shortcut: the quota walk at every decision."""
    if used > vc.total_gpus:
        used, rest = 0, running
    walk_quota(vc, ctx, rest, queue_streams(vc, vc.total_gpus - used), pending_first_on_ties=False, reserved=used)


@settings(max_examples=25, deadline=None)
@given(rows=st.lists(st.tuples(st.sampled_from([1, 2, 4, 8]), st.integers(0, 3000), st.integers(1, 4000)),
                     min_size=2, max_size=40),
       policy=st.sampled_from(["tiresias", "tiresias-gittins"]))
def test_tiresias_skips_only_walks_that_would_change_nothing(rows, policy):
    rows = [("a", g, t, d) for g, t, d in sorted(rows, key=lambda r: r[1])]
    with pytest.MonkeyPatch.context() as patch:
        fast, a = times(rows, {"a": 2}, policy=policy, thresholds=(900.0, 9000.0))
        patch.setattr(Tiresias, "walk_rest", staticmethod(walk_always))
        walked, b = times(rows, {"a": 2}, policy=policy, thresholds=(900.0, 9000.0))
    assert fast == walked
    assert a.timeline.equals(b.timeline)


# --- qssf ------------------------------------------------------------------------------------------
def test_qssf_orders_by_estimated_service_once_older_jobs_wait():
    rows = [("a", 8, 0, 100), ("a", 4, 10, 500), ("a", 2, 10, 400), ("a", 8, 20, 10)]
    got, result = times(rows, {"a": 1}, policy="qssf", estimator="oracle")
    assert got == [(0, 100), (110, 610), (110, 510), (100, 110)]
    assert result.summary["estimate_quality"]["mae"] == 0


def test_qssf_orders_newcomers_by_gpu_count_like_the_artifacts():
    rows = [("a", 8, 0, 10), ("a", 1, 0, 1000)]
    got, _ = times(rows, {"a": 1}, policy="qssf")
    assert got == [(1000, 1010), (0, 1000)]


def test_history_estimator_falls_back_from_user_and_gpus_to_user_to_everyone():
    est = make_estimator(SimConfig(estimator="history"))
    job = lambda user, gpus, d=0: Job(index=0, job_id="x", vc="a", gpu_num=gpus, submit_time=0, duration=d, user=user)
    assert est.estimate(job("u", 1), 0) == 0.0
    est.observe(job("u", 1, 100), 0)
    est.observe(job("u", 2, 300), 0)
    est.observe(job("v", 1, 1000), 0)
    assert est.estimate(job("u", 1), 0) == 100
    assert est.estimate(job("u", 4), 0) == 200
    assert est.estimate(job("w", 1), 0) == pytest.approx(1400 / 3)


def test_file_estimates_are_validated(tmp_path: Path):
    bad = tmp_path / "est.csv"
    bad.write_text("job_id,priority\nj0,12\nj1,soon\n")
    with pytest.raises(ValueError, match=r"est.csv, line 3, field 'priority': not a number: 'soon'"):
        make_estimator(SimConfig(estimator="file", estimates=str(bad)))
    with pytest.raises(ValueError, match="needs --estimates"):
        make_estimator(SimConfig(estimator="file"))


def test_file_estimates_drive_the_order(tmp_path: Path):
    est = tmp_path / "est.csv"
    est.write_text("job_id,priority\nj0,100\nj1,5\nj2,1\n")  # j2 believed shortest although it is not
    rows = [("a", 8, 0, 100), ("a", 8, 10, 20), ("a", 8, 20, 300)]
    got, result = times(rows, {"a": 1}, policy="qssf", estimator="file", estimates=str(est))
    assert got == [(0, 100), (400, 420), (100, 400)]
    assert result.summary["estimate_quality"]["jobs"] == 3


def test_ebm_estimator_trains_weekly_on_finished_jobs_and_reports_quality():
    from simcluster.traces.synth import SynthSpec, synthesize

    trace = synthesize(SynthSpec(jobs=600, nodes=8, vcs=2, seed=4, load=0.5))
    result = simulate(trace, SimConfig(policy="qssf", estimator="ebm", retrain_interval=86400.0))
    quality = result.summary["estimate_quality"]
    assert result.summary["jobs"] == 600 and quality["jobs"] == 600
    assert quality["mae"] > 0 and quality["median_relative_error"] >= 0


def _finished_jobs(estimator, first: int, n: int, now: float) -> None:
    """Submit and finish ``n`` jobs at ``now`` whose duration is 100 s per GPU (plus a little noise)."""
    rng = random.Random(first)
    for i in range(first, first + n):
        gpus = rng.choice([1, 2, 4, 8])
        job = Job(index=i, job_id=f"j{i}", vc="a", gpu_num=gpus, submit_time=int(now), user=f"u{i % 5}",
                  duration=int(100 * gpus * rng.uniform(0.9, 1.1)))
        estimator.estimate(job, now)
        estimator.observe(job, now)


def _probe(gpus: int = 1) -> Job:
    return Job(index=10**6 + gpus, job_id=f"probe{gpus}", vc="a", gpu_num=gpus, submit_time=0, duration=1, user="u0")


def test_ebm_estimator_learns_the_duration_from_the_gpu_count():
    estimator = make_estimator(SimConfig(estimator="ebm", retrain_interval=100.0))
    estimator.estimate(_probe(), 0.0)  # the first submission starts the clock: the first training is due at 100
    _finished_jobs(estimator, 0, 300, 50.0)
    assert estimator.estimate(_probe(8), 100.0) == pytest.approx(800, rel=0.15)
    assert estimator.estimate(_probe(1), 100.0) == pytest.approx(100, rel=0.15)
    assert estimator.trainings == 1 and estimator.trained_on == 300


def test_ebm_estimator_retrains_only_when_enough_new_jobs_finished():
    estimator = make_estimator(SimConfig(estimator="ebm", retrain_interval=100.0, retrain_growth=0.25))
    estimator.estimate(_probe(), 0.0)
    _finished_jobs(estimator, 0, 120, 50.0)
    estimator.estimate(_probe(), 100.0)
    assert estimator.trainings == 1 and estimator.trained_on == 120
    _finished_jobs(estimator, 120, 20, 150.0)  # 140 < 120 × 1.25: not worth a training
    estimator.estimate(_probe(), 200.0)
    assert estimator.trainings == 1 and estimator.trained_on == 120
    _finished_jobs(estimator, 140, 10, 250.0)  # 150 = 120 × 1.25
    estimator.estimate(_probe(), 300.0)
    assert estimator.trainings == 2 and estimator.trained_on == 150


def test_ebm_estimator_waits_for_a_hundred_finished_jobs_and_retrains_every_interval_at_growth_zero():
    estimator = make_estimator(SimConfig(estimator="ebm", retrain_interval=100.0, retrain_growth=0.0))
    estimator.estimate(_probe(), 0.0)
    _finished_jobs(estimator, 0, 99, 50.0)
    estimator.estimate(_probe(), 100.0)
    assert estimator.trainings == 0  # too few to learn from: it answers like the history estimator
    _finished_jobs(estimator, 99, 1, 150.0)
    for now in (200.0, 300.0):
        estimator.estimate(_probe(), now)
    assert estimator.trainings == 2 and estimator.trained_on == 100


@pytest.mark.parametrize("boosting, bags", [("fast", 1), ("interpret", 2)])
def test_ebm_estimator_boosts_as_the_boosting_setting_says(boosting, bags):
    estimator = make_estimator(SimConfig(estimator="ebm", retrain_interval=100.0, boosting=boosting))
    estimator.estimate(_probe(), 0.0)
    _finished_jobs(estimator, 0, 150, 50.0)
    estimator.estimate(_probe(), 100.0)
    assert estimator.model.outer_bags == bags
    assert estimator.estimate(_probe(4), 100.0) == pytest.approx(400, rel=0.2)


def test_an_unknown_boosting_is_refused_naming_the_choices():
    with pytest.raises(ConfigError, match="fast.*interpret"):
        SimConfig.from_settings({"boosting": "slow"})
