"""`lucid-sim trace check` and `trace convert` on every format, and the trace options of `run`."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from simcluster.cli import app
from simcluster.paths import shared_data_dir
from simcluster.results import MARKER
from simcluster.traces import load_trace

runner = CliRunner()
PHILLY = ("timestamp,duration,num_gpus,gpu_time,cluster\n"
          "2017-10-02 00:00:10,600.0,2,1200.0,x\n2017-10-02 00:00:05,300.0,1,300.0,y\n2017-10-02 01:00:00,60.0,8,480,x\n")
ITP = "job_id,submission_time,duration,num_gpu\na,0,3600,8\nb,600,1800,1\nc,3600,600,2\n"


def philly(tmp_path: Path) -> Path:
    folder = tmp_path / "philly"
    folder.mkdir()
    (folder / "philly.csv").write_text(PHILLY)
    (folder / "vc_config.csv").write_text("vc,node num\nx,2\ny,1\n")
    return folder


def itp(tmp_path: Path) -> Path:
    path = tmp_path / "cluster07.csv"
    path.write_text(ITP)
    return path


def invoke(*args: str):
    return runner.invoke(app, [str(a) for a in args])


def test_check_says_format_time_rule_and_load_per_vc(tmp_path):
    result = invoke("trace", "check", philly(tmp_path))
    assert result.exit_code == 0, result.output
    text = result.stdout
    assert "3 valid jobs in 2 VCs" in text and "format: philly" in text
    assert "timestamps, seconds from 2017-10-02 00:00:00 (midnight of the first day)" in text
    assert "GPUs per job" in text and "Duration (s)" in text and "p99" in text
    # VC x: 2 nodes = 16 GPUs; asked 1200 + 480 GPU-s over a span of 3595 s
    assert f"{1680 / (16 * 3595):.3f}" in text


def test_check_on_a_log_without_vcs_suggests_nodes_for_target_loads(tmp_path):
    result = invoke("trace", "check", itp(tmp_path), "--gpus-per-node", "4")
    assert result.exit_code == 0, result.output
    assert "one VC (no VC column)" in result.stdout and "not sized" in result.stdout
    assert "Sizes for a target load (nodes of 4 GPUs)" in result.stdout
    sized = invoke("trace", "check", itp(tmp_path), "--load", "0.8")
    assert "--load 0.8 gives offered load" in sized.stdout


def test_check_on_a_log_named_by_columns(tmp_path):
    path = tmp_path / "mine.csv"
    path.write_text("T,G,D\n0,1,10\n5,2,20\n")
    result = invoke("trace", "check", path, "--columns", "submit_time=T,gpu_num=G,duration=D", "--nodes", "1")
    assert result.exit_code == 0, result.output
    assert "format: csv" in result.stdout and "2 valid jobs" in result.stdout


def test_check_reports_skipped_rows_by_reason(tmp_path):
    folder = philly(tmp_path)
    (folder / "philly.csv").write_text(PHILLY + "2017-10-02 02:00:00,60,1,60,\n2017-10-02 02:00:00,60,1,60,zz\n")
    result = invoke("trace", "check", folder, "--skip-invalid")
    assert result.exit_code == 0, result.output
    assert "skipped 1 × cluster: empty VC" in result.stdout
    assert "skipped 1 × cluster: VC not in the VC config" in result.stdout


def test_check_on_gavel_and_openb_traces(tmp_path):
    gavel = shared_data_dir() / "gavel_traces" / "t100.trace"
    openb = shared_data_dir() / "alibaba_openb" / "openb_pod_list_gpushare40.csv"
    if not gavel.is_file() or not openb.is_file():
        pytest.skip("shared Gavel/openb data not found (set SIMCLUSTER_DATA)")
    g = invoke("trace", "check", gavel, "--cluster", "v100:4,p100:4,k80:4")
    assert g.exit_code == 0, g.output
    assert "100 valid jobs" in g.stdout and "format: gavel" in g.stdout and "offered load" in g.stdout
    o = invoke("trace", "check", openb)
    assert o.exit_code == 0, o.output
    assert "format: openb" in o.stdout and "GPUs per job" in o.stdout


def test_convert_writes_a_canonical_folder_that_loads_back_to_the_same_jobs(tmp_path):
    source = philly(tmp_path)
    out = tmp_path / "canonical"
    result = invoke("trace", "convert", source, "--out", out)
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in out.iterdir() if p.name != MARKER) == [
        "cluster_full_log.csv", "conversion.json", "vc_config.csv"]
    before, after = load_trace(source), load_trace(out)
    columns = ["job_id", "vc", "gpu_num", "submit_time", "duration"]
    pd.testing.assert_frame_equal(before.frame[columns], after.frame[columns])
    assert after.vc_nodes == before.vc_nodes and after.format == "venus" and after.epoch == before.epoch
    provenance = json.loads((out / "conversion.json").read_text())
    assert provenance["format"] == "philly" and provenance["epoch"] == "2017-10-02 00:00:00"


def test_convert_sizes_a_log_without_vcs_and_refuses_one_without_a_size(tmp_path):
    unsized = invoke("trace", "convert", itp(tmp_path), "--out", tmp_path / "a")
    assert unsized.exit_code == 2 and "--nodes" in unsized.stderr and not (tmp_path / "a").exists()
    sized = invoke("trace", "convert", itp(tmp_path), "--out", tmp_path / "b", "--nodes", "3")
    assert sized.exit_code == 0, sized.output
    assert load_trace(tmp_path / "b").vc_nodes == {"cluster": 3}


def test_convert_replaces_a_folder_it_did_not_write_only_with_overwrite_and_never_the_input(tmp_path):
    source = philly(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    result = invoke("trace", "convert", source, "--out", out)
    assert result.exit_code == 2 and "notes.txt" in result.stderr and (out / "notes.txt").read_text() == "mine"
    inside = invoke("trace", "convert", source / "philly.csv", "--out", source, "--overwrite")
    assert inside.exit_code == 2 and "holds an input" in inside.stderr
    assert sorted(p.name for p in source.iterdir()) == ["philly.csv", "vc_config.csv"]


def test_convert_replaces_an_earlier_conversion_as_runs_replace_earlier_runs(tmp_path):
    source, out = philly(tmp_path), tmp_path / "out"
    assert invoke("trace", "convert", source, "--out", out).exit_code == 0
    assert invoke("trace", "convert", source, "--out", out).exit_code == 0
    (out / "notes.txt").write_text("mine")
    again = invoke("trace", "convert", source, "--out", out)
    assert again.exit_code == 2 and "--overwrite" in again.stderr and (out / "notes.txt").is_file()
    assert invoke("trace", "convert", source, "--out", out, "--overwrite").exit_code == 0


def test_convert_a_gavel_trace_to_durations_on_the_fastest_gpu(tmp_path):
    gavel = shared_data_dir() / "gavel_traces" / "t100.trace"
    if not gavel.is_file():
        pytest.skip("shared Gavel data not found (set SIMCLUSTER_DATA)")
    result = invoke("trace", "convert", gavel, "--out", tmp_path / "g", "--cluster", "v100:4,p100:4,k80:4",
                    "--gpus-per-node", "4")
    assert result.exit_code == 0, result.output
    trace = load_trace(tmp_path / "g", gpus_per_node=4)
    assert len(trace) == 100 and trace.vc_nodes == {"cluster": 3} and (trace.frame["duration"] > 0).all()


def test_run_records_the_format_and_the_size_in_the_summary(tmp_path):
    result = invoke("run", "--trace", itp(tmp_path), "--load", "0.5", "--policy", "sjf", "--json", "--out", tmp_path / "r")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["trace_format"] == "itp" and summary["jobs"] == 3
    assert summary["trace_sizing"].startswith("one VC of") and "--load 0.5" in summary["trace_sizing"]
    on_philly = invoke("run", "--trace", philly(tmp_path), "--json", "--out", tmp_path / "p")
    assert json.loads(on_philly.stdout)["trace_format"] == "philly"


def test_a_log_without_vcs_runs_under_a_gavel_policy_on_the_cluster_given(tmp_path):
    result = invoke("run", "--trace", itp(tmp_path), "--cluster", "v100:16", "--policy", "max_min_fairness",
                    "--json", "--out", tmp_path / "r")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["placement"] == "rounds" and summary["gpus"] == 16 and summary["trace_format"] == "itp"
    srtf = invoke("run", "--trace", itp(tmp_path), "--cluster", "v100:8,k80:8", "--policy", "srtf", "--json",
                  "--out", tmp_path / "s")
    assert srtf.exit_code == 0, srtf.output
    assert json.loads(srtf.stdout)["cluster"]["k80"]["gpus"] == 8  # the event-driven policies run on it too
