"""Fairness: Jain's index, finish-time fairness ρ on crafted traces, the per-user table, and the summary."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from simcluster.api import simulate
from simcluster.config import SimConfig
from simcluster.metrics.fairness import USER_COLUMNS, contention, jain_index
from simcluster.results import write_run
from simcluster.traces import JobLog


def trace_of(rows: list[tuple], vc_nodes: dict[str, int]) -> JobLog:
    """rows: (user, vc, gpu_num, submit_time, duration) in trace order."""
    frame = pd.DataFrame(rows, columns=["user", "vc", "gpu_num", "submit_time", "duration"])
    frame.insert(0, "job_id", [f"j{i}" for i in range(len(rows))])
    return JobLog("test", frame, vc_nodes)


# --- Jain's index -------------------------------------------------------------------------------------

def test_jains_index_is_one_for_equal_shares_and_one_over_n_when_one_user_gets_everything():
    assert jain_index([3.0, 3.0, 3.0]) == 1.0
    assert jain_index([5.0, 0.0, 0.0, 0.0, 0.0]) == pytest.approx(0.2)
    assert jain_index([]) is None and jain_index([0.0, 0.0]) is None


@given(st.lists(st.floats(min_value=0.001, max_value=1e6), min_size=1, max_size=50),
       st.floats(min_value=0.01, max_value=100))
def test_jains_index_lies_between_one_over_n_and_one_and_ignores_the_scale(values, scale):
    index = jain_index(values)
    assert 1 / len(values) - 1e-9 <= index <= 1 + 1e-9
    assert jain_index([v * scale for v in values]) == pytest.approx(index)


# --- contention and ρ ---------------------------------------------------------------------------------------

def test_contention_is_the_time_averaged_number_of_jobs_in_the_system_over_each_jobs_life():
    # a: [0, 100], b: [0, 200] (waited for a), c: [150, 150] (no length: the count at its instant)
    n = contention(np.array([0.0, 0.0, 150.0]), np.array([100.0, 200.0, 150.0]))
    assert n.tolist() == [2.0, 1.5, 1.0]


def test_a_job_alone_in_its_vc_has_rho_one():
    result = simulate(trace_of([("x", "a", 8, 0, 100)], {"a": 1}), SimConfig(policy="fifo"))
    assert result.jobs["rho"].tolist() == [1.0]
    assert result.summary["rho_above_1"] == 0.0 and result.summary["jain_users"] == 1.0


def test_rho_compares_each_job_with_running_alone_on_a_fair_share_of_its_vc():
    # two whole-node jobs on one 8-GPU node at t=0: a runs [0, 100], b waits and runs [100, 200]
    result = simulate(trace_of([("x", "a", 8, 0, 100), ("y", "a", 8, 0, 100)], {"a": 1}), SimConfig(policy="fifo"))
    # a: n = 2 over its life → 4 GPUs each, so alone it takes 100 × 8/4 = 200 s; it took 100: ρ = 0.5
    # b: n = (2·100 + 1·100)/200 = 1.5 → alone 100 × 1.5 = 150 s; it took 200: ρ = 4/3
    assert result.jobs["rho"].tolist() == pytest.approx([0.5, 4 / 3])
    s = result.summary
    assert (s["rho_mean"], s["rho_max"], s["rho_above_1"]) == (pytest.approx(11 / 12), pytest.approx(4 / 3), 0.5)
    # Jain over users of their mean 1/ρ: x got 2, y 0.75
    assert s["jain_users"] == pytest.approx(2.75 ** 2 / (2 * (2 ** 2 + 0.75 ** 2)))


def test_a_small_job_that_fits_its_fair_share_is_judged_by_its_duration_alone():
    # 1-GPU jobs on an 8-GPU VC: with n = 2 each may have 4 GPUs, so alone it takes its duration
    result = simulate(trace_of([("x", "a", 1, 0, 100), ("y", "a", 1, 0, 300)], {"a": 1}), SimConfig(policy="fifo"))
    assert result.jobs["rho"].tolist() == [1.0, 1.0]


def test_fairness_is_reported_per_vc_over_that_vcs_users():
    rows = [("x", "a", 8, 0, 100), ("y", "a", 8, 0, 100), ("z", "b", 8, 0, 100)]
    s = simulate(trace_of(rows, {"a": 1, "b": 1}), SimConfig(policy="fifo")).summary
    assert s["per_vc"]["b"]["jain_users"] == 1.0 and s["per_vc"]["b"]["rho_mean"] == 1.0
    assert s["per_vc"]["a"]["jain_users"] == pytest.approx(2.75 ** 2 / (2 * (2 ** 2 + 0.75 ** 2)))
    assert s["per_vc"]["a"]["rho_above_1"] == 0.5 and s["rho_above_1"] == pytest.approx(1 / 3)


# --- users.csv ---------------------------------------------------------------------------------------------

def test_the_run_folder_has_a_users_table_with_each_users_jct_and_queueing(tmp_path):
    rows = [("x", "a", 8, 0, 100), ("y", "a", 8, 0, 100), ("x", "b", 4, 10, 50)]
    result = simulate(trace_of(rows, {"a": 1, "b": 1}), SimConfig(policy="fifo"))
    write_run(tmp_path / "run", result.tables(), result.summary)
    users = pd.read_csv(tmp_path / "run" / "users.csv").set_index("user")
    assert list(users.reset_index().columns) == USER_COLUMNS
    assert users.loc["x", "vcs"] == "a;b" and users.loc["x", "jobs"] == 2 and users.loc["y", "jobs"] == 1
    assert users.loc["x", "avg_jct"] == (100 + 50) / 2 and users.loc["y", "avg_jct"] == 200
    assert users.loc["x", "avg_queue"] == 0 and users.loc["y", "avg_queue"] == 100
    assert users.loc["y", "avg_jct_slowdown"] == 2.0
    assert users.loc["x", "gpu_seconds"] == 8 * 100 + 4 * 50 and users["gpu_share"].sum() == pytest.approx(1.0)
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert {"jain_users", "rho_mean", "rho_p50", "rho_p99", "rho_max", "rho_above_1"} <= set(summary)


def test_the_reference_figures_hold_with_fairness_added(venus_sept):
    from simcluster.traces import load_trace

    summary = simulate(load_trace(venus_sept), SimConfig(policy="srtf")).summary
    assert summary["avg_jct"] == pytest.approx(12616.1, abs=0.05)
    assert 0 < summary["jain_users"] <= 1 and summary["rho_p50"] <= summary["rho_p99"] <= summary["rho_max"]
