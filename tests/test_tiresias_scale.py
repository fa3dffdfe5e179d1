"""Tiresias' crossing timers set once per run decide as the timers set for every running job at every pass
(issue 55, item 2).

A pass sets a timer at the boundary where each running job next crosses a threshold.  A timer stays set until it
rings, and a run's crossing stays where it was, so only the runs that started, or whose timer rang, since the
last pass need one: tiresias-gittins notes, per run, until when the boundary it worked out holds (on the columns
for its array pass, in a dict and a heap for its one-job-at-a-time pass).  Held equal here to the plain way —
the same lives of every job and the same passes in the same order — and the two claims it rests on checked
directly: the boundary worked out at a pass is the one every later pass before it works out.
"""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from test_incremental import outcome, random_jobs

from simcluster.config import SimConfig
from simcluster.job import Job, JobState
from simcluster.policies.tiresias import Tiresias
from simcluster.policies.tiresias_gittins import CROSSING_MARGIN, TiresiasGittins


class SmallGittins(TiresiasGittins):
    """tiresias-gittins taking its array path from 4 running jobs on (the test's VCs hold a few dozen)."""

    RANKED_FROM = 4


class PlainGittins(SmallGittins):
    """The same, setting every running job's crossing timer at every pass (the way before issue 55)."""

    def _crossings_not_set(self, vc, now):
        return list(vc.running)

    def _wake_at_crossings(self, columns, ctx, now):
        attained, queue = self._attained_and_queue(columns, now)
        crossing = queue < len(self.thresholds)
        when = now + (self._ends[queue[crossing]] - attained[crossing]) / columns.gpus[crossing]
        for boundary in dict.fromkeys(((np.floor(when / self.quantum) + 1) * self.quantum).tolist()):
            ctx.wake_at(boundary)


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 1_000_000), knob=st.sampled_from([0.0, 2.0]), mtbf=st.sampled_from([0.0, 50_000.0]),
       thresholds=st.sampled_from([(18_000.0,), (3_600.0, 36_000.0), (1_000.0, 7_000.0, 40_000.0)]),
       ranked_from=st.sampled_from([4, 10_000]))
def test_gittins_timers_set_once_per_run_decide_as_timers_set_at_every_pass(seed, knob, mtbf, thresholds,
                                                                            ranked_from):
    config = SimConfig(policy="tiresias-gittins", promote_knob=knob, node_mtbf=mtbf, node_repair=900,
                       on_no_progress="abandon", thresholds=thresholds, until=400_000.0)
    kept, plain = SmallGittins(config), PlainGittins(config)
    kept.RANKED_FROM = plain.RANKED_FROM = ranked_from  # (10,000: only the one-job-at-a-time pass)
    assert outcome(random_jobs(seed, 120), config, policy=kept) == outcome(random_jobs(seed, 120), config,
                                                                          policy=plain)


def test_most_passes_work_out_no_crossing_on_a_busy_vc():
    """Not a test of nothing: the passes work out far fewer crossings than the running jobs they see, on both
    ways (the plain way works out one per running job at every pass)."""
    for ranked_from in (4, 10_000):
        seen, worked_out = crossings_worked_out(ranked_from)
        assert seen > 1_000 and worked_out < seen / 4, (ranked_from, seen, worked_out)


def crossings_worked_out(ranked_from: int) -> tuple[int, int]:
    """(running jobs seen by the passes that set crossing timers, crossings they worked out) on a busy run."""
    config = SimConfig(policy="tiresias-gittins", until=400_000.0)
    policy = SmallGittins(config)
    policy.RANKED_FROM = ranked_from
    counts = [0, 0]
    one_by_one, as_arrays = policy._crossings_not_set, policy._wake_at_crossings

    def noted_one_by_one(vc, now):
        found = one_by_one(vc, now)
        counts[0], counts[1] = counts[0] + len(vc.running), counts[1] + len(found)
        return found

    def noted_as_arrays(columns, ctx, now):
        counts[0], counts[1] = counts[0] + len(columns), counts[1] + len(columns.due(now))
        as_arrays(columns, ctx, now)

    policy._crossings_not_set, policy._wake_at_crossings = noted_one_by_one, noted_as_arrays
    outcome(random_jobs(3, 200), config, policy=policy)
    return counts[0], counts[1]


