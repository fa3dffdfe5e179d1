"""The rules of ElasticFlow's simulator that `--preset elasticflow-artifact` now reproduces for `elasticflow`
(issue 45): the GPU-seconds its marginal returns count, when a decision's overhead is paid, and that EDF is left
as it was.  Jobs of one linear model (1 iteration per GPU-second) on one node of 8 GPUs, worked out on paper."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pandas as pd
import pytest
from conftest import make_trace

from simcluster.api import simulate
from simcluster.config import SimConfig
from simcluster.elastic.elasticflow_model import ElasticFlowThroughputs
from simcluster.elastic.elasticflow_plan import DeadlineJob, plan_min_share
from simcluster.elastic.state import ElasticState
from simcluster.elastic.timeline import Timeline
from simcluster.elastic.work import ElasticFlowWork
from simcluster.engine import Simulation
from simcluster.job import Job
from simcluster.metrics.elastic import deadline_figures, judged_column
from simcluster.policies.elasticflow import Edf, ElasticFlow, Phantom, VcState
from simcluster.policies.elasticflow_nodes import NodeBook, artifact_switches
from simcluster.policies.fifo import Fifo
from simcluster.presets import resolve_config
from simcluster.run import resolve_run

LEVELS = (1, 2, 4, 8)
TABLE = ElasticFlowThroughputs({"linear": {8: {g: float(g) for g in LEVELS}}})


def linear(work: float, deadline: float) -> DeadlineJob:
    return DeadlineJob("j", work, deadline, list(LEVELS), float)


def flow_job(index: int, iterations: float, deadline: float, submit: float = 0.0) -> Job:
    job = Job(index=index, job_id=f"j{index}", vc="a", gpu_num=1, submit_time=submit, duration=iterations,
              deadline=deadline)
    work = ElasticFlowWork(TABLE, "linear", 8, float(iterations))
    job.elastic = ElasticState(work, work.total / job.duration, 8, 1)
    return job


def run(policy_class: type, jobs: list[Job], **settings: Any) -> None:
    policy = policy_class(SimConfig(gpus_per_node=8, restart_delay=30.0))
    policy.settings = replace(policy.settings, **settings)
    Simulation(jobs, resolve_run(config=policy.config, cluster={"a": 1}), policy=policy).run()


def test_the_artifacts_gpu_seconds_run_the_last_count_on_to_the_next_breakpoint() -> None:
    # 8 GPUs free until 500, 6 until 1500, 7 after; 600 iterations due at 2000: one GPU from 500 (the last
    # period alone makes only 500), ending at 1100, inside the period that ends at the breakpoint 1500
    plan = plan_min_share(linear(600, 2000.0), Timeline({0.0: 8, 500.0: 6, 1500.0: 7}), 0.0, slot=None)
    assert plan.steps == [(0.0, 0), (500.0, 1)] and plan.end == pytest.approx(1100.0)
    assert plan.gpu_seconds == pytest.approx(600.0)
    assert plan.tail == 1500.0 and plan.artifact_gpu_seconds == pytest.approx(600.0 + 1 * (1500 - 1100))
    # a plan that ends in the last period before the deadline has no such breakpoint: both counts agree
    last = plan_min_share(linear(300, 2000.0), Timeline({0.0: 8, 500.0: 6, 1500.0: 7}), 0.0, slot=None)
    assert last.tail is None and last.artifact_gpu_seconds == last.gpu_seconds


def test_the_last_decisions_overhead_never_makes_a_job_late_when_paid_at_the_next_round() -> None:
    # alone on 8 GPUs, 800 iterations take 100 s: its only decision costs 2 + 2 × (log2 8 + 1) = 10 s
    now = flow_job(0, 800, 100.0)
    run(ElasticFlow, [now], overheads="artifact", overhead_timing="now")
    assert now.end_time == pytest.approx(110.0)  # paid at once: 10 s late
    later = flow_job(0, 800, 100.0)
    run(ElasticFlow, [later], overheads="artifact", overhead_timing="next-round")
    assert later.end_time == pytest.approx(100.0)  # no round before its end: never paid, as in the artifact


def test_a_rounds_overhead_comes_out_of_what_the_job_made_by_the_next_round() -> None:
    # j1 arrives at 50 and takes GPUs from j0, a decision at 50: j0 pays its 10 s of the decision at 0 then, out
    # of its progress (and 2 s more, or more on new GPUs, for the decision at 50, paid only if a round follows)
    jobs = [flow_job(0, 8000, 5000.0), flow_job(1, 400, 5000.0, submit=50.0)]
    run(ElasticFlow, jobs, overheads="artifact", overhead_timing="next-round")
    alone = flow_job(0, 8000, 5000.0)
    run(ElasticFlow, [alone], overheads="artifact", overhead_timing="next-round")
    assert alone.end_time == pytest.approx(1000.0)
    assert jobs[0].end_time > alone.end_time + 10.0 - 1e-6  # at least the 10 s of the first decision


def test_edf_is_left_as_it_was_by_the_settings_only_elasticflow_reads() -> None:
    def ends(**settings: Any) -> list[float | None]:
        jobs = [flow_job(0, 4000, 900.0), flow_job(1, 1000, 400.0, submit=30.0), flow_job(2, 500, 2000.0, 70.0)]
        run(Edf, jobs, slot=60.0, **settings)
        return [j.end_time for j in jobs]

    assert ends() == ends(finish_round="rounded", gpu_time="artifact", overhead_cache="placement",
                          overhead_timing="next-round")


def test_the_preset_names_the_artifacts_rules_and_edf_runs_under_it() -> None:
    settings = dict(resolve_config("elasticflow-artifact").policy_settings)
    assert settings["finish_round"] == "rounded" and settings["gpu_time"] == "artifact"
    assert settings["overhead_timing"] == "next-round" and settings["overhead_cache"] == "nodes"
    assert settings["restart_round"] == "after"
    edf = resolve_config("elasticflow-artifact", overrides={"policy": "edf"})
    assert edf.policy == "edf"


def test_a_plans_step_at_or_after_a_jobs_end_is_no_round_under_the_artifacts_rule() -> None:
    # 8 GPUs: a (800 iterations due at 100) takes all 8 until 100; b (1600 due at 300) waits for them, its plan's
    # step at 100, a's end.  The artifact queues a's end event there before adding its overhead, and adds a scale
    # event only before its first event: no round at 100 (a's end event, overhead added, comes after)
    def again(rule: str) -> float | None:
        policy = ElasticFlow(SimConfig(gpus_per_node=8))
        policy.settings = replace(policy.settings, plan_steps=rule)
        a, b = (DeadlineJob(key, work, deadline, list(LEVELS), float) for key, work, deadline in
                (("a", 800, 100.0), ("b", 1600, 300.0)))
        counts, when = policy.counts([a, b], 8, 0.0)
        assert counts == {"a": 8, "b": 0} and b.plan is not None and b.plan.steps[-1] == (100.0, 8)
        assert a.plan is not None and a.plan.end == pytest.approx(100.0)
        return when

    assert again("all") == pytest.approx(100.0)
    assert again("before-ends") is None


def test_the_preset_has_the_artifacts_unfinished_jobs_and_scale_events() -> None:
    settings = dict(resolve_config("elasticflow-artifact").policy_settings)
    assert settings["unfinished"] is True and settings["plan_steps"] == "before-ends"
    assert ElasticFlow.Settings().plan_steps == "all" and ElasticFlow.Settings().unfinished is False  # defaults


def phantom_run(judge: str) -> tuple[Job, ElasticFlow]:
    # a: 800 iterations due at 115, alone on 8 GPUs from 0, ends here at 100 (its decision's 10 s of overhead
    # forgiven: no round came before its end); its plan ends at 120 on the 60-s grid, its end event at 130.  b (no
    # deadline) arrives at 110: that round finds a short of the 80 iterations the overhead cost and plans them, on
    # 8 GPUs up to its deadline (40 iterations), then from the next grid point, 170, 5 s more: it ends at 175
    a, b = flow_job(0, 800, 115.0), flow_job(1, 400, 0.0, submit=110.0)
    b.deadline = None
    policy = ElasticFlow(SimConfig(gpus_per_node=8))
    policy.settings = replace(policy.settings, slot=60.0, rerank="all", overheads="artifact", finish_round="rounded",
                              overhead_timing="next-round", unfinished=True, judge=judge)
    Simulation([a, b], resolve_run(config=policy.config, cluster={"a": 1}), policy=policy).run()
    return a, policy


def test_a_job_still_planned_after_its_end_is_judged_by_its_last_plans_end_under_the_artifacts_rule() -> None:
    a, policy = phantom_run("last-plan")
    assert a.end_time == pytest.approx(100.0)  # its end here is unchanged ...
    assert policy.judged_ends() == {"j0": pytest.approx(175.0)}  # ... its deadline judged by its last plan's end
    a, policy = phantom_run("end")
    assert a.end_time == pytest.approx(100.0) and policy.judged_ends() == {}  # (the default: by its end)
    assert ElasticFlow.Settings().judge == "end" and Edf(SimConfig()).judged_ends() == {}
    assert dict(resolve_config("elasticflow-artifact").policy_settings)["judge"] == "last-plan"


def test_deadline_figures_use_the_judged_end_where_a_run_has_one() -> None:
    frame = pd.DataFrame({"job_id": ["a", "b", "c"], "deadline": [115.0, 200.0, 50.0],
                          "end_time": [100.0, 150.0, 40.0]})
    assert deadline_figures(frame)["deadlines_met"] == 3
    frame["judged_end"] = judged_column(frame, {"a": 175.0})
    assert frame["judged_end"].tolist() == [175.0, 150.0, 40.0]
    assert deadline_figures(frame)["deadlines_met"] == 2


def test_a_phantom_runs_on_at_its_gpus_to_its_plans_real_end_then_from_its_plan_less_its_overhead() -> None:
    policy, state = ElasticFlow(SimConfig(gpus_per_node=8)), VcState()
    # ended here at 100, 80 iterations short (its last overhead); the artifact runs it on, at 8 iterations a second,
    # to its plan's real end 104 (then no more): 48 left at any round after that
    fresh = Phantom(linear(80, 500.0), since=100.0, real_end=104.0, owed=0.0, gpus=0, release=200.0, rate=8.0)
    # planned at 110 on GPUs making 4 a second, 10 s of overhead first, its plan ending at 300
    planned = Phantom(linear(80, 500.0), since=110.0, real_end=300.0, owed=10.0, gpus=4, release=400.0, rate=4.0)
    gone = Phantom(linear(80, 500.0), since=100.0, real_end=104.0, owed=0.0, gpus=0, release=130.0, rate=8.0)
    state.phantoms = {"fresh": fresh, "planned": planned, "gone": gone}
    assert policy._phantoms_now(state, 130.0) == [fresh, planned]  # (gone: at its end event)
    assert fresh.info.work == pytest.approx(48.0) and planned.info.work == pytest.approx(80.0 - 10 * 4.0)


def test_a_job_ending_alone_is_still_decided_on_at_its_end_event_and_nothing_stalls() -> None:
    # as above with a's deadline at 105: b waits for the GPUs a's last plan holds until its end event (the round
    # there, with nothing else running, starts it), and a is judged by that plan's end, 120 (80 iterations at 8 a
    # second from 110)
    a, b = flow_job(0, 800, 105.0), flow_job(1, 400, 0.0, submit=110.0)
    b.deadline = None
    policy = ElasticFlow(SimConfig(gpus_per_node=8))
    policy.settings = replace(policy.settings, slot=60.0, rerank="all", overheads="artifact", finish_round="rounded",
                              overhead_timing="next-round", unfinished=True, judge="last-plan")
    Simulation([a, b], resolve_run(config=policy.config, cluster={"a": 1}), policy=policy).run()
    assert a.end_time == pytest.approx(100.0) and b.end_time is not None
    assert policy.judged_ends() == {"j0": pytest.approx(120.0)}


@pytest.mark.parametrize(("rule", "end"), [("cleared", 249.0), ("after", 222.0)])
def test_a_restart_round_looks_its_cache_up_before_clearing_it_under_the_artifacts_rule(
        monkeypatch: pytest.MonkeyPatch, rule: str, end: float) -> None:
    # j0 alone on 8 GPUs (200 s of work), its overheads paid at once; best-effort jobs arriving at 50 and 100 bring
    # rounds that leave it where it is; the round at 50 is made a restart round.  Round 0: 2 + 2 × (log2 8 + 1) =
    # 10 s.  cleared: the restart round pays 10 + 27 = 37 s, the next finds its GPUs cached (2 s); after (the
    # artifact): cached at the restart round (2 s), then the cache is empty (10 s)
    monkeypatch.setattr("simcluster.policies.elasticflow.is_restart_round", lambda rounds: rounds == 1)
    jobs = [flow_job(0, 1600, 5000.0), flow_job(1, 8, 0.0, submit=50.0), flow_job(2, 8, 0.0, submit=100.0)]
    for job in jobs[1:]:
        job.deadline = None
    run(ElasticFlow, jobs, overheads="artifact", overhead_cache="nodes", restart_round=rule)
    assert jobs[0].end_time == pytest.approx(end)


def test_the_artifacts_node_bookkeeping_interleaves_the_switches_of_its_free_nodes() -> None:
    # 2 switches of 4 nodes (physical 0-3 | 4-7; index within the switch 0-3 | 0-3)
    book = NodeBook(switches=2, nodes_per_switch=4, gpus_per_node=8)
    assert book.round([("a", 8, 1.0), ("b", 8, 2.0)]) == {"a": 0, "b": 8}  # (nodes 0 and 1, in order at first)
    # a then b released (by deadline), each one's node put back and the free list sorted, stably, by index within
    # the switch: 2..7 + 0 -> 4, 0, 5, 2, 6, 3, 7; + 1 -> 4, 0, 5, 1, 2, 6, 3, 7.  b (16 GPUs, placed first) takes
    # nodes 4 and 0 and is logged from node 0; a takes node 5 (GPU 40 on)
    assert book.round([("a", 8, 1.0), ("b", 16, 2.0)]) == {"b": 0, "a": 40}
    assert book.free == [1, 2, 6, 3, 7]
    # free list 4, 0, 1, 5, 2, 6, 3, 7 once both are released: b (4 GPUs) on a new set at node 4, then the 2-GPU
    # jobs in order: a joins b's set, c takes the 2 GPUs left
    assert book.round([("a", 2, 1.0), ("c", 2, 3.0), ("b", 4, 2.0)]) == {"b": 32, "a": 36, "c": 38}
    assert artifact_switches(64) == 2 and artifact_switches(32) == 1 and artifact_switches(128) == 1


def test_a_policy_judging_deadlines_by_bad_times_is_an_error_naming_it(monkeypatch):
    trace = make_trace([("a", 1, 0, 10), ("a", 1, 5, 10)], {"a": 1})
    for bad in ({"j0": float("nan")}, {"j0": float("inf")}, {"nobody": 5.0}, {"j1": "late"}):
        monkeypatch.setattr(Fifo, "judged_ends", lambda self, bad=bad: bad)
        with pytest.raises(ValueError, match=r"policy 'fifo': judged_ends\(\) gave .* must map finished jobs' ids"):
            simulate(trace, SimConfig(policy="fifo"))
    monkeypatch.setattr(Fifo, "judged_ends", lambda self: {"j0": 12.0})
    assert simulate(trace, SimConfig(policy="fifo")).jobs["end_time"].notna().all()
