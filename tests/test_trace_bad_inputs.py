"""Inputs that used to escape validation (issue 18's probe): each now stops `lucid-sim run` and `trace check`
with the file, line, field and what is wrong, exit code 2, and nothing written; --skip-invalid drops the row."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from simcluster.cli import app

HEADER = "job_id,user,vc,gpu_num,submit_time,duration\n"
GOOD = "1,u,a,1,2020-09-01 00:00:00,10"
runner = CliRunner()


def trace_folder(tmp_path: Path, rows: list[str], config: str = "vc,num\na,2\n") -> Path:
    folder = tmp_path / "trace"
    folder.mkdir()
    (folder / "cluster_full_log.csv").write_text(HEADER + "".join(r + "\n" for r in rows))
    (folder / "vc_config.csv").write_text(config)
    return folder


BAD_ROWS = [
    pytest.param([GOOD, "2,u,a,1,2020-09-01 00:00:01,inf"], 3, "duration", "not a finite number: 'inf'", id="inf-duration"),
    pytest.param([GOOD, "2,u,a,inf,2020-09-01 00:00:01,5"], 3, "gpu_num", "not a finite number: 'inf'", id="inf-gpus"),
    pytest.param([GOOD, "2,u,a,1,2020-09-01 00:00:01,-inf"], 3, "duration", "not a finite number", id="minus-inf"),
    pytest.param([GOOD, "2,u,a,1,2020-09-01 00:00:01,nan"], 3, "duration", "not a number: 'nan'", id="nan-duration"),
    pytest.param([GOOD, "2,u,a,1,2020-09-01 00:00:01,1e19"], 3, "duration", "1e19 is beyond the bound of "
                 "1,000,000,000 s", id="huge-duration"),
    pytest.param([GOOD, "2,u,a,1e12,2020-09-01 00:00:01,5"], 3, "gpu_num", "1e12 is beyond the bound of 1,000,000 GPUs",
                 id="huge-gpus"),
    pytest.param(["1,u,a,1,5,10", "2,u,a,1,99999999999999999999999999,5"], 3, "submit_time",
                 "beyond the bound of 1e+09 s", id="overflowing-seconds"),
    pytest.param([GOOD, "2,u,a,1,99999999999999999999999999,5"], 3, "submit_time", "unparsable time", id="number-in-stamps"),
    pytest.param(["1,u,a,1,2020-09-01T00:01:43+08:00,5", "2,u,a,1,2020-09-01 00:02:43,5"], 3, "submit_time",
                 "lacks a timezone and the first timestamp ('2020-09-01T00:01:43+08:00') has one", id="mixed-timezones"),
    pytest.param([GOOD, "2,u,a,1,1999-01-01 00:00:00,5"], 3, "submit_time", "before the epoch 2020-04-01 00:00:00",
                 id="before-epoch"),
    pytest.param([GOOD, "2,u,,1,2020-09-01 00:00:01,5"], 3, "vc", "empty VC name", id="empty-vc"),
    pytest.param([GOOD, "2,u,zz,1,2020-09-01 00:00:01,5"], 3, "vc", "VC 'zz' is not in the VC config", id="unknown-vc"),
    pytest.param([GOOD, "2,u,a,17,2020-09-01 00:00:01,5"], 3, "gpu_num", "asks for 17 GPUs but VC 'a' has 16",
                 id="larger-than-its-vc"),
]


@pytest.mark.parametrize(("rows", "line", "field", "problem"), BAD_ROWS)
def test_a_bad_row_stops_the_run_naming_file_line_and_field_and_nothing_is_written(tmp_path, rows, line, field, problem):
    out = tmp_path / "results"
    result = runner.invoke(app, ["run", "--trace", str(trace_folder(tmp_path, rows)), "--out", str(out), "--quiet"])
    assert result.exit_code == 2, result.output
    assert f"cluster_full_log.csv, line {line}, field '{field}'" in result.stderr and problem in result.stderr
    assert "Traceback" not in result.output
    assert not out.exists()


@pytest.mark.parametrize(("rows", "line", "field", "problem"), BAD_ROWS)
def test_skip_invalid_drops_the_bad_row_and_counts_it(tmp_path, rows, line, field, problem):
    out = tmp_path / "results"
    result = runner.invoke(app, ["run", "--trace", str(trace_folder(tmp_path, rows)), "--out", str(out), "--json",
                                 "--skip-invalid"])
    assert result.exit_code == 0, result.output
    import json

    summary = json.loads(result.stdout)
    assert summary["jobs"] == 1 and sum(summary["skipped_rows"].values()) == 1
    assert next(iter(summary["skipped_rows"])).startswith(f"{field}: ")


@pytest.mark.parametrize("command", ["run", "check"])
def test_a_header_only_job_log_is_an_error_not_a_traceback(tmp_path, command):
    folder = trace_folder(tmp_path, [])
    out = tmp_path / "results"
    args = ["run", "--trace", str(folder), "--out", str(out), "-q"] if command == "run" else ["trace", "check", str(folder)]
    result = runner.invoke(app, args)
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "cluster_full_log.csv, line 1: the job log has a header but no jobs" in result.stderr
    assert not out.exists()


@pytest.mark.parametrize(("count", "problem"), [
    ("100000000", ("VC 'a' (100,000,000 nodes × 8 GPUs) would bring the cluster to 800,000,000 GPUs, more than "
                   "the limit of 1,000,000 GPUs")),
    ("1e8", "node count must be a positive integer, got '1e8'"),
])
def test_a_vc_config_beyond_the_gpu_limit_is_refused_at_once_with_the_figure(tmp_path, count, problem):
    folder = trace_folder(tmp_path, [GOOD], config=f"vc,num\na,{count}\n")
    out = tmp_path / "results"
    result = runner.invoke(app, ["run", "--trace", str(folder), "--out", str(out), "-q"])
    assert result.exit_code == 2
    assert "vc_config.csv, line 2, field 'num'" in result.stderr and problem in result.stderr
    assert not out.exists()


@pytest.mark.parametrize("option", [["--nodes", "1000000"], ["--cluster", "v100:800000000"], ["--load", "0.001"]])
def test_a_size_option_beyond_the_gpu_limit_is_refused_with_the_figure(tmp_path, option):
    path = tmp_path / "jobs.csv"
    path.write_text("job_id,submission_time,duration,num_gpu\na,0,1000000,1\nb,100,1000000,1\n")
    out = tmp_path / "results"
    result = runner.invoke(app, ["run", "--trace", str(path), *option, "--out", str(out), "-q"])
    assert result.exit_code == 2, result.output
    assert "more than the limit of 1,000,000 GPUs" in result.stderr and "Traceback" not in result.output
    assert not out.exists()


def test_timestamps_with_a_timezone_run(tmp_path):
    folder = trace_folder(tmp_path, ["1,u,a,1,2020-09-01T00:01:43+08:00,5", "2,u,a,1,2020-09-01T00:02:43+08:00,5"])
    result = runner.invoke(app, ["run", "--trace", str(folder), "--out", str(tmp_path / "r"), "--json"])
    assert result.exit_code == 0, result.output


def test_an_unparsable_epoch_is_an_error(tmp_path):
    folder = trace_folder(tmp_path, [GOOD])
    result = runner.invoke(app, ["trace", "check", str(folder), "--epoch", "someday"])
    assert result.exit_code == 2 and "--epoch: not a timestamp: 'someday'" in result.stderr
