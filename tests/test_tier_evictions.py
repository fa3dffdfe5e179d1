"""Tiers on any trace: priorities order every queue-ordered policy, and a waiting job of a higher tier evicts
preemptible jobs (docs/tiers.md, "Priorities and evictions"; the rule of simcluster.tiers.eviction)."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from typer.testing import CliRunner

from simcluster.api import load_trace, simulate
from simcluster.cli import app
from simcluster.config import SimConfig
from simcluster.errors import TraceError
from simcluster.policies import POLICIES


def run(rows: list[tuple], nodes: int = 1, **settings):
    """rows: (job_id, gpus, submit, duration, preemptible, priority)."""
    frame = pd.DataFrame(rows, columns=["job_id", "gpu_num", "submit_time", "duration", "preemptible", "priority"])
    result = simulate(load_trace(frame, nodes=nodes), SimConfig(**{"policy": "fifo", **settings}))
    return result, result.jobs.set_index("job_id")


def test_a_higher_priority_job_goes_first_in_a_fifo_queue():
    _, jobs = run([("busy", 8, 0, 100, False, 0), ("low", 8, 1, 10, False, 0), ("high", 8, 2, 10, False, 5)])
    assert jobs.loc["high", "start_time"] == 100 and jobs.loc["low", "start_time"] == 110


def test_a_guaranteed_job_evicts_a_spot_job_which_loses_its_work_since_its_checkpoint():
    result, jobs = run([("spot", 8, 0, 1000, True, 0), ("prod", 8, 100, 100, False, 0)], checkpoint_interval=30)
    assert jobs.loc["prod", "start_time"] == 100 and jobs.loc["prod", "end_time"] == 200
    # ran 100 s, kept 90 (the checkpoint at 90 s of progress), lost 10: 910 s left from 200
    assert jobs.loc["spot", "end_time"] == 200 + 910 and jobs.loc["spot", "evictions"] == 1
    figures = result.summary["tiers"]["evictions"]
    assert figures["evictions"] == 1 and figures["gpu_hours_lost"] == round(8 * 10 / 3600, 4)


def test_the_eviction_cost_delays_the_job_that_evicted():
    _, jobs = run([("spot", 8, 0, 1000, True, 0), ("prod", 8, 100, 100, False, 0)], eviction_cost=13)
    assert jobs.loc["prod", "end_time"] == 213


def test_a_spot_job_never_evicts_one_of_its_own_tier_and_guaranteed_jobs_are_never_evicted():
    _, jobs = run([("spot", 8, 0, 1000, True, 0), ("spot2", 8, 10, 100, True, 0)])
    assert jobs.loc["spot2", "start_time"] == 1000 and jobs["evictions"].sum() == 0
    _, jobs = run([("prod", 8, 0, 1000, False, 0), ("urgent", 8, 10, 100, False, 9)])
    assert jobs.loc["urgent", "start_time"] == 1000  # (not preemptible: only --evict lower-priority takes it)


def test_a_higher_priority_spot_job_evicts_a_lower_one():
    _, jobs = run([("low", 8, 0, 1000, True, 0), ("high", 8, 10, 100, True, 3)])
    assert jobs.loc["high", "start_time"] == 10 and jobs.loc["low", "evictions"] == 1


def test_evict_lower_priority_takes_any_lower_tier_and_off_takes_none():
    rows = [("prod", 8, 0, 1000, False, 0), ("urgent", 8, 10, 100, False, 9)]
    _, jobs = run(rows, evict="lower-priority")
    assert jobs.loc["urgent", "start_time"] == 10 and jobs.loc["prod", "evictions"] == 1
    _, jobs = run([("spot", 8, 0, 1000, True, 0), ("prod", 8, 100, 100, False, 0)], evict="off")
    assert jobs.loc["prod", "start_time"] == 1000 and "evictions" not in jobs


@pytest.mark.parametrize(("rule", "evicted"), [("least-work-lost", {"old", "young"}), ("newest", {"old", "young"}),
                                               ("lowest-priority", {"lowly"})])
def test_the_victim_rules_choose_as_documented(rule, evicted):
    # node 0: "lowly" ran 300 s on 8 GPUs; node 1: "old" 250 s and "young" 100 s on 4 each.  Least work lost:
    # node 1 (1,400 GPU-s against 2,400); newest: node 1 (its longest run 250 s against 300 s); lowest priority:
    # node 0, where "lowly" has the lowest priority (and then nothing outranks what is left)
    lowly = -1 if rule == "lowest-priority" else 0
    rows = [("lowly", 8, 0, 5000, True, lowly), ("old", 4, 50, 5000, True, 0), ("young", 4, 200, 5000, True, 0),
            ("prod", 8, 300, 100, False, 0)]
    _, jobs = run(rows, nodes=2, victims=rule)
    assert jobs.loc["prod", "start_time"] == 300
    assert set(jobs.index[jobs["evictions"] > 0]) == evicted and jobs["evictions"].max() == 1


def test_least_work_lost_frees_the_node_where_the_least_work_is_lost():
    # node A holds two young 4-GPU spot jobs (little lost), node B one old 8-GPU spot job: a 8-GPU head takes A's
    rows = [("old", 8, 0, 9000, True, 0), ("y1", 4, 900, 9000, True, 0), ("y2", 4, 900, 9000, True, 0),
            ("prod", 8, 1000, 100, False, 0)]
    _, jobs = run(rows, nodes=2)
    assert list(jobs.loc[["old", "y1", "y2"], "evictions"]) == [0, 1, 1]
    _, jobs = run(rows, nodes=2, victims="newest")
    assert list(jobs.loc[["old", "y1", "y2"], "evictions"]) == [0, 1, 1]


def test_random_victims_are_drawn_from_the_seed():
    rows = [(f"s{i}", 8, i, 5000, True, 0) for i in range(4)] + [("prod", 8, 100, 100, False, 0)]
    chosen = {seed: tuple(run(rows, nodes=4, victims="random", seed=seed)[1]["evictions"]) for seed in range(8)}
    assert chosen[3] == tuple(run(rows, nodes=4, victims="random", seed=3)[1]["evictions"])
    assert len(set(chosen.values())) > 1 and all(sum(c) == 1 for c in chosen.values())


def test_a_multi_node_head_frees_whole_nodes_and_a_head_no_eviction_can_serve_evicts_nothing():
    rows = [("a", 4, 0, 5000, True, 0), ("b", 4, 0, 5000, False, 0), ("c", 8, 0, 5000, True, 0),
            ("big", 16, 10, 100, False, 0)]
    _, jobs = run(rows, nodes=2)  # node 1 holds guaranteed b: 16 GPUs can never be freed
    assert jobs["evictions"].sum() == 0 and jobs.loc["big", "start_time"] == 5000
    rows = [("a", 8, 0, 5000, True, 0), ("b", 8, 0, 5000, True, 0), ("c", 8, 0, 5000, False, 0),
            ("big", 16, 10, 100, False, 0)]
    _, jobs = run(rows, nodes=3)
    assert jobs.loc["big", "start_time"] == 10 and list(jobs.loc[["a", "b", "c"], "evictions"]) == [1, 1, 0]


def test_every_job_ends_and_no_guaranteed_job_is_ever_evicted_on_a_busy_trace():
    import numpy as np

    rng = np.random.default_rng(7)
    n = 400
    frame = pd.DataFrame({"job_id": [f"j{i}" for i in range(n)], "gpu_num": 2 ** rng.integers(0, 5, n),
                          "submit_time": np.sort(rng.integers(0, 20_000, n)), "duration": rng.integers(10, 3000, n),
                          "preemptible": rng.random(n) < 0.4, "priority": rng.integers(0, 3, n)})
    for policy in ("fifo", "fifo-backfill", "sjf", "easy-backfill"):
        result = simulate(load_trace(frame, nodes=8), SimConfig(policy=policy, checkpoint_interval=600))
        jobs = result.jobs
        assert jobs["end_time"].notna().all(), policy
        assert (jobs.loc[~jobs["preemptible"].astype(bool), "evictions"] == 0).all(), policy
        assert result.summary["tiers"]["evictions"]["evictions"] == jobs["evictions"].sum() > 0, policy


def test_preemptive_walks_order_by_tier_themselves_and_no_eviction_acts_after_them():
    """srtf and tiresias compare waiting with running jobs tier first (tests/test_tier_walks.py): the higher tier
    preempts the lower in their own walk, without a warning, and the tiers' evictions stay out of their runs."""
    frame = pd.DataFrame({"job_id": ["a", "b"], "gpu_num": [8, 8], "submit_time": [0, 1], "duration": [1000, 50],
                          "priority": [0, 5], "preemptible": [True, False]})
    for name in ("srtf", "tiresias"):
        result = simulate(load_trace(frame, nodes=1), SimConfig(policy=name))
        assert not any("do not order it" in w or "are not evicted" in w for w in result.summary["warnings"]), name
        assert "evictions" not in result.summary["tiers"]
        ends = dict(zip(result.jobs["job_id"], result.jobs["end_time"]))
        assert ends["b"] < ends["a"] and result.summary["preemptions"] == 1, name


