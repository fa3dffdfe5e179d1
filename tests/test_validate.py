"""`lucid-sim validate`: a run beside a cluster's record, checked on synthetic clusters whose queueing is known."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from conftest import make_trace
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from simcluster.api import simulate
from simcluster.cli import app
from simcluster.config import SimConfig
from simcluster.results import write_run
from simcluster.traces.errors import TraceError
from simcluster.traces.synth import SynthSpec, synthesize
from simcluster.validate import BinRecord, JobRecord, ValidateError, read_record, validate

EPOCH = pd.Timestamp("2020-04-01")


def throughput_bins(jobs: pd.DataFrame, width: float = 600.0, first: float | None = None,
                    last: float | None = None) -> pd.DataFrame:
    """An aggregate record of a per-job table, made as the Helios artifact made cluster_throughput.csv: per bin
    [t, t + width), the jobs (and GPUs) whose submit, start or end time falls in it."""
    first = math.floor(jobs["submit_time"].min() / width) * width if first is None else first
    last = jobs[["submit_time", "start_time", "end_time"]].max().max() if last is None else last
    edges = np.arange(first, last + width, width)
    table = {"time": edges[:-1]}
    for kind in ("submit", "start", "end"):
        times = jobs[f"{kind}_time"].to_numpy(dtype=float)
        table[f"{kind}_gpu_job"] = np.histogram(times, edges)[0]
        table[f"{kind}_gpu_num"] = np.histogram(times, edges, weights=jobs["gpu_num"])[0].astype(int)
    return pd.DataFrame(table)


@pytest.fixture(scope="module")
def fifo_run():
    """A synthetic cluster of one VC under fifo: a known queue (first come, first served), busy enough to wait."""
    return simulate(synthesize(SynthSpec(jobs=3000, nodes=4, vcs=1, load=0.9, seed=3)), SimConfig(policy="fifo"))


def waiting_before(jobs: pd.DataFrame, at: np.ndarray, submitted_from: float = -math.inf) -> np.ndarray:
    """The true number of jobs waiting just before each instant of ``at`` (submitted before it, not started)."""
    submit, start = jobs["submit_time"].to_numpy(), jobs["start_time"].to_numpy()
    own = submit >= submitted_from
    return np.array([int(((submit[own] < t) & (start[own] >= t)).sum()) for t in at])


def test_littles_law_on_an_aggregate_record_gives_back_the_clusters_own_queueing(fifo_run, tmp_path):
    record = tmp_path / "cluster_throughput.csv"
    throughput_bins(fifo_run.jobs).to_csv(record, index=False)
    last_start = fifo_run.jobs["start_time"].max()  # (a window with every wait whole)
    figures = validate(fifo_run, record, end=last_start).figures()
    true_wait = fifo_run.jobs["queue"].mean()
    assert true_wait > 1000  # (a cluster that queues)
    assert figures["recorded_avg_queue"] == pytest.approx(true_wait, rel=0.03)
    assert figures["recorded_avg_queue"] == pytest.approx(figures["simulated_avg_queue"], rel=0.01)
    assert figures["correlation_waiting"] > 0.99 and figures["correlation_running_gpus"] > 0.99


def test_a_record_that_starts_with_jobs_waiting_is_read_with_its_backlog(fifo_run, tmp_path):
    jobs = fifo_run.jobs
    full = throughput_bins(jobs)
    cut = full.iloc[len(full) // 3:].reset_index(drop=True)  # the record starts mid-run, jobs waiting
    record = tmp_path / "record.csv"
    cut.to_csv(record, index=False)
    read = read_record(record)
    assert isinstance(read, BinRecord)
    edges = read.edges
    truth = waiting_before(jobs, edges)
    assert truth[0] > 0  # (jobs are waiting when the record starts)
    assert read.backlog("min") <= truth[0]  # a lower bound
    assert read.waiting_at_edges(int(truth[0])).tolist() == truth.tolist()  # the exact backlog: exact counts
    # one VC under fifo: the jobs waiting when the window opens do start first, so leaving them out as they
    # start counts exactly the window's own jobs
    window = read.series(edges, "first", int(truth[0]))
    own = waiting_before(jobs, edges, submitted_from=edges[0])
    assert np.allclose(window.waiting, (own[:-1] + own[1:]) / 2)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 20000), st.floats(0, 5000), st.floats(1, 5000), st.integers(1, 8)),
                min_size=1, max_size=40), st.integers(0, 30))
def test_waiting_at_the_edges_is_backlog_plus_submitted_minus_started(jobs, cut_bins):
    frame = pd.DataFrame(jobs, columns=["submit_time", "wait", "duration", "gpu_num"]).round()
    frame["start_time"] = frame["submit_time"] + frame["wait"]
    frame["end_time"] = frame["start_time"] + frame["duration"]
    bins = throughput_bins(frame, first=0.0)
    bins = bins.iloc[min(cut_bins, len(bins) - 1):]
    record = BinRecord("r", bins["time"].to_numpy(float), bins["submit_gpu_job"].to_numpy(),
                       bins["start_gpu_job"].to_numpy(), bins["start_gpu_num"].to_numpy(),
                       bins["end_gpu_num"].to_numpy(), 600.0)
    truth = waiting_before(frame, record.edges)
    assert record.waiting_at_edges(int(truth[0])).tolist() == truth.tolist()
    assert record.backlog("min") <= truth[0]


def test_a_per_job_record_is_read_exactly(fifo_run, tmp_path):
    jobs = fifo_run.jobs
    log = pd.DataFrame({"job_id": jobs["job_id"], "gpu_num": jobs["gpu_num"], "state": "COMPLETED"})
    for kind in ("submit", "start", "end"):  # as Helios' cluster_log.csv: timestamps, counted from its epoch
        log[f"{kind}_time"] = (EPOCH + pd.to_timedelta(jobs[f"{kind}_time"], unit="s")).dt.strftime("%Y-%m-%d %H:%M:%S")
    log.loc[len(log)] = {"job_id": "cpu", "gpu_num": 0, "state": "COMPLETED", "submit_time": log["submit_time"][0],
                         "start_time": "", "end_time": ""}  # a CPU job: left out
    path = tmp_path / "cluster_log.csv"
    log.to_csv(path, index=False)
    read = read_record(path, epoch=str(EPOCH))
    assert isinstance(read, JobRecord) and len(read.submit) == len(jobs)
    figures = validate(fifo_run, path, epoch=str(EPOCH)).figures()
    assert figures["recorded_avg_queue_per_job"] == pytest.approx(jobs["queue"].mean())
    assert figures["queue_ratio"] == pytest.approx(1.0)
    assert figures["correlation_waiting"] == pytest.approx(1.0)


def test_the_comparison_has_a_row_per_day_and_names_the_days_that_differ_most(fifo_run, tmp_path):
    bins = throughput_bins(fifo_run.jobs)
    busy = bins["time"] >= bins["time"].iloc[len(bins) // 2]
    bins.loc[busy & (bins.index % 7 == 0), "submit_gpu_job"] += 1  # a record with more waiting in its later half
    record = tmp_path / "record.csv"
    bins.to_csv(record, index=False)
    result = validate(fifo_run, record)
    days = result.days()
    lo, hi = result.window
    assert days["bins"].sum() == len(result.recorded.arrivals) == (hi - lo) / 600
    assert days["date"].iloc[0] == "2020-09-01"
    worst = result.divergent_days(3)
    assert len(worst) == 3 and worst["waiting_gap"].abs().is_monotonic_decreasing
    assert (worst["day"] >= days["day"].median()).all()


def test_a_run_and_a_record_on_different_clocks_are_refused_with_a_hint(fifo_run, tmp_path):
    bins = throughput_bins(fifo_run.jobs)
    bins["time"] += 400 * 86400  # a year later
    record = tmp_path / "record.csv"
    bins.to_csv(record, index=False)
    with pytest.raises(ValidateError, match="no overlap.*--epoch"):
        validate(fifo_run, record)


@pytest.mark.parametrize(("change", "message"), [
    (lambda b: b.drop(columns="start_gpu_job"), "neither an aggregate record .* nor a per-job log"),
    (lambda b: b.drop(index=5), "line 7, field 'time': bins must be evenly spaced"),
    (lambda b: b.assign(submit_gpu_job=b["submit_gpu_job"].where(b.index != 3, -1)),
     "line 5, field 'submit_gpu_job': must be a whole number"),
])
def test_a_bad_record_is_named_by_file_line_and_field(fifo_run, tmp_path, change, message):
    record = tmp_path / "bad.csv"
    change(throughput_bins(fifo_run.jobs)).to_csv(record, index=False)
    with pytest.raises(TraceError, match=message):
        read_record(record)


def test_timestamps_need_the_runs_epoch(tmp_path):
    record = tmp_path / "record.csv"
    pd.DataFrame({"time": ["2020-09-01 00:00:00"], "submit_gpu_job": [1], "start_gpu_job": [1]}).to_csv(record,
                                                                                                        index=False)
    with pytest.raises(TraceError, match="give --epoch"):
        read_record(record)
    assert read_record(record, epoch="2020-09-01").times.tolist() == [0.0]


def test_lucid_sim_validate_writes_its_folder_and_prints_one_json_document(fifo_run, tmp_path):
    run = write_run(tmp_path / "run", fifo_run.tables(), fifo_run.summary)
    record = tmp_path / "cluster_throughput.csv"
    throughput_bins(fifo_run.jobs).to_csv(record, index=False)
    out = tmp_path / "validation"
    result = CliRunner().invoke(app, ["validate", str(run), "--recorded", str(record), "--out", str(out), "--json"])
    assert result.exit_code == 0, result.output
    printed = json.loads(result.stdout)
    assert printed["recorded_avg_queue"] == pytest.approx(printed["simulated_avg_queue"], rel=0.01)
    assert sorted(p.name for p in out.iterdir()) == [".simcluster.json", "days.csv", "running_gpus.png",
                                                     "series.csv", "validation.json", "waiting.png"]
    table = CliRunner().invoke(app, ["validate", str(run), "--recorded", str(record), "--out", str(out)])
    assert table.exit_code == 0 and "Little's law" in table.stdout


def test_lucid_sim_validate_rejects_bad_input_and_writes_nothing(fifo_run, tmp_path):
    run = write_run(tmp_path / "run", fifo_run.tables(), fifo_run.summary)
    record = tmp_path / "record.csv"
    throughput_bins(fifo_run.jobs).drop(columns="start_gpu_job").to_csv(record, index=False)
    out = tmp_path / "validation"
    result = CliRunner().invoke(app, ["validate", str(run), "--recorded", str(record), "--out", str(out)])
    assert result.exit_code == 2 and "record.csv" in result.output and not out.exists()
    result = CliRunner().invoke(app, ["validate", str(run), "--recorded", str(record), "--out", str(out),
                                      "--backlog", "some"])
    assert result.exit_code == 2 and not out.exists()


def test_a_preempting_run_says_its_series_count_first_waits(tmp_path):
    run = simulate(make_trace([("a", 8, 0, 1000), ("a", 8, 100, 50)], {"a": 1}), SimConfig(policy="srtf"))
    log = JobRecord.from_frame(run.jobs, "log")
    result = validate(run, log)
    assert any("first wait" in note for note in result.notes)
    assert result.figures()["simulated_avg_queue_all_waits"] == run.summary["avg_queue"]


def test_venus_september_queued_about_two_thousand_seconds(venus_sept):
    """The record's own figure on the trace's span, as docs/validate.md quotes it."""
    run = simulate(__import__("simcluster.api", fromlist=["load_trace"]).load_trace(venus_sept),
                   SimConfig(policy="fifo-backfill", placement="consolidate-first"))
    result = validate(run, venus_sept / "cluster_throughput.csv")
    figures = result.figures()
    assert result.settings["backlog_jobs"] == 7
    assert figures["recorded_avg_queue"] == pytest.approx(1868, abs=1)
    assert figures["recorded_arrivals"] == 24171 and figures["simulated_arrivals"] == 23859
    assert figures["queue_ratio"] < 1.5 and figures["correlation_waiting"] > 0.85


def test_the_window_keeps_a_job_submitted_on_its_last_bin_edge():
    log = JobRecord.from_frame(pd.DataFrame({"submit_time": [0, 600], "start_time": [0, 600],
                                             "end_time": [60, 660], "gpu_num": [1, 1]}), "log")
    run = simulate(make_trace([("a", 1, 0, 60), ("a", 1, 600, 60)], {"a": 1}))
    result = validate(run, log)
    assert result.window == (0.0, 1200.0) and result.figures()["simulated_arrivals"] == 2


def test_columns_must_name_field_and_column(fifo_run, tmp_path):
    run = write_run(tmp_path / "run", fifo_run.tables(), fifo_run.summary)
    record = tmp_path / "record.csv"
    throughput_bins(fifo_run.jobs).rename(columns={"start_gpu_job": "started"}).to_csv(record, index=False)
    ok = CliRunner().invoke(app, ["validate", str(run), "--recorded", str(record), "--columns", "started=started",
                                  "--out", str(tmp_path / "v"), "--json"])
    assert ok.exit_code == 0, ok.output
    bad = CliRunner().invoke(app, ["validate", str(run), "--recorded", str(record), "--columns", "started",
                                   "--out", str(tmp_path / "w")])
    assert bad.exit_code == 2 and "FIELD=COLUMN" in bad.output