def array_boundary(gpus: int, busy: float, started: float, threshold: float, now: float, quantum: float) -> float:
    """The boundary after a running job's crossing as the array pass works it out at ``now``."""
    attained = np.array([gpus]) * (np.array([busy]) + (now - np.array([started])))
    when = now + (np.array([threshold]) - attained) / np.array([gpus])
    return float(((np.floor(when / quantum) + 1) * quantum)[0])


@settings(max_examples=300, deadline=None)
@given(gpus=st.sampled_from([1, 2, 3, 4, 7, 8, 16, 24, 64, 1024]), busy=st.integers(0, 400) | st.floats(0, 20_000),
       started=st.integers(0, 3_000), threshold=st.sampled_from([1_000.0, 18_000.0, 36_000.0, 250_000.0]),
       quantum=st.sampled_from([60.0, 30.0, 7.0]), first=st.integers(0, 50), later=st.integers(0, 400))
def test_a_steady_crossing_gives_the_same_boundary_at_every_pass_before_it(gpus, busy, started, threshold, quantum,
                                                                          first, later):
    policy = TiresiasGittins(SimConfig(policy="tiresias-gittins", thresholds=(threshold,), quantum=quantum))
    started = float(started) * quantum  # (a run starts at a pass)
    now = started + first * quantum
    attained = gpus * (busy + (now - started))
    if attained > threshold:
        return  # (past the threshold: no crossing)
    when = now + (threshold - attained) / gpus
    boundary = array_boundary(gpus, busy, started, threshold, now, quantum)
    if not policy._steady(gpus, busy, started, threshold, when, now):
        return
    later_pass = now + later * quantum
    if later_pass < when - CROSSING_MARGIN:  # (the row's note holds: the pass sets no timer for it)
        assert gpus * (busy + (later_pass - started)) <= threshold  # the same queue
        assert array_boundary(gpus, busy, started, threshold, later_pass, quantum) == boundary


@settings(max_examples=300, deadline=None)
@given(gpus=st.sampled_from([1, 2, 3, 7, 8, 24, 512]), busy=st.integers(0, 400) | st.floats(0, 20_000),
       started=st.integers(0, 3_000), forgiven=st.sampled_from([0.0, 1234.5678, 36263.53520932251]),
       threshold=st.sampled_from([1_000.0, 18_000.0, 36_000.0]), first=st.integers(0, 50), later=st.integers(0, 400))
def test_the_stepped_crossing_boundary_is_the_same_from_every_pass_before_it(gpus, busy, started, forgiven,
                                                                            threshold, first, later):
    policy = Tiresias(SimConfig(policy="tiresias", thresholds=(threshold,)))
    job = Job(index=0, job_id="0", vc="v", gpu_num=gpus, submit_time=0, duration=1e9)
    job.state, job.busy_time, job.run_started_at = JobState.RUNNING, busy, started * 60.0
    if forgiven:
        policy._forgiven[job] = forgiven

    def from_pass(now: float) -> float:
        attained = policy.attained(job, now)
        crossing = now + (threshold - attained) / gpus
        return policy.crossing_boundary(job, threshold, (math.floor(crossing / 60.0) + 1) * 60.0, now)

    now = job.run_started_at + first * 60.0
    if policy.attained(job, now) > threshold:
        return
    boundary = from_pass(now)
    later_pass = now + later * 60.0
    if later_pass < boundary:
        assert policy.queue_of(policy.attained(job, later_pass)) == policy.queue_of(policy.attained(job, now))
        assert from_pass(later_pass) == boundary