def test_every_built_in_policy_runs_a_trace_with_tiers():
    frame = pd.DataFrame({"job_id": [f"j{i}" for i in range(12)], "gpu_num": [1, 2, 4, 8] * 3,
                          "submit_time": list(range(12)), "duration": [300, 200, 100, 50] * 3,
                          "preemptible": [True, False] * 6, "priority": [0, 1, 2] * 4})
    trace = load_trace(frame, nodes=2)
    for name in sorted(POLICIES.names()):
        if POLICIES.get(name).elastic:
            continue  # (they need jobs with scaling models)
        result = simulate(trace, SimConfig(policy=name))
        assert result.jobs["end_time"].notna().all(), name
        assert ("evictions" in result.summary["tiers"]) == (name in ("easy-backfill", "fifo", "fifo-backfill", "qssf",
                                                                     "sjf", "slurm")), name


def test_the_cli_runs_evictions_and_prints_one_json_document(tmp_path):
    trace = tmp_path / "jobs.csv"
    pd.DataFrame({"job_id": ["spot", "prod"], "gpu_num": [8, 8], "submit_time": [0, 100], "duration": [1000, 100],
                  "preemptible": [True, False]}).to_csv(trace, index=False)
    result = CliRunner().invoke(app, ["run", "--trace", str(trace), "--nodes", "1", "--victims", "newest",
                                      "--eviction-cost", "13", "--json", "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    assert summary["tiers"]["evictions"]["evictions"] == 1 and summary["tiers"]["evictions"]["victims"] == "newest"
    assert pd.read_csv(tmp_path / "out" / "jobs.csv").set_index("job_id").loc["spot", "evictions"] == 1


def test_a_bad_victim_rule_is_refused_in_words():
    result = CliRunner().invoke(app, ["run", "--victims", "oldest", "--json"])
    assert result.exit_code != 0 and "victims" in result.output


def test_a_tier_run_without_kueue_reports_each_tier_s_gpus_over_time_and_the_allocation_rate():
    result, _ = run([("spot", 8, 0, 1000, True, 0), ("prod", 8, 100, 100, False, 0)], checkpoint_interval=30,
                    eviction_cost=13)
    timeline = result.summary["tiers"]["timeline"]
    # spot holds the node 0-100 and 213-1123, prod 100-213 (its 13 s of eviction cost included): always full
    assert timeline["mean_gpus"] == {"priority 0, guaranteed": round(8 * 113 / 1123, 4),
                                     "priority 0, spot": round(8 * 1010 / 1123, 4)}
    assert timeline["allocation_rate_mean"] == 1.0 and "nominal_gpus" not in timeline
    table = result.tables()["tiers_timeline"]
    assert set(table["tier"]) == {"priority 0, guaranteed", "priority 0, spot"}


PRIORITY_CLASSES = """apiVersion: kueue.x-k8s.io/v1beta1
kind: WorkloadPriorityClass
metadata: {name: prod}
value: 1000
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: research}
value: 10
"""


def test_priority_classes_from_a_file_order_any_policy_and_unknown_ones_are_refused_naming_the_row(tmp_path):
    classes = tmp_path / "classes.yaml"
    classes.write_text(PRIORITY_CLASSES)
    frame = pd.DataFrame({"job_id": ["busy", "low", "high"], "gpu_num": [8, 8, 8], "submit_time": [0, 1, 2],
                          "duration": [100, 10, 10], "priority_class": ["research", "research", "prod"]})
    result = simulate(load_trace(frame, nodes=1), SimConfig(policy="sjf", priority_classes=str(classes)))
    jobs = result.jobs.set_index("job_id")
    assert jobs.loc["high", "start_time"] == 100 and jobs.loc["low", "start_time"] == 110
    assert list(jobs["priority"]) == [10, 10, 1000]
    with pytest.raises(TraceError, match=r"job busy: priority class 'research' is not defined .*--priority-classes"):
        simulate(load_trace(frame, nodes=1), SimConfig(policy="sjf"))
    empty = tmp_path / "none.yaml"
    empty.write_text("apiVersion: kueue.x-k8s.io/v1beta1\nkind: ResourceFlavor\nmetadata: {name: default}\n")
    with pytest.raises(ValueError, match="no WorkloadPriorityClass or PriorityClass in it"):
        simulate(load_trace(frame, nodes=1), SimConfig(policy="sjf", priority_classes=str(empty)))


def test_priority_classes_given_for_a_trace_without_the_column_are_warned_of_not_silently_unread(tmp_path):
    classes = tmp_path / "classes.yaml"
    classes.write_text(PRIORITY_CLASSES)
    frame = pd.DataFrame({"gpu_num": [8], "submit_time": [0], "duration": [10]})
    result = simulate(load_trace(frame, nodes=1), SimConfig(policy="sjf", priority_classes=str(classes)))
    assert any("--priority-classes" in w and "priority_class column" in w for w in result.summary["warnings"])
    with_column = frame.assign(priority_class=["prod"])
    result = simulate(load_trace(with_column, nodes=1), SimConfig(policy="sjf", priority_classes=str(classes)))
    assert not any("--priority-classes" in w for w in result.summary["warnings"])
