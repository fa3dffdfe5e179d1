"""Issue 43's adversarial round: a careless or hostile user at every newer surface — validate, replicas,
fragmentation, traces, sweeps, reports, synthetic traces.  Each case is refused in one paragraph naming the
option (or the file, line and field) and the value, before any work and with nothing written; none allocates
without bound, none runs for long, none prints a traceback.

The kinds (issue 43): non-finite or absurd numbers; inputs whose cost grows without bound; failures that were
tracebacks; messages that pointed at the wrong thing; silent acceptance.  Signals, read-only folders and
permissions: tests/test_unwritable.py and tests/test_signals.py.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from simcluster.cli import app
from simcluster.paths import DEFAULT_TRACE, shared_data_dir

runner = CliRunner()
QUICK = 20.0  # seconds: a refusal that takes longer than this did work it should not have


def lucid_sim(*args: str):
    started = time.monotonic()
    result = runner.invoke(app, [str(a) for a in args])
    result.seconds = time.monotonic() - started  # type: ignore[attr-defined]
    return result


def refused(result, *words: str, code: int = 2) -> None:
    """Exit ``code``, one paragraph on stderr holding ``words``, no traceback, quickly."""
    text = result.stderr
    assert result.exit_code == code, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output and "Error:" not in text.replace("error:", ""), text
    for word in words:
        assert word in text, (word, text)
    assert len(text) < 2000, text
    assert result.seconds < QUICK, result.seconds  # type: ignore[attr-defined]


# --- a run, and records made from it ------------------------------------------------------------------

@pytest.fixture(scope="module")
def made(tmp_path_factory) -> Path:
    """A run of the default trace (written by this version: its marker counts its rows)."""
    root = tmp_path_factory.mktemp("adversarial")
    result = runner.invoke(app, ["run", "-q", "--out", str(root / "run")])
    assert result.exit_code == 0, result.output
    return root


@pytest.fixture
def run_folder(made, tmp_path) -> Path:
    folder = tmp_path / "run"
    shutil.copytree(made / "run", folder)
    return folder


@pytest.fixture
def jobs_record(run_folder, tmp_path) -> Path:
    """A per-job record: the run's own jobs (seconds on its clock)."""
    path = tmp_path / "record.csv"
    pd.read_csv(run_folder / "jobs.csv")[["submit_time", "start_time", "end_time", "gpu_num"]].to_csv(path, index=False)
    return path


def changed(path: Path, row: int, column: str, value: str, out: Path) -> Path:
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    frame.loc[row, column] = value
    frame.to_csv(out, index=False)
    return out


@pytest.fixture
def bins_record(run_folder, tmp_path) -> Path:
    """An aggregate record of the run: jobs submitted and started per 10-minute bin."""
    jobs = pd.read_csv(run_folder / "jobs.csv")
    first = jobs["submit_time"].min() // 600 * 600
    edges = list(range(int(first), int(jobs["end_time"].max()) + 1200, 600))
    frame = pd.DataFrame({"time": edges[:-1],
                          "submit_gpu_job": pd.cut(jobs["submit_time"], edges, right=False).value_counts(sort=False)
                          .to_numpy(),
                          "start_gpu_job": pd.cut(jobs["start_time"], edges, right=False).value_counts(sort=False)
                          .to_numpy()})
    path = tmp_path / "bins.csv"
    frame.to_csv(path, index=False)
    return path


def validate(run: Path, record: Path, tmp_path: Path, *extra: str):
    out = tmp_path / "validation"
    result = lucid_sim("validate", run, "--recorded", record, "--out", out, *extra)
    if result.exit_code:
        assert not out.exists()
    return result


def test_the_run_and_its_records_validate_as_they_are(run_folder, jobs_record, bins_record, tmp_path):
    for record in (jobs_record, bins_record):
        result = validate(run_folder, record, tmp_path, "--json", "--overwrite")
        assert result.exit_code == 0, result.output
        assert json.loads(result.stdout)["simulated_arrivals"] == 2000


# --- non-finite or absurd numbers ----------------------------------------------------------------------

def test_a_recorded_count_of_1e30_is_refused_not_overflowed(run_folder, bins_record, tmp_path):
    record = changed(bins_record, 3, "submit_gpu_job", "1e30", tmp_path / "big.csv")
    refused(validate(run_folder, record, tmp_path), "big.csv, line 5, field 'submit_gpu_job'",
            "whole number from 0 to 1,000,000,000", "'1e30'")


