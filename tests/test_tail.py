"""Tail and starvation figures: the longest and p99.9 waits, the share of jobs waiting past a bound, bounded
slowdown — per run, VC, user and job size, on a trace whose waits are known by hand."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from simcluster.api import simulate
from simcluster.cli import app
from simcluster.config import SimConfig
from simcluster.experiments.report import write_report
from simcluster.metrics.fairness import users_table
from simcluster.metrics.summary import current_names
from simcluster.metrics.tail import bound_name, over_key, parse_seconds, tail_figures, with_wait_bounds
from simcluster.results import write_run
from simcluster.traces.joblog import JobLog

runner = CliRunner()

# One node of 8 GPUs, fifo.  a (8 GPUs, 20,000 s) runs at once; b (8 GPUs, 5 s) waits for it: 20,000 s;
# c (1 GPU, 100 s, submitted at 10) waits behind b, head of the line, until 20,005: 19,995 s.
ROWS = [("a", "u1", 8, 0, 20_000), ("b", "u2", 8, 0, 5), ("c", "u1", 1, 10, 100)]
WAITS = np.array([0.0, 20_000.0, 19_995.0])
JCTS = np.array([20_000.0, 20_005.0, 20_095.0])
DURATIONS = np.array([20_000.0, 5.0, 100.0])


def known_trace() -> JobLog:
    frame = pd.DataFrame(ROWS, columns=["job_id", "user", "gpu_num", "submit_time", "duration"]).assign(vc="v")
    return JobLog("known", frame, {"v": 1})


@pytest.fixture(scope="module")
def known():
    return simulate(known_trace(), SimConfig(policy="fifo"))


def test_the_waits_of_the_hand_built_trace_are_as_computed_by_hand(known):
    assert known.jobs["queue"].tolist() == WAITS.tolist() and known.jobs["jct"].tolist() == JCTS.tolist()


def test_max_and_p999_wait_share_over_the_bound_and_bounded_slowdown_are_exact(known):
    s = known.summary
    assert s["max_queue"] == 20_000.0
    # np.percentile's linear rule: rank 0.999 × 2 = 1.998 between 19,995 and 20,000
    assert s["p999_queue"] == pytest.approx(19_995 + 0.998 * 5)
    assert s["queue_over_4h"] == pytest.approx(2 / 3)  # 20,000 and 19,995 s > 14,400 s
    # max(1, JCT ÷ max(duration, 10 s)): 1, 20,005 / 10 (a 5 s job counts as 10 s), 20,095 / 100
    assert s["avg_bounded_slowdown"] == pytest.approx((1.0 + 2000.5 + 200.95) / 3)
    assert s["per_vc"]["v"]["max_queue"] == 20_000.0 and s["wait_bounds"] == [14_400.0]


def test_figures_per_job_size_tell_the_large_jobs_from_the_small(known):
    sizes = known.summary["per_size"]
    assert list(sizes) == ["1", "5-8"]
    assert sizes["1"]["jobs"] == 1 and sizes["1"]["max_queue"] == 19_995.0
    assert sizes["1"]["avg_bounded_slowdown"] == pytest.approx(200.95)
    assert sizes["5-8"]["jobs"] == 2 and sizes["5-8"]["queue_over_4h"] == 0.5
    assert sizes["5-8"]["avg_queue"] == 10_000.0


def test_users_get_their_longest_wait_share_over_the_bound_and_both_slowdowns(known):
    users = users_table(known.jobs).set_index("user")
    assert users.loc["u1", "max_queue"] == 19_995.0 and users.loc["u2", "max_queue"] == 20_000.0
    assert users.loc["u1", "queue_over_4h"] == 0.5 and users.loc["u2", "queue_over_4h"] == 1.0
    assert users.loc["u2", "avg_jct_slowdown"] == pytest.approx(20_005 / 5)  # JCT ÷ max(duration, 1 s)
    assert users.loc["u2", "avg_bounded_slowdown"] == pytest.approx(2000.5)  # the bound of 10 s
    assert "avg_slowdown" not in users.columns


def test_other_wait_bounds_replace_the_default_ones_everywhere(known):
    summary = with_wait_bounds(json.loads(json.dumps(known.summary)), known.jobs, [3600.0, 19_998.0])
    assert summary["queue_over_1h"] == pytest.approx(2 / 3) and summary[over_key(19_998)] == pytest.approx(1 / 3)
    assert "queue_over_4h" not in summary and "queue_over_4h" not in summary["per_vc"]["v"]
    assert summary["per_size"]["1"][over_key(19_998)] == 0.0 and summary["wait_bounds"] == [3600.0, 19_998.0]
    assert summary["max_queue"] == known.summary["max_queue"]


def test_the_summary_names_the_run_slowdown_apart_and_reads_older_summaries():
    assert current_names({"avg_slowdown": 1.5, "per_vc": {"v": {"avg_slowdown": 1.2}}}) == {
        "avg_run_slowdown": 1.5, "per_vc": {"v": {"avg_run_slowdown": 1.2}}}
    assert current_names({"avg_run_slowdown": 1.0}) == {"avg_run_slowdown": 1.0}


def test_no_finished_job_gives_no_tail_figures():
    assert tail_figures(np.array([]), np.array([]), np.array([]))["max_queue"] is None


@pytest.mark.parametrize(("text", "seconds"), [("14400", 14_400.0), ("4h", 14_400.0), ("90m", 5400.0),
                                               ("1.5d", 129_600.0), ("30s", 30.0)])
def test_wait_bounds_take_seconds_or_units(text, seconds):
    assert parse_seconds(text) == seconds


@pytest.mark.parametrize("text", ["4 hours", "-1h", "0", "h"])
def test_a_wait_bound_that_is_no_time_is_refused_in_words(text):
    with pytest.raises(ValueError, match="--wait-bound"):
        parse_seconds(text)


def test_bound_names_use_the_largest_whole_unit():
    assert [bound_name(s) for s in (14_400, 5400, 90, 86_400, 7.5)] == ["4h", "90m", "90s", "1d", "7.5s"]


def save_known(tmp_path):  # (no VC column: one VC of --nodes nodes)
    frame = pd.DataFrame(ROWS, columns=["job_id", "user", "gpu_num", "submit_time", "duration"])
    frame.to_csv(tmp_path / "known.csv", index=False)
    return tmp_path / "known.csv"


def test_run_wait_bound_options_reach_summary_users_and_the_printed_table(tmp_path):
    done = runner.invoke(app, ["run", "--trace", str(save_known(tmp_path)), "--nodes", "1", "--policy", "fifo",
                               "--wait-bound", "1h", "--wait-bound", "19998", "--out", str(tmp_path / "run")],
                         env={"COLUMNS": "250"})
    assert done.exit_code == 0, done.output
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["queue_over_1h"] == pytest.approx(2 / 3) and summary[over_key(19_998)] == pytest.approx(1 / 3)
    assert "queue_over_4h" not in summary and summary["max_queue"] == 20_000.0
    users = pd.read_csv(tmp_path / "run" / "users.csv")
    assert {"queue_over_1h", over_key(19_998), "max_queue", "avg_bounded_slowdown"} <= set(users.columns)
    assert "waited > 1h" in done.stdout and "max queue" in done.stdout and "bounded slowdown" in done.stdout
    assert "by job size" in done.stdout
    refused = runner.invoke(app, ["run", "--trace", str(save_known(tmp_path)), "--nodes", "1", "--wait-bound", "4 hours",
                                  "--out", str(tmp_path / "no")])
    assert refused.exit_code != 0 and "--wait-bound" in refused.output and not (tmp_path / "no").exists()


def test_the_report_computes_tail_figures_of_older_run_folders_from_their_jobs(tmp_path, known):
    write_run(tmp_path / "new", known.tables(), known.summary)
    old = {k: v for k, v in known.summary.items() if k not in ("max_queue", "p999_queue", "queue_over_4h",
                                                                "avg_bounded_slowdown", "per_size", "wait_bounds")}
    old["avg_slowdown"] = old.pop("avg_run_slowdown")
    old["per_vc"] = {vc: {k: v for k, v in f.items() if k not in ("max_queue", "queue_over_4h")}
                     for vc, f in old["per_vc"].items()}
    write_run(tmp_path / "old", known.tables(), old)
    made = write_report([tmp_path / "new", tmp_path / "old"], tmp_path / "report")
    rows = made.table[made.table["vc"] == "all"].set_index("label")
    assert len(rows) == 1 or rows["max_queue"].nunique() == 1
    table = pd.read_csv(tmp_path / "report" / "runs.csv")
    overall = table[table["vc"] == "all"].set_index("run")
    for name in ("max_queue", "p999_queue", "queue_over_4h", "avg_bounded_slowdown"):
        assert overall.loc["old", name] == pytest.approx(overall.loc["new", name]), name
    per_vc = table[table["vc"] == "v"].set_index("run")
    assert per_vc.loc["old", "max_queue"] == 20_000.0
