"""The network-locality cost (--spread-penalty): jobs spread over several nodes run slower, so placements differ."""

from __future__ import annotations

import pandas as pd
import pytest

from simcluster.api import simulate
from simcluster.config import SimConfig
from simcluster.traces import JobLog
from simcluster.traces.synth import SynthSpec, synthesize


def trace_of(rows: list[tuple], vc_nodes: dict[str, int]) -> JobLog:
    frame = pd.DataFrame(rows, columns=["vc", "gpu_num", "submit_time", "duration"])
    frame.insert(0, "job_id", [f"j{i}" for i in range(len(rows))])
    frame["user"] = "u"
    return JobLog("test", frame, vc_nodes)


def test_a_job_on_two_nodes_runs_at_one_over_one_plus_the_penalty():
    trace = trace_of([("a", 16, 0, 100), ("a", 8, 0, 100)], {"a": 2})
    jobs = simulate(trace, SimConfig(policy="fifo", spread_penalty=0.5)).jobs
    assert jobs["jct"].tolist() == [150.0, 250.0]  # the 8-GPU job waits for the spread one, then runs at speed 1
    assert jobs["mean_speed"].tolist() == pytest.approx([1 / 1.5, 1.0])


def test_without_a_penalty_nothing_changes():
    trace = synthesize(SynthSpec(jobs=200, nodes=6, vcs=2, seed=2))
    pd.testing.assert_frame_equal(simulate(trace, SimConfig(policy="sjf", spread_penalty=0.0)).jobs,
                                  simulate(trace, SimConfig(policy="sjf")).jobs)


def test_a_preempted_spread_job_pays_the_penalty_only_while_spread():
    # srtf: the long 16-GPU job is preempted by a short one and resumes; its work is still 100 s at 1/1.25
    trace = trace_of([("a", 16, 0, 100), ("a", 8, 10, 20)], {"a": 2})
    jobs = simulate(trace, SimConfig(policy="srtf", spread_penalty=0.25)).jobs.set_index("job_id")
    overhead = jobs.loc["j0", "overhead"]
    assert jobs.loc["j0", "busy_time"] == pytest.approx(125 + overhead)
    assert jobs.loc["j1", "jct"] == pytest.approx(20)


def test_with_a_penalty_the_placement_matters():
    trace = synthesize(SynthSpec(jobs=300, nodes=8, vcs=2, seed=4))
    consolidated = simulate(trace, SimConfig(policy="sjf", placement="consolidate-first", spread_penalty=0.3))
    scattered = simulate(trace, SimConfig(policy="sjf", placement="random", spread_penalty=0.3))
    assert scattered.summary["avg_run_slowdown"] > consolidated.summary["avg_run_slowdown"]
    assert scattered.summary["avg_jct"] != consolidated.summary["avg_jct"]