@pytest.mark.parametrize("value", ["-3", "2.5", "inf", "nan", "seven"])
def test_a_recorded_count_that_is_no_count_is_refused(run_folder, bins_record, tmp_path, value):
    record = changed(bins_record, 10, "start_gpu_job", value, tmp_path / "bad.csv")
    refused(validate(run_folder, record, tmp_path), "bad.csv, line 12, field 'start_gpu_job'", repr(value))


@pytest.mark.parametrize(("column", "value", "problem"), [
    ("end_time", "inf", "not a finite number: 'inf'"),
    ("start_time", "-inf", "not a finite number: '-inf'"),
    ("submit_time", "1e300", "beyond the bound of 1e+11 s"),
    ("end_time", "1e15", "beyond the bound of 1e+11 s"),
])
def test_a_per_job_record_of_non_finite_or_absurd_times_is_refused(run_folder, jobs_record, tmp_path, column, value,
                                                                   problem):
    record = changed(jobs_record, 5, column, value, tmp_path / "times.csv")
    refused(validate(run_folder, record, tmp_path), f"times.csv, line 7, field '{column}'", problem)


@pytest.mark.parametrize("perturb", ["jitter:sigma=nan", "jitter:arrival=inf", "jitter:sigma=1e300",
                                     "bootstrap:block=1e-300", "bootstrap:block=-inf", "jitter:arrival=-5"])
def test_a_perturbation_of_non_finite_or_absurd_numbers_is_refused_before_any_run(tmp_path, perturb):
    out = tmp_path / "replicas"
    key = perturb.split(":")[1].split("=")[0]
    refused(lucid_sim("run", "-q", "--replicas", "2", "--perturb", perturb, "--out", out), f"--perturb '{perturb}'",
            key)
    assert not out.exists()
    refused(lucid_sim("sweep", "-q", "--replicas", "2", "--perturb", perturb, "--out", out), key)
    assert not out.exists()


@pytest.mark.parametrize(("command", "option"), [
    (["run", "-q"], ["--until", "nan"]),
    (["run", "-q", "--policy", "tiresias"], ["--quantum", "inf"]),
    (["run", "-q"], ["--node-mtbf", "-inf"]),
    (["validate", "RUN", "--recorded", "RECORD"], ["--bin", "inf"]),
    (["validate", "RUN", "--recorded", "RECORD"], ["--bin", "nan"]),
    (["trace", "synth", "--style", "gavel", "--jobs", "10"], ["--jobs-per-hour", "nan"]),
    (["trace", "synth", "--jobs", "10"], ["--load", "inf"]),
])
def test_a_number_option_given_nan_or_infinity_is_refused_by_name(run_folder, jobs_record, tmp_path, command, option):
    out = tmp_path / "out"
    args = [{"RUN": str(run_folder), "RECORD": str(jobs_record)}.get(a, a) for a in command]
    result = lucid_sim(*args, *option, "--out", out)
    assert result.exit_code == 2 and "Traceback" not in result.output, result.output
    assert option[0] in result.output and ("finite" in result.output or "greater than" in result.output)
    assert not out.exists()


def test_fragmentation_refuses_an_inflation_of_nan_instead_of_writing_an_empty_table(tmp_path):
    out = tmp_path / "frag"
    result = lucid_sim("fragmentation", "--trace", tmp_path, "--inflate", "nan", "--out", out)
    assert result.exit_code == 2 and "--inflate" in result.output and "finite" in result.output
    assert not out.exists()


@pytest.mark.parametrize(("inflate", "problem"), [("1e6", "at most 10"), ("0", "greater than 0"),
                                                  ("-1", "greater than 0")])
def test_fragmentation_bounds_the_inflation(tmp_path, inflate, problem):
    out = tmp_path / "frag"
    refused(lucid_sim("fragmentation", "--trace", tmp_path, "--inflate", inflate, "--out", out), "--inflate", problem)
    assert not out.exists()


@pytest.mark.parametrize("backlog", ["99999999999999999999999999", "9" * 5000, "-4", "lots"])
def test_a_backlog_that_is_no_count_is_refused(run_folder, bins_record, tmp_path, backlog):
    refused(validate(run_folder, bins_record, tmp_path, "--backlog", backlog), "--backlog must be 'min' or")


# --- inputs whose cost grows without bound ---------------------------------------------------------------

def test_a_bin_of_a_nanosecond_is_refused_instead_of_asking_for_petabytes(run_folder, jobs_record, tmp_path):
    refused(validate(run_folder, jobs_record, tmp_path, "--bin", "1e-9"), "--bin must be at least 1", "1e-09")


