"""ElasticFlow's policies in the engine: elasticflow (admission, minimum shares, spare GPUs) and edf.

The hand-worked cases run jobs of one model whose speed is linear in GPUs (1 iteration per GPU-second) on one
node of 8 GPUs, with no overheads and exact time, so every time can be worked out on paper; the others run
small ElasticFlow traces on every cluster shape, the conformance kit, the CLI and a shared trace.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from simcluster.api import load_trace, simulate
from simcluster.config import SimConfig
from simcluster.elastic.elasticflow_model import ElasticFlowThroughputs
from simcluster.elastic.elasticflow_plan import DeadlineJob, allocate_spare, plan_in_order
from simcluster.elastic.state import ElasticState
from simcluster.elastic.work import ElasticFlowWork, NotElastic
from simcluster.engine import Simulation
from simcluster.job import Job
from simcluster.paths import shared_data_dir
from simcluster.policies.elasticflow import Edf, ElasticFlow
from simcluster.presets import resolve_config
from simcluster.run import resolve_run
from simcluster.testing import ELASTICFLOW_ROWS, elasticflow_trace, policy_problems

LEVELS = (1, 2, 4, 8)
TABLE = ElasticFlowThroughputs({"linear": {8: {g: float(g) for g in LEVELS}},
                                "flat": {8: {1: 1.0, 2: 1.2, 4: 1.3, 8: 1.3}}})


def flow_job(index: int, iterations: float, deadline: float | None, submit: float = 0.0, model: str = "linear") -> Job:
    job = Job(index=index, job_id=f"j{index}", vc="a", gpu_num=1, submit_time=submit, duration=iterations,
              deadline=deadline)
    work = ElasticFlowWork(TABLE, model, 8, float(iterations))
    job.elastic = ElasticState(work, work.total / job.duration, 8, 1)
    return job


def run(policy_class: type, jobs: list[Job], **settings: Any) -> Any:
    policy = policy_class(SimConfig(gpus_per_node=8, restart_delay=30.0))
    if settings:
        policy.settings = replace(policy.settings, **settings)
    Simulation(jobs, resolve_run(config=policy.config, cluster={"a": 1}), policy=policy).run()
    return policy


def declined(jobs: list[Job]) -> list[str]:
    return [j.job_id for j in jobs if j.start_time is None and j.end_time is None]


def test_admission_declines_an_arrival_batch_that_cannot_fit_and_keeps_the_admitted_on_time():
    # j0 needs all 8 GPUs for 100 s; j1 and j2 arrive together at 10, and j1 cannot finish by 20 beside it
    jobs = [flow_job(0, 800, 100.0), flow_job(1, 100, 20.0, submit=10.0), flow_job(2, 8, 1000.0, submit=10.0)]
    run(ElasticFlow, jobs)
    assert jobs[0].end_time == pytest.approx(100.0)
    assert declined(jobs) == ["j1", "j2"]  # all or nothing: j2 alone would have fitted after j0


def test_a_job_alone_gets_its_minimum_share_then_the_spare_gpus_and_no_restart_delay_by_default():
    job = flow_job(0, 400, 200.0)  # its share is 2 GPUs (400 s on one); the 6 spare make it 8
    run(ElasticFlow, [job])
    assert job.gpu_num == 8 and job.end_time == pytest.approx(50.0) and job.overhead_total == 0.0


def test_admitted_jobs_get_their_plans_gpus_now_and_the_spare_by_marginal_return():
    jobs = [flow_job(0, 130, 10_000.0, model="flat"), flow_job(1, 100, 10_000.0)]
    infos = [DeadlineJob(j.job_id, j.duration, j.deadline or 0.0, LEVELS,
                         {g: TABLE.rate(j.elastic.model.model_name, 8, g) for g in LEVELS}.__getitem__) for j in jobs]
    plans, line, ok = plan_in_order(infos, 8, 0.0, None)
    # loose deadlines: each job's minimum share is one GPU; the first planned takes it from now, the second from
    # the first's end (the last breakpoint from which one GPU still finishes it in time)
    assert ok and [p.steps for p in plans] == [[(0.0, 1)], [(0.0, 0), (130.0, 1)]]
    for info, plan in zip(infos, plans, strict=True):
        info.plan, info.gpus = plan, plan.gpus_at(0.0)
    allocate_spare(infos, line, 0.0, None)
    # jobs with no GPUs first (one each), then the flat job, whose GPU-seconds grow most per GPU added (as the
    # artifact ranks): 1 → 2 → 4; 4 → 8 does not fit in the 3 left, which take the linear job to 2, then 4
    assert [i.gpus for i in infos] == [4, 4]
    seen: dict[str, int] = {}
    policy = ElasticFlow(SimConfig(gpus_per_node=8))
    policy.on_run_start = lambda job, vc: seen.setdefault(job.job_id, job.gpu_num)  # type: ignore[method-assign]
    Simulation(jobs, resolve_run(config=policy.config, cluster={"a": 1}), policy=policy).run()
    assert seen == {"j0": 4, "j1": 4}


class DecisionLog(ElasticFlow):
    """elasticflow noting when it decides."""

    def counts(self, admitted: list[DeadlineJob], total: int, now: float) -> tuple[dict[str, int], float | None]:
        self.decided = [*getattr(self, "decided", []), now]
        return super().counts(admitted, total, now)


def test_a_wake_asked_for_by_a_decision_since_replanned_decides_nothing_unless_replan_is_every():
    def jobs() -> list[Job]:
        return [flow_job(0, 4000, 10_000.0), flow_job(1, 3000, 10_000.0, model="flat"),
                flow_job(2, 500, 10_000.0, submit=50.0), flow_job(3, 300, 700.0, submit=120.0)]

    current, every = jobs(), jobs()
    decided_current = run(DecisionLog, current).decided
    decided_every = run(DecisionLog, every, replan="every").decided
    # arrivals at 0, 50 and 120; j3, j2 and j0 end at 420, 450 and 1,200 (j1 last: no decision after it)
    assert decided_current == [0.0, 50.0, 120.0, 420.0, 450.0, 1200.0]
    # the plans made at 50 and 120 asked for decisions at their next steps, since re-planned at 420 and 450
    assert set(decided_current) < set(decided_every) and len(decided_every) == 8
    assert [j.end_time for j in current] == [j.end_time for j in every]


def test_both_rerank_rules_agree_where_there_is_room_and_both_run_from_settings():
    for rerank in ("lazy", "all"):
        job = flow_job(0, 400, 200.0)
        run(ElasticFlow, [job], rerank=rerank)
        assert job.gpu_num == 8 and job.end_time == pytest.approx(50.0)
    assert dict(resolve_config("elasticflow-artifact").policy_settings)["rerank"] == "all"


def test_jobs_without_a_deadline_are_best_effort_on_what_deadline_jobs_leave():
    jobs = [flow_job(0, 800, 100.0), flow_job(1, 80, None, submit=10.0)]
    run(ElasticFlow, jobs)
    assert jobs[0].end_time == pytest.approx(100.0)
    assert jobs[1].start_time == pytest.approx(100.0) and jobs[1].end_time == pytest.approx(110.0)


def test_edf_without_admission_runs_every_job_late_or_not_and_with_admission_declines():
    def three() -> list[Job]:
        return [flow_job(0, 800, 100.0), flow_job(1, 100, 20.0, submit=10.0), flow_job(2, 8, 1000.0, submit=10.0)]

    jobs = three()
    run(Edf, jobs)
    assert declined(jobs) == [] and all(j.end_time is not None for j in jobs)
    # j1 (earliest deadline) takes all 8 GPUs at 10 and ends at 22.5, late; j0 (80 done) waits until then and
    # ends 90 s later, on time no more; j2 after it
    assert jobs[1].end_time == pytest.approx(22.5) and jobs[0].end_time == pytest.approx(112.5)
    assert jobs[2].end_time == pytest.approx(113.5)
    jobs = three()
    run(Edf, jobs, admission=True)
    assert declined(jobs) == ["j1", "j2"] and jobs[0].end_time == pytest.approx(100.0)


def test_the_restart_delay_overheads_charge_each_start_and_change():
    job = flow_job(0, 400, 200.0)
    run(ElasticFlow, [job], overheads="restart-delay")
    assert job.overhead_total == pytest.approx(30.0) and job.end_time == pytest.approx(80.0)


def test_the_artifacts_overheads_charge_every_decision():
    alone = flow_job(0, 400, 2000.0)
    run(ElasticFlow, [alone], overheads="artifact")
    assert alone.overhead_total == 2.0 + 2 * (3 + 1) and alone.end_time == pytest.approx(60.0)  # 8 new GPUs
    jobs = [flow_job(0, 4000, 5000.0), flow_job(1, 400, 5000.0, submit=100.0)]
    run(ElasticFlow, jobs, overheads="artifact")
    # j0 pays 10 s at 0 and at least the 2 s of a decision at 100; j1 at least 2 + 2 × (log2 1 + 1)
    assert jobs[0].overhead_total >= 12.0 and jobs[1].overhead_total >= 4.0


def test_a_job_without_elasticflows_model_is_a_clear_error():
    job = Job(index=0, job_id="x", vc="a", gpu_num=1, submit_time=0, duration=10)
    from simcluster.elastic.state import StagedWork

    job.elastic = ElasticState(StagedWork(10.0, (10.0,), (1.0,)), 1.0, None, 1)
    with pytest.raises(NotElastic, match="elasticflow needs jobs of ElasticFlow's models"):
        run(ElasticFlow, [job])


# --- ElasticFlow traces ------------------------------------------------------------------------------------

THROUGHPUTS = shared_data_dir() / "elasticflow" / "throughputs_A100"
TRACES = shared_data_dir() / "elasticflow" / "traces"
needs_tables = pytest.mark.skipif(not THROUGHPUTS.is_dir(), reason=f"no ElasticFlow throughputs in {THROUGHPUTS}")
needs_traces = pytest.mark.skipif(not (TRACES / "cluster01.csv").is_file(), reason=f"no ElasticFlow traces in {TRACES}")


POLICIES = [("elasticflow", {}), ("elasticflow", {"rerank": "all", "replan": "every"}), ("edf", {}),
            ("edf", {"admission": True})]


@needs_tables
@pytest.mark.parametrize(("policy", "own"), POLICIES)
@pytest.mark.parametrize("shape", ["two VCs", "GPU types", "4-GPU nodes", "node failures", "artifact timing"])
def test_elasticflows_policies_run_on_every_cluster_shape(policy, own, shape, tmp_path):
    settings: dict[str, Any] = {"policy": policy, "policy_settings": own, "gpus_per_node": 8}
    trace = elasticflow_trace(nodes=2)
    if shape == "4-GPU nodes":
        trace = elasticflow_trace(nodes=4, gpus_per_node=4)
        settings["gpus_per_node"] = 4
    elif shape == "two VCs":
        trace.frame["vc"] = ["a", "b"] * 3
        trace.vc_nodes = {"a": 1, "b": 1}
        trace.cluster = None
    elif shape == "GPU types":
        settings |= {"cluster": "t4:8,v100:8"}
    elif shape == "node failures":
        settings |= {"node_mtbf": 3000.0, "node_repair": 300.0, "checkpoint_interval": 60.0, "seed": 3,
                     "on_no_progress": "abandon"}
    elif shape == "artifact timing":
        config = resolve_config("elasticflow-artifact", overrides={"policy": policy}, policy_settings=own)
        settings = {**config.as_dict(), "policy_settings": {**dict(config.policy_settings), **own}}
        settings.pop("preset", None), settings.pop("config_file", None)
    result = simulate(trace, SimConfig.from_settings(settings) if shape == "artifact timing" else SimConfig(**settings))
    jobs, summary = result.jobs, result.summary
    done = jobs["end_time"].notna()
    if shape != "node failures":
        assert (done | jobs["declined"]).all()
    assert summary["jobs_with_deadline"] == len(ELASTICFLOW_ROWS) and 0 <= summary["deadline_satisfaction"] <= 1
    if policy == "edf" and not own:
        assert summary["declined"] == 0
    assert result.allocations is not None and (jobs.loc[done, "progress_unit"] == "iterations").all()
    if shape == "two VCs":
        assert set(summary["per_vc"]) == {"a", "b"}


@needs_tables
@pytest.mark.parametrize(("policy", "own"), POLICIES)
def test_the_conformance_kit_passes_for_elasticflows_policies(policy, own):
    report = policy_problems(policy, config=SimConfig(policy_settings=own))
    assert set(report.traces) == {"paper's jobs", "burst", "slot batching", "node-failures"}  # ElasticFlow's traces
    assert not report.broken(), str(report)


@needs_tables
def test_a_run_on_the_command_line_prints_one_json_document(tmp_path):
    from typer.testing import CliRunner

    from simcluster.cli import app

    path = tmp_path / "trace.csv"
    path.write_text("job_id,submission_time,num_iteration,model_name,deadline,batch_size,num_gpu,duration\n"
                    + "".join(f"j{i},{t},{n},{m},{t + d},{b},{g},{n // 10}\n"
                              for i, (t, n, m, d, b, g) in enumerate(ELASTICFLOW_ROWS)))
    out = CliRunner().invoke(app, ["run", "--trace", str(path), "--nodes", "2", "--preset",
                                   "elasticflow-artifact", "--policy", "edf", "--set", "admission=true", "--json",
                                   "--out", str(tmp_path / "run")])
    assert out.exit_code == 0, out.output
    summary = json.loads(out.stdout)
    assert summary["policy"] == "edf" and summary["policy_settings"]["admission"] is True
    assert 0 <= summary["deadline_satisfaction"] <= 1 and summary["jobs_with_deadline"] == len(ELASTICFLOW_ROWS)


@needs_traces
def test_edf_under_the_artifacts_timing_meets_the_deadlines_the_artifact_does_on_cluster01():
    config = resolve_config("elasticflow-artifact", overrides={"policy": "edf"})
    summary = simulate(load_trace(TRACES / "cluster01.csv"), config).summary
    assert summary["deadlines_met"] == 298  # ElasticFlow's simulator: 298 of 1,595 (0.1868)
