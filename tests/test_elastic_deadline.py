"""ElasticFlow's and EDF's cores without the engine: the free-GPU timeline, minimum satisfactory shares,
all-or-nothing admission, spare GPUs by marginal return, and greedy EDF.

The rates below are a made-up scaling curve (1, 2 and 4 GPUs at 1, 1.8 and 3 iterations per second), so
that every expected plan can be worked out by hand in the test's comment."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simcluster.elastic import elasticflow_plan
from simcluster.elastic.edf import edf_admit, edf_allocate, plan_edf
from simcluster.elastic.elasticflow_plan import (
    DeadlineJob,
    admit,
    align,
    allocate_spare,
    plan_in_order,
    plan_min_share,
)
from simcluster.elastic.timeline import Timeline, gpu_time

RATES = {1: 1.0, 2: 1.8, 4: 3.0}


def job(key: str, work: float, deadline: float, levels: tuple[int, ...] = (1, 2, 4)) -> DeadlineJob:
    return DeadlineJob(key, work, deadline, list(levels), RATES.__getitem__)


def test_a_reservation_takes_gpus_out_over_its_span_only() -> None:
    line = Timeline({0: 8})
    line.reserve(10, 20, 3)
    assert line.points() == [(0, 8), (10, 5), (20, 8)]
    line.reserve(10, 20, -3)  # giving them back merges the steps again
    assert line.points() == [(0, 8)]
    with pytest.raises(ValueError, match="over-reserved"):
        line.reserve(0, 5, 9)
    line.drop_before(15)
    assert line.points() == [(15, 8)] and line.free_at(3) == 8


def test_gpus_are_taken_period_by_period_over_consecutive_breakpoints_only() -> None:
    line = Timeline({0: 8, 10: 6, 20: 8, 30: 5})
    assert line.window(10, 30) == ([10, 20], [6, 8]) and line.window(31, 40) == ([], [])
    line.take_each([10, 20], [2, 3])
    assert line.points() == [(0, 8), (10, 4), (20, 5), (30, 5)]
    with pytest.raises(ValueError, match="over-reserved at 20: 5 free, 6 asked"):
        line.take_each([10, 20], [1, 6])
    with pytest.raises(ValueError, match="consecutive"):
        line.take_each([0, 20], [1, 1])
    assert line.points() == [(0, 8), (10, 4), (20, 5), (30, 5)]  # (a refused take changes nothing)
    line.merge()
    assert line.points() == [(0, 8), (10, 4), (20, 5)] and line[20] == 5 and 30 not in line


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 90), st.integers(1, 30), st.integers(-3, 3)), max_size=8),
       st.integers(0, 120))
def test_merging_only_up_to_where_a_timeline_changed_merges_it_all(changes, until) -> None:  # type: ignore[no-untyped-def]
    line = Timeline({0: 100})
    for start, length, gpus in changes:
        line.reserve(start, start + length, gpus)  # (merged: whatever is left past ``until`` is too)
    for start, length, gpus in changes:  # changes that end by ``until``, unmerged
        if start + length <= until:
            line.reserve(start, start + length, -gpus, merge=False)
    whole = line.copy()
    whole.merge()
    line.merge(until)
    assert line.points() == whole.points()


def test_the_share_is_the_lowest_level_that_meets_the_deadline_run_as_late_as_needed() -> None:
    # 2 GPUs from 0 to 300 make 540 < 580; 4 GPUs from 100 make 600 ≥ 580: 2 GPUs until 100 (180 done),
    # then 4 GPUs for the 400 left: ceil(400 / 3) = 134 s, so the job ends at 234
    plan = plan_min_share(job("a", 580, 300), Timeline({0: 4, 100: 4}), now=0, slot=None)
    assert (plan.steps, plan.end, plan.real_end, plan.meets_deadline) == ([(0, 2), (100, 4)], 234, 234, True)
    assert plan.timeline.points() == [(0, 2), (100, 0), (234, 4)]


def test_plans_on_the_slot_grid_round_the_deadline_and_the_end_up() -> None:
    # 1 GPU suffices: 250 iterations by 250 s, the plan ending on the grid at 300
    plan = plan_min_share(job("a", 250, 290), Timeline({0: 4}), now=0, slot=60)
    assert (plan.steps, plan.end, plan.real_end, plan.meets_deadline) == ([(0, 1)], 300, 250, True)
    assert align(0, 250, 60) == 300 and align(30, 90, 60) == 90


def test_a_job_no_level_can_finish_in_time_runs_at_its_top_level_and_is_late() -> None:
    # 4 GPUs until 100 make 300 of 1000; then 4 GPUs again from the deadline: ceil(700 / 3) = 234 s more
    plan = plan_min_share(job("a", 1000, 100), Timeline({0: 4}), now=0, slot=None)
    assert plan.steps == [(0, 4)] and plan.real_end == 334 and not plan.meets_deadline


def test_a_job_already_past_its_deadline_runs_at_its_top_level_on_and_off_the_grid() -> None:
    # deadline 50, planned at 100: no period is left before it (on the grid its deadline rounds to 100 itself)
    for slot, end in ((None, 300), (60, 300)):
        plan = plan_min_share(job("a", 600, 50), Timeline({0: 4}), now=100, slot=slot)
        assert plan.steps == [(100, 4)] and plan.real_end == end and not plan.meets_deadline
        probe = plan_min_share(job("a", 600, 50), Timeline({0: 4, 200: 4}), now=100, slot=slot, first=2)
        assert probe.steps[0] == (100, 2) and not probe.meets_deadline


def test_jobs_are_planned_in_deadline_order_on_what_earlier_ones_leave() -> None:
    late, early = job("late", 300, 300), job("early", 180, 100)
    plans, line, ok = plan_in_order([late, early], total_gpus=4, now=0, slot=None)
    assert ok
    assert plans[1].steps == [(0, 2)] and plans[1].real_end == 100  # 2 GPUs: 180 in 100 s
    assert plans[0].steps == [(0, 1)] and plans[0].real_end == 300  # 1 GPU is its share on what is left
    assert line.points() == [(0, 1), (100, 3), (300, 4)]


def test_an_arrival_batch_is_admitted_whole_or_not_at_all() -> None:
    admitted = [job("a", 3 * 200, 200)]  # needs all 4 GPUs until 200
    assert admit(admitted, [job("b", 100, 400)], total_gpus=4, now=0, slot=None)
    assert not admit(admitted, [job("b", 100, 400), job("c", 100, 150)], total_gpus=4, now=0, slot=None)
    assert not admit(admitted, [job("c", 100, 150)], total_gpus=4, now=0, slot=None)


def planned(jobs: list[DeadlineJob], total: int) -> Timeline:
    plans, line, _ = plan_in_order(jobs, total, now=0, slot=None)
    for j, p in zip(jobs, plans, strict=True):
        j.plan, j.gpus = p, p.gpus_at(0)
    return line


def test_spare_gpus_go_first_to_a_job_waiting_with_none() -> None:
    busy, waiting = job("busy", 100, 1000), job("waiting", 200, 2000)
    line = planned([busy, waiting], 4)
    waiting.gpus, waiting.plan = 0, waiting.plan  # as if it had not started yet
    line = allocate_spare([busy, waiting], line, now=0, slot=None)
    assert waiting.gpus >= 1
    assert busy.gpus + waiting.gpus + line.free_at(0) == 4


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(10, 5000), st.integers(50, 3000)), min_size=1, max_size=6),
       st.sampled_from([4, 8, 16]), st.sampled_from(["lazy", "all"]))
def test_spare_gpus_never_oversubscribe_the_cluster(specs, total, rerank) -> None:  # type: ignore[no-untyped-def]
    jobs = [job(f"j{i}", work, deadline) for i, (work, deadline) in enumerate(specs)]
    line = planned(jobs, total)
    before = sum(j.gpus for j in jobs)
    line = allocate_spare(jobs, line, now=0, slot=None, rerank=rerank)
    after = sum(j.gpus for j in jobs)
    assert before <= after <= total
    assert after + line.free_at(0) == total
    assert all(j.gpus in (0, 1, 2, 4) for j in jobs)
    # every job's plan is its share of the timeline left: giving every plan back empties the cluster again
    for j in jobs:
        assert j.plan is not None
        for (t, g), (t_next, _) in zip(j.plan.steps, [*j.plan.steps[1:], (j.plan.end, 0)], strict=True):
            line.reserve(t, t_next, -g)
    assert line.points() == [(0, total)]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(10, 5000), st.integers(50, 3000)), min_size=1, max_size=6),
       st.sampled_from([4, 8, 16]), st.sampled_from(["lazy", "all"]))
def test_the_hand_out_stops_only_when_no_job_can_take_its_next_level(specs, total, rerank) -> None:  # type: ignore[no-untyped-def]
    jobs = [job(f"j{i}", work, deadline) for i, (work, deadline) in enumerate(specs)]
    line = allocate_spare(jobs, planned(jobs, total), now=0, slot=None, rerank=rerank)
    step_up = {0: 1, 1: 1, 2: 2}  # GPUs a job at that level needs to reach the next (levels 1, 2, 4)
    assert all(j.gpus == 4 or line.free_at(0) < step_up[j.gpus] for j in jobs)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(10, 20000), st.integers(50, 6000)), min_size=1, max_size=8),
       st.sampled_from([4, 8, 16]), st.sampled_from(["lazy", "all"]), st.sampled_from([None, 60.0]))
def test_a_hand_out_plans_as_if_each_probe_released_its_job_afresh(specs, total, rerank, slot) -> None:  # type: ignore[no-untyped-def]
    # the hand-out keeps each job's timeline without it between its own step-ups; planning every probe from
    # scratch (releasing the job's plan from the timeline of the moment) must give the same counts and plans
    def fresh_probe(self, job, step):  # type: ignore[no-untyped-def]
        released = self.line.copy()
        for (t, g), (t_next, _) in zip(job.plan.steps, [*job.plan.steps[1:], (job.plan.end, 0)], strict=True):
            if t_next > self.now and g:
                released.reserve(max(t, self.now), t_next, -g, merge=False)
        released.merge()
        return plan_min_share(job, released, self.now, self.slot, first=step)

    def hand_out() -> tuple[list[tuple[int, list[tuple[float, int]], float]], list[tuple[float, int]]]:
        jobs = [job(f"j{i}", work, deadline) for i, (work, deadline) in enumerate(specs)]
        plans, line, _ = plan_in_order(jobs, total, now=0, slot=slot)
        for j, p in zip(jobs, plans, strict=True):
            j.plan, j.gpus = p, p.gpus_at(0)
        line = allocate_spare(jobs, line, now=0, slot=slot, rerank=rerank)
        return [(j.gpus, j.plan.steps, j.plan.end) for j in jobs if j.plan], line.points()

    kept = hand_out()
    reused = elasticflow_plan._Handout.probe
    elasticflow_plan._Handout.probe = fresh_probe  # type: ignore[method-assign]
    try:
        assert hand_out() == kept
    finally:
        elasticflow_plan._Handout.probe = reused  # type: ignore[method-assign]


def test_lazy_reranking_takes_the_leader_when_one_job_may_grow() -> None:
    # one job, 4 GPUs, share 1: both modes grow it level by level to 4
    for rerank in ("lazy", "all"):
        solo = job("solo", 100, 1000)
        line = allocate_spare([solo], planned([solo], 4), now=0, slot=None, rerank=rerank)
        assert solo.gpus == 4 and line.free_at(0) == 0


def test_an_unknown_rerank_rule_is_refused() -> None:
    solo = job("solo", 100, 1000)
    with pytest.raises(ValueError, match="rerank must be"):
        allocate_spare([solo], planned([solo], 4), now=0, slot=None, rerank="some")


def test_a_plan_counts_its_gpu_seconds() -> None:
    assert gpu_time([(0, 2), (100, 4)], 234) == 2 * 100 + 4 * 134


# ----------------------------------------------------------------------------- EDF
def test_edf_gives_each_job_its_top_level_in_deadline_order_else_what_fits() -> None:
    jobs = [job("c", 1, 900), job("a", 1, 100), job("b", 1, 500, levels=(1, 2))]
    assert edf_allocate(jobs, 7) == {"a": 4, "b": 2, "c": 1}
    assert edf_allocate(jobs, 5) == {"a": 4, "b": 1, "c": 0}


def test_an_edf_plan_takes_what_is_free_period_by_period() -> None:
    # 1 GPU free until 100 (100 done), then 4 GPUs for the 500 left: ceil(500 / 3) = 167 s, ends at 267
    plan = plan_edf(job("a", 600, 300), Timeline({0: 1, 100: 4}), now=0, total_gpus=4, slot=None)
    assert (plan.steps, plan.real_end, plan.meets_deadline) == ([(0, 1), (100, 4)], 267, True)
    on_grid = plan_edf(job("a", 600, 300), Timeline({0: 1, 100: 4}), now=0, total_gpus=4, slot=60)
    assert on_grid.end == 300 and on_grid.real_end == 267


def test_edf_admission_declines_a_batch_that_would_make_a_job_late() -> None:
    admitted = [job("a", 3 * 200, 200)]
    assert edf_admit(admitted, [job("b", 100, 400)], total_gpus=4, now=0, slot=None)
    assert not edf_admit(admitted, [job("c", 100, 150)], total_gpus=4, now=0, slot=None)