def test_a_window_of_more_bins_than_the_limit_is_refused(run_folder, jobs_record, tmp_path):
    refused(validate(run_folder, jobs_record, tmp_path, "--start", "0", "--end", "999999999", "--bin", "60"),
            "bins of 60 s, more than the limit of 1,000,000")


@pytest.mark.parametrize("command", ["run", "sweep"])
def test_a_billion_replicas_are_refused_before_one_is_built(tmp_path, command):
    out = tmp_path / "replicas"
    refused(lucid_sim(command, "-q", "--replicas", "1000000000", "--out", out), "--replicas must be at most 10,000")
    assert not out.exists()


def test_a_sweep_grid_beyond_the_run_limit_is_refused_before_it_is_built(tmp_path):
    seeds = ",".join(str(i) for i in range(1200))
    quanta = ",".join(str(10 + i) for i in range(1000))
    out = tmp_path / "sweep"
    refused(lucid_sim("sweep", "-q", "--policy", "tiresias", "--seed", seeds, "--set", f"quantum={quanta}",
                      "--out", out), "1,200,000 runs, more than the limit of 1,000,000")
    assert not out.exists()


def test_report_refuses_a_billion_posthoc_replicas(run_folder, tmp_path):
    refused(lucid_sim("report", run_folder, "--replicas", "1000000000", "--out", tmp_path / "r", "-q"),
            "--replicas must be from 0 to 10,000")


@pytest.mark.parametrize(("seeds", "problem"), [
    ("1-100000000000", "more than 10,000 seeds"),
    ("0-9999,20000-20005", "more than 10,000 seeds"),
    ("51-42", "a range runs from a seed to a larger one"),
    ("1-99999999999999999999999", "each from 0 to 2^63 - 1"),
    ("forty-two", "expected integers or ranges"),
])
def test_fragmentation_seeds_are_counted_before_any_list_is_built(tmp_path, seeds, problem):
    out = tmp_path / "frag"
    refused(lucid_sim("fragmentation", "--trace", tmp_path, "--seeds", seeds, "--out", out), "--seeds", problem)
    assert not out.exists()


def test_fragmentation_refuses_an_infinite_inflation_instead_of_drawing_pods_forever(tmp_path):
    result = lucid_sim("fragmentation", "--trace", tmp_path, "--inflate", "inf", "--out", tmp_path / "frag")
    assert result.exit_code == 2 and "finite" in result.output and result.seconds < QUICK


@pytest.mark.parametrize("command", [["trace", "check"], ["trace", "inspect"], ["run", "-q", "--trace"]])
def test_a_7_mb_single_line_csv_of_numbers_is_refused_at_its_header(tmp_path, monkeypatch, command):
    monkeypatch.chdir(tmp_path)  # (run's default folder)
    path = tmp_path / "numbers.csv"
    path.write_text(",".join(str(i) for i in range(1_000_000)) + "\n")
    refused(lucid_sim(*command, path), "numbers.csv, line 1", "header line is longer than 65,536 bytes")


def test_a_short_header_of_thousands_of_columns_is_refused(tmp_path):
    path = tmp_path / "wide.csv"
    path.write_text(",".join(f"c{i}" for i in range(5000)) + "\n" + ",".join("1" for _ in range(5000)) + "\n")
    refused(lucid_sim("trace", "check", path), "wide.csv, line 1", "5,000 columns, more than the limit of 1,000")


@pytest.mark.parametrize("option", [["--jobs", "100000000000"], ["--users", "100000000000", "--jobs", "10"],
                                    ["--nodes", "1000000000", "--jobs", "10"]])
def test_a_synthetic_trace_too_large_to_hold_is_refused_before_anything_is_drawn(tmp_path, option):
    out = tmp_path / "synth"
    refused(lucid_sim("trace", "synth", *option, "--out", out), "at most" if "--nodes" not in option else "limit")
    assert not out.exists()


def test_bootstrap_blocks_beyond_the_limit_stop_a_sweep_before_it_starts(tmp_path):
    trace = tmp_path / "far"  # two jobs three years apart: 1.6 million blocks of a minute
    trace.mkdir()
    (trace / "cluster_full_log.csv").write_text("job_id,user,vc,gpu_num,submit_time,duration\n"
                                                "a,u,v,1,2020-09-01 00:00:00,60\nb,u,v,1,2023-09-01 00:00:00,60\n")
    (trace / "vc_config.csv").write_text("vc,num\nv,1\n")
    out = tmp_path / "sweep"
    result = lucid_sim("sweep", "-q", "--trace", trace, "--replicas", "2", "--perturb", "bootstrap:block=60",
                       "--out", out)
    refused(result, "blocks of 60 s, more than the limit of 1,000,000")
    assert not (out / "runs").exists()


