"""`lucid-sim diff`: two results compared job by job, and where they first part ways."""

from __future__ import annotations

import json

import pandas as pd
from typer.testing import CliRunner

from simcluster.cli import app
from simcluster.experiments.diff import diff_runs, diff_tables

runner = CliRunner()


def jobs(rows):
    return pd.DataFrame(rows, columns=["job_id", "vc", "gpu_num", "submit_time", "start_time", "end_time"])


def test_two_identical_runs_agree_on_every_job_and_never_diverge(tmp_path):
    out = tmp_path / "run"
    assert runner.invoke(app, ["run", "--policy", "sjf", "--out", str(out), "-q"]).exit_code == 0
    result = diff_runs(out, out)
    assert result.overall.matched == result.overall.equal_exact == 2000
    assert result.overall.first is None and result.overall.jct_difference == 0
    assert {a.vc for a in result.per_vc} == {"vc0", "vc1", "vc2", "vc3"}


def test_the_first_divergence_is_the_earliest_start_that_differs_with_the_jobs_there():
    a = jobs([("1", "v", 1, 0, 0, 100), ("2", "v", 4, 5, 100, 200), ("3", "v", 4, 6, 200, 300),
              ("4", "w", 1, 0, 0, 50)])
    # B starts job 3 before job 2 at t=100 (a tie broken the other way); everything before agrees
    b = jobs([("1", "v", 1, 0, 0, 100), ("2", "v", 4, 5, 200, 300), ("3", "v", 4, 6, 100, 200),
              ("4", "w", 1, 0, 0, 50)])
    result = diff_tables(a, b)
    first = result.overall.first
    assert (first.time, first.what) == (100.0, "start")
    assert [(j.job_id, j.start_a, j.start_b) for j in first.jobs] == [("2", 100.0, 200.0), ("3", 200.0, 100.0)]
    per_vc = {agreement.vc: agreement for agreement in result.per_vc}
    assert per_vc["w"].first is None and per_vc["w"].equal_exact == 1
    assert result.overall.equal_exact == 2 and result.overall.within_60s == 2
    assert result.overall.jct_difference == 0  # the two swaps cancel in the average


def test_an_end_that_differs_counts_when_the_starts_agree_and_small_gaps_are_tolerated():
    a = jobs([("1", "v", 1, 0, 0, 100), ("2", "v", 1, 0, 10, 500)])
    b = jobs([("1", "v", 1, 0, 0, 101), ("2", "v", 1, 0, 10, 400)])  # job 1 ends a second late (a 1 s tick)
    result = diff_tables(a, b, tolerance=1.0)
    assert (result.overall.first.time, result.overall.first.what) == (400.0, "end")
    assert [j.job_id for j in result.overall.first.jobs] == ["2"]
    assert (result.overall.equal_exact, result.overall.within_1s) == (0, 1)


def test_an_artifact_log_with_another_time_origin_and_integer_ids_is_matched_to_our_run(tmp_path):
    out = tmp_path / "run"
    assert runner.invoke(app, ["run", "--policy", "fifo", "--out", str(out), "-q"]).exit_code == 0
    ours = pd.read_csv(out / "jobs.csv", dtype={"job_id": str})
    theirs = ours[["job_id", "vc", "gpu_num", "submit_time", "start_time", "end_time"]].copy()
    origin = 86400
    for col in ("submit_time", "start_time", "end_time"):
        theirs[col] -= origin
    theirs["queue"] = theirs["start_time"] - theirs["submit_time"]
    theirs["jct"] = theirs["end_time"] - theirs["submit_time"]
    theirs["job_id"] = theirs["job_id"].str.replace("s0-", "", regex=False)  # digits, as the artifact writes
    ours["job_id"] = ours["job_id"].str.replace("s0-", "", regex=False)
    ours.to_csv(out / "jobs.csv", index=False)
    log = tmp_path / "fifo_consolidate_all_log.csv"
    theirs.to_csv(log, index=False)
    result = runner.invoke(app, ["diff", str(out), str(log), "--json"])
    assert result.exit_code == 0, result.output
    figures = json.loads(result.stdout)
    assert figures["shift_b"] == origin
    assert figures["overall"]["matched"] == figures["overall"]["equal_exact"] == 2000
    assert figures["overall"]["first"] is None


def test_a_file_without_per_job_times_is_refused_with_its_name_and_what_is_missing(tmp_path):
    bad = tmp_path / "summary.csv"
    bad.write_text("policy,avg_jct\nfifo,10\n")
    result = runner.invoke(app, ["diff", str(bad), str(bad)])
    assert result.exit_code == 2
    assert "summary.csv: missing column(s) job_id, submit_time, start_time, end_time" in result.stderr
    missing = runner.invoke(app, ["diff", str(tmp_path / "nope"), str(bad)])
    assert missing.exit_code == 2 and "no such file or folder" in missing.stderr


def test_the_table_names_both_sides_and_the_first_divergence(tmp_path):
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    jobs([("1", "v", 1, 0, 0, 100), ("2", "v", 4, 5, 100, 200)]).to_csv(a, index=False)
    jobs([("1", "v", 1, 0, 0, 100), ("2", "v", 4, 5, 150, 250)]).to_csv(b, index=False)
    result = runner.invoke(app, ["diff", str(a), str(b)], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    assert "A = a.csv   B = b.csv" in result.stdout
    assert "first divergence at t=100 s: the start times differ" in result.stdout
    assert "+16.9%" in result.stdout  # avg JCT (100 + 195) / 2 in A, (100 + 245) / 2 in B


def test_a_files_own_jct_stands_and_json_has_null_where_a_figure_has_no_value(tmp_path):
    a = jobs([("1", "v", 1, 0, 0, 100), ("2", "w", 1, 0, 0, 50)])
    b = jobs([("1", "v", 1, 0, 0, 100)]).assign(jct=[130.0])  # an artifact counting JCT its own way
    a.to_csv(tmp_path / "a.csv", index=False)
    b.to_csv(tmp_path / "b.csv", index=False)
    result = runner.invoke(app, ["diff", str(tmp_path / "a.csv"), str(tmp_path / "b.csv"), "--json"])
    assert result.exit_code == 0, result.output

    def no_bare_nan(word):
        raise AssertionError(f"{word} is not JSON")

    figures = json.loads(result.stdout, parse_constant=no_bare_nan)
    assert figures["overall"]["avg_jct_b"] == 130.0 and figures["overall"]["equal_exact"] == 0
    per_vc = figures["per_vc"]
    assert per_vc["w"]["matched"] == 0 and per_vc["w"]["avg_jct_b"] is None  # no job of w in B
