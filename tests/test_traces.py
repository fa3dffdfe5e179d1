"""Bad input gets a clear error naming file, line and field; nothing is written."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from simcluster.cli import main
from simcluster.traces import TraceError, load_trace

HEADER = "job_id,user,vc,gpu_num,submit_time,duration\n"
GOOD = ["1,u,a,1,2020-09-01 00:00:00,10", "2,u,a,8,2020-09-01 00:00:05,20", "3,u,b,2,2020-09-01 00:01:00,30"]


def write_trace(tmp_path: Path, rows: list[str], header: str = HEADER, config: str = "vc,num\na,1\nb,1\n") -> Path:
    folder = tmp_path / "trace"
    folder.mkdir(exist_ok=True)
    (folder / "cluster_full_log.csv").write_text(header + "\n".join(rows) + "\n")
    (folder / "vc_config.csv").write_text(config)
    return folder


def test_a_good_trace_loads_with_seconds_from_the_epoch(tmp_path):
    trace = load_trace(write_trace(tmp_path, GOOD))
    assert trace.frame["submit_time"].tolist() == [13219200, 13219205, 13219260]
    assert trace.vc_nodes == {"a": 1, "b": 1}


def test_integer_submit_times_are_taken_as_seconds(tmp_path):
    trace = load_trace(write_trace(tmp_path, ["1,u,a,1,50,10", "2,u,a,1,7,10"]))
    assert trace.frame["submit_time"].tolist() == [7, 50]  # sorted, stable


@pytest.mark.parametrize(
    ("rows", "line", "field", "problem"),
    [
        (GOOD[:1] + ["2,u,a,1,yesterday,5"], 3, "submit_time", "unparsable time 'yesterday'"),
        (GOOD[:2] + ["3,u,a,1,2020-09-01 00:00:09,-4"], 4, "duration", "must be non-negative, got -4"),
        (["1,u,a,1,2020-09-01 00:00:00,2.5"], 2, "duration", "not an integer: '2.5'"),
        (["1,u,a,1,2020-09-01 00:00:00,abc"], 2, "duration", "not a number: 'abc'"),
        (["1,u,a,0,2020-09-01 00:00:00,5"], 2, "gpu_num", "must be positive, got 0"),
        (["1,u,a,16,2020-09-01 00:00:00,5"], 2, "gpu_num", "asks for 16 GPUs but VC 'a' has 8"),
        (["1,u,zz,1,2020-09-01 00:00:00,5"], 2, "vc", "VC 'zz' is not in the VC config"),
        (["1,u,a,1,2020-09-01 00:00:00,5", "1,u,a,1,2020-09-01 00:00:00,5"], 3, "job_id", "duplicate job id '1'"),
    ],
)
def test_each_bad_row_is_reported_with_file_line_and_field(tmp_path, rows, line, field, problem):
    with pytest.raises(TraceError) as caught:
        load_trace(write_trace(tmp_path, rows))
    message = str(caught.value)
    assert "cluster_full_log.csv" in message and f"line {line}" in message and f"field '{field}'" in message
    assert problem in message


def test_missing_columns_are_named(tmp_path):
    with pytest.raises(TraceError, match=r"line 1, field 'gpu_num': missing column\(s\) gpu_num"):
        load_trace(write_trace(tmp_path, ["1,u,a,2020-09-01 00:00:00,5"], header="job_id,user,vc,submit_time,duration\n"))


def test_bad_vc_config_is_reported(tmp_path):
    with pytest.raises(TraceError, match=r"vc_config.csv, line 3, field 'num': node count must be a positive integer"):
        load_trace(write_trace(tmp_path, GOOD, config="vc,num\na,1\nb,x\n"))


def test_skip_invalid_drops_bad_rows_and_counts_them(tmp_path):
    rows = GOOD + ["4,u,zz,1,2020-09-01 00:00:00,5", "5,u,a,1,2020-09-01 00:00:00,-1", "6,u,a,1,bad,1"]
    trace = load_trace(write_trace(tmp_path, rows), skip_invalid=True)
    assert len(trace) == 3
    assert sum(trace.skipped.values()) == 3
    assert any(k.startswith("vc:") for k in trace.skipped)


def test_the_cli_exits_non_zero_and_writes_no_results(tmp_path, capsys):
    folder = write_trace(tmp_path, GOOD[:1] + ["2,u,a,1,2020-09-01 00:00:00,-3"])
    out = tmp_path / "results" / "run"
    with pytest.raises(SystemExit) as exited:
        main(["run", "--trace", str(folder), "--out", str(out), "--quiet"])
    assert exited.value.code == 2
    assert "line 3, field 'duration'" in capsys.readouterr().err
    assert not out.exists()
    assert not list((tmp_path / "results").glob("*")) if (tmp_path / "results").exists() else True


def test_a_failed_write_leaves_no_partial_results(tmp_path, monkeypatch):
    import pandas as pd

    from simcluster import results

    def boom(self, *a, **k):
        raise OSError("disk full")

    monkeypatch.setattr(pd.DataFrame, "to_csv", boom)
    monkeypatch.setattr(results, "write_csv", boom)
    with pytest.raises(OSError):
        results.write_run(tmp_path / "run", {"jobs": pd.DataFrame({"a": [1]})}, {"x": 1})
    assert list(tmp_path.iterdir()) == []


def test_a_csv_file_with_vc_config_option(tmp_path):
    folder = write_trace(tmp_path, GOOD)
    csv = tmp_path / "jobs.csv"
    csv.write_text((folder / "cluster_full_log.csv").read_text())
    runner = CliRunner()
    from simcluster.cli import app

    result = runner.invoke(app, ["trace", "check", str(csv), "--vc-config", str(folder / "vc_config.csv")])
    assert result.exit_code == 0, result.output
    assert "3 valid jobs" in result.stdout
    missing = runner.invoke(app, ["trace", "check", str(csv)])
    assert missing.exit_code == 2 and "VC config not found" in missing.stderr