# --- failures that were tracebacks ---------------------------------------------------------------------

@pytest.mark.parametrize("keep", [100, 30_000, -7])
def test_validate_on_a_jobs_table_cut_mid_row_names_the_file(run_folder, jobs_record, tmp_path, keep):
    data = (run_folder / "jobs.csv").read_bytes()
    (run_folder / "jobs.csv").write_bytes(data[:keep])
    refused(validate(run_folder, jobs_record, tmp_path), "jobs.csv: its last row is cut short")


def test_validate_on_a_jobs_table_of_only_its_header_is_an_error(run_folder, jobs_record, tmp_path):
    data = (run_folder / "jobs.csv").read_text()
    (run_folder / "jobs.csv").write_text(data.split("\n")[0] + "\n")
    refused(validate(run_folder, jobs_record, tmp_path), "jobs.csv: holds 0 row(s) where 2,000 were written")


@pytest.mark.parametrize("summary", ["{not json", "[1, 2, 3]"])
def test_validate_and_report_on_a_broken_summary_say_so(run_folder, jobs_record, tmp_path, summary):
    (run_folder / "summary.json").write_text(summary)
    refused(validate(run_folder, jobs_record, tmp_path), "summary.json")
    refused(lucid_sim("report", run_folder, "--out", tmp_path / "report", "-q"), "summary.json")


def test_a_header_field_beyond_the_csv_modules_limit_is_an_error(tmp_path):
    path = tmp_path / "long.csv"
    path.write_text("job_id,submit_time,duration,gpu_num," + "x" * 200_000 + "\na,0,10,1,2\n")
    for command in (["trace", "check", path], ["run", "-q", "--trace", path, "--out", tmp_path / "r"],
                    ["trace", "convert", path, "--out", tmp_path / "c", "--nodes", "1"]):
        refused(lucid_sim(*command), "long.csv, line 1")


def test_a_row_longer_than_the_line_limit_is_an_error_naming_its_line(tmp_path):
    path = tmp_path / "quoted.csv"
    path.write_text('job_id,submit_time,duration,gpu_num\n"a",0,10,1\n' + "b" * 2_000_000 + ",5,10,1\n")
    refused(lucid_sim("trace", "check", path), "quoted.csv, line 3", "longer than 1,048,576 bytes")


def test_a_record_row_longer_than_the_line_limit_is_an_error(run_folder, jobs_record, tmp_path):
    record = changed(jobs_record, 5, "start_time", "x" * 30_000_000, tmp_path / "huge.csv")
    result = validate(run_folder, record, tmp_path)
    refused(result, "huge.csv, line 7", "longer than 1,048,576 bytes")


# --- messages that pointed at the wrong thing ----------------------------------------------------------

def test_one_nan_start_time_is_blamed_on_its_own_line_not_line_2(run_folder, jobs_record, tmp_path):
    record = changed(jobs_record, 5, "start_time", "nan", tmp_path / "nan.csv")
    result = validate(run_folder, record, tmp_path)
    refused(result, "nan.csv, line 7, field 'start_time': not a number: 'nan'")
    assert "line 2" not in result.stderr


def test_a_run_folder_without_summary_json_is_named_not_the_epoch(run_folder, bins_record, tmp_path):
    (run_folder / "summary.json").unlink()
    result = validate(run_folder, bins_record, tmp_path)
    refused(result, "no summary.json")
    assert "--epoch" not in result.stderr


def test_an_error_quoting_a_huge_field_quotes_a_readable_piece_of_it(run_folder, bins_record, tmp_path):
    record = changed(bins_record, 2, "submit_gpu_job", "7" * 500_000, tmp_path / "wide.csv")
    result = validate(run_folder, record, tmp_path)
    refused(result, "wide.csv, line 4", "(500,000 characters)")
    assert len(result.stderr) < 600


def test_a_trace_error_quoting_a_huge_field_is_short_too(tmp_path):
    path = tmp_path / "jobs.csv"
    path.write_text("job_id,submit_time,duration,gpu_num\na,0,10,1\nb,5,10," + "9" * 500_000 + "x\n")
    result = lucid_sim("trace", "check", path)
    refused(result, "jobs.csv, line 3, field 'gpu_num'", "characters)")
    assert len(result.stderr) < 800


# --- silent acceptance -----------------------------------------------------------------------------------

@pytest.mark.parametrize("perturb", ["nonsense", "jitter", "bootstrap:by=user"])
def test_a_perturbation_without_replicas_is_an_error_not_ignored(tmp_path, perturb):
    for command in ("run", "sweep"):
        out = tmp_path / command
        refused(lucid_sim(command, "-q", "--perturb", perturb, "--out", out), "--perturb")
        assert not out.exists()


def test_report_refuses_a_perturbation_without_replicas(run_folder, tmp_path):
    refused(lucid_sim("report", run_folder, "--perturb", "jitter", "--out", tmp_path / "r", "-q"),
            "--perturb needs --replicas")


def test_report_refuses_a_jobs_table_cut_short_at_a_row_boundary(run_folder, tmp_path):
    lines = (run_folder / "jobs.csv").read_text().split("\n")
    (run_folder / "jobs.csv").write_text("\n".join(lines[:1501]) + "\n")
    refused(lucid_sim("report", run_folder, "--out", tmp_path / "r", "-q"),
            "jobs.csv: holds 1,500 row(s) where 2,000 were written")
    assert not (tmp_path / "r").exists()


def test_report_refuses_a_cut_table_of_a_folder_written_before_rows_were_counted(run_folder, tmp_path):
    marker = json.loads((run_folder / ".simcluster.json").read_text())
    marker.pop("rows")
    (run_folder / ".simcluster.json").write_text(json.dumps(marker))
    lines = (run_folder / "jobs.csv").read_text().split("\n")
    (run_folder / "jobs.csv").write_text("\n".join(lines[:1501]) + "\n")
    refused(lucid_sim("report", run_folder, "--out", tmp_path / "r", "-q"),
            "holds 1,500 job(s) but summary.json counts 2,000")


@pytest.fixture
def sweep_folder(tmp_path) -> Path:
    out = tmp_path / "sweep"
    result = lucid_sim("sweep", "-q", "--trace", "synth:jobs=60,nodes=2,vcs=1", "--policy", "fifo,sjf,srtf",
                       "--workers", "1", "--out", out)
    assert result.exit_code == 0, result.output
    return out


def test_report_names_the_runs_a_sweep_lists_but_lacks_and_leaves_them_out_only_when_asked(sweep_folder, tmp_path):
    gone = next((sweep_folder / "runs").glob("*-sjf-*"))
    shutil.rmtree(gone)
    out = tmp_path / "report"
    refused(lucid_sim("report", sweep_folder, "--out", out, "-q"), gone.name, "its folder is gone", "--allow-missing")
    assert not out.exists()
    allowed = lucid_sim("report", sweep_folder, "--out", out, "--allow-missing", "--json")
    assert allowed.exit_code == 0, allowed.output
    report = json.loads(allowed.stdout)
    assert any(gone.name in note and "left out 1 run" in note for note in report["notes"])
    assert {row["policy"] for row in report["comparison"]} == {"fifo", "srtf"}


def test_report_names_a_sweep_run_whose_table_is_cut(sweep_folder, tmp_path):
    cut = next((sweep_folder / "runs").glob("*-srtf-*")) / "jobs.csv"
    cut.write_bytes(cut.read_bytes()[:-5])
    refused(lucid_sim("report", sweep_folder, "--out", tmp_path / "r", "-q"), cut.parent.name, "cut short")


def test_the_limits_are_documented():
    text = (Path(__file__).resolve().parents[1] / "docs" / "running.md").read_text()
    for figure in ("10,000 replicas", "1,000,000 runs", "10,000 seeds", "1,000,000 bins", "1 MiB", "1,000 columns"):
        assert figure in text, figure


@pytest.mark.skipif(not (shared_data_dir() / "alibaba_openb").is_dir(), reason="needs the openb trace")
def test_fragmentation_still_runs_at_the_documented_bounds(tmp_path):
    result = lucid_sim("fragmentation", "--trace", shared_data_dir() / "alibaba_openb", "--placement", "bestfit",
                       "--seeds", "42", "--inflate", "0.5", "--out", tmp_path / "frag", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["arrived_pct"] == 100


def test_the_default_trace_is_untouched_by_these_probes():
    assert (DEFAULT_TRACE / "cluster_full_log.csv").is_file()
