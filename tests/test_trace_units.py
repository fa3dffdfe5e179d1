"""Traces in any units: --duration-unit, --time-format, --epoch, --delimiter, the loader's doubts, and
`lucid-sim trace inspect`."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from simcluster import load_trace
from simcluster.api import TraceWarning
from simcluster.cli import app
from simcluster.errors import TraceError

runner = CliRunner()
COLUMNS = "job_id=job,submit_time=start,gpu_num=gpus,duration=took"
START = pd.Timestamp("2021-03-01 10:00:00")


def write(tmp_path: Path, text: str, name: str = "jobs.csv") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def loaded_quietly(path: Path, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a doubt would be an error here
        return load_trace(path, nodes=2, **options)


def doubts_of(path: Path, **options) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trace = load_trace(path, nodes=2, **options)
    said = [str(w.message) for w in caught if issubclass(w.category, TraceWarning)]
    assert len(said) == len(trace.warnings)
    return said


# --- durations -------------------------------------------------------------------------------------------------

MINUTES = "job,start,gpus,duration_min\na,0,1,2\nb,60,8,90\nc,600,2,30\n"


def test_a_minutes_log_loads_as_seconds_with_a_warning_naming_the_option_and_correctly_with_it(tmp_path):
    path = write(tmp_path, MINUTES)
    columns = "job_id=job,submit_time=start,gpu_num=gpus,duration=duration_min"
    said = doubts_of(path, columns=columns)
    assert len(said) == 1 and "sounds like minutes" in said[0] and "--duration-unit min" in said[0]
    trace = loaded_quietly(path, columns=columns, duration_unit="min")
    assert trace.frame["duration"].tolist() == [120, 5400, 1800]
    assert trace.duration_unit == "min"


def test_fractional_minutes_and_hours_round_to_whole_seconds_and_without_the_unit_the_error_says_which_option(tmp_path):
    path = write(tmp_path, "job,start,gpus,took\na,0,1,0.25\nb,60,8,1.5\nc,600,2,0.0004\n")
    assert loaded_quietly(path, columns=COLUMNS, duration_unit="h").frame["duration"].tolist() == [900, 5400, 1]
    assert loaded_quietly(path, columns=COLUMNS, duration_unit="min").frame["duration"].tolist() == [15, 90, 0]
    with pytest.raises(TraceError, match=r"line 2, field 'took': not an integer: '0.25' .*--duration-unit ms, min or h"):
        load_trace(path, columns=COLUMNS, nodes=2)


def test_a_median_duration_under_a_second_or_over_thirty_days_is_a_warning(tmp_path):
    hours = write(tmp_path, "job,start,gpus,took\na,0,1,0\nb,60,8,0\nc,600,2,3\n")
    assert any("median is 0 s" in d and "--duration-unit min or h" in d for d in doubts_of(hours, columns=COLUMNS))
    millis = write(tmp_path, "job,start,gpus,took\na,0,1,3600000\nb,60,8,7200000\nc,600,2,5400000\n", "ms.csv")
    said = doubts_of(millis, columns=COLUMNS)
    assert any("days" in d and "--duration-unit ms" in d for d in said)
    assert loaded_quietly(millis, columns=COLUMNS, duration_unit="ms").frame["duration"].tolist() == [3600, 7200, 5400]


def test_an_unknown_duration_unit_is_refused(tmp_path):
    with pytest.raises(ValueError, match="--duration-unit must be one of s, ms, min, h"):
        load_trace(write(tmp_path, MINUTES), duration_unit="days")


# --- submit times ----------------------------------------------------------------------------------------------

def millis(seconds_after_start: list[int]) -> list[int]:
    return [int((START - pd.Timestamp(0)).total_seconds() + s) * 1000 for s in seconds_after_start]


def test_a_millisecond_epoch_log_loads_correctly_with_the_time_format_and_with_a_warning_without_it(tmp_path):
    stamps = millis([0, 3600, 86400 + 5])
    path = write(tmp_path, "job,start,gpus,took\n" + "".join(
        f"{j},{t},1,60\n" for j, t in zip("abc", stamps)))
    told = loaded_quietly(path, columns=COLUMNS, time_format="epoch-ms")
    assert told.frame["submit_time"].tolist() == [36000, 39600, 122405]  # from midnight of the first day
    assert told.epoch == "2021-03-01 00:00:00" and "Unix epoch milliseconds" in told.time_rule
    said = doubts_of(path, columns=COLUMNS)
    assert len(said) == 1 and "Unix epoch milliseconds" in said[0] and "--time-format epoch-ms" in said[0]
    with pytest.warns(TraceWarning):
        guessed = load_trace(path, columns=COLUMNS, nodes=2)  # (warned, but read the same)
    assert guessed.frame["submit_time"].tolist() == told.frame["submit_time"].tolist()


def test_epoch_s_reads_small_unix_times_and_an_epoch_sets_second_zero(tmp_path):
    path = write(tmp_path, "job,start,gpus,took\na,86400,1,60\nb,90000,1,60\n")
    relative = loaded_quietly(path, columns=COLUMNS)
    assert relative.frame["submit_time"].tolist() == [86400, 90000] and relative.epoch is None
    with pytest.warns(TraceWarning, match="before 2000"):
        unix = load_trace(path, columns=COLUMNS, nodes=1, time_format="epoch-s", epoch="1970-01-01")
    assert unix.frame["submit_time"].tolist() == [86400, 90000]


def test_a_strftime_pattern_reads_timestamps_of_that_form_and_an_epoch_moves_second_zero(tmp_path):
    path = write(tmp_path, "job,start,gpus,took\na,01/03/2021 10:00,1,60\nb,02/03/2021 09:30,1,60\n")
    trace = loaded_quietly(path, columns=COLUMNS, time_format="%d/%m/%Y %H:%M")
    assert trace.frame["submit_time"].tolist() == [36000, 120600]
    shifted = loaded_quietly(path, columns=COLUMNS, time_format="%d/%m/%Y %H:%M", epoch="2021-03-01 09:00:00")
    assert shifted.frame["submit_time"].tolist() == [3600, 88200]
    with pytest.raises(TraceError, match=r"line 2, field 'start': unparsable time '01/03/2021 10:00' "
                                         r"\(--time-format '%Y-%m-%d'\)"):
        load_trace(path, columns=COLUMNS, nodes=1, time_format="%Y-%m-%d")


def test_the_venus_epoch_applies_to_venus_logs_only(tmp_path):
    venus = pd.DataFrame({"job_id": ["a"], "vc": ["v"], "gpu_num": [1], "submit_time": ["2020-04-01 00:01:00"],
                          "duration": [5]})
    assert load_trace(venus, {"v": 1}).frame["submit_time"].tolist() == [60]  # Venus: from 2020-04-01
    plain = venus.drop(columns=["vc"]).assign(submit_time="2020-09-01 00:01:00")
    assert load_trace(plain, nodes=1).frame["submit_time"].tolist() == [60]  # any other: its first midnight


# --- delimiters ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("sep", [";", "\t", "|"])
def test_a_semicolon_tab_or_pipe_file_loads_as_its_comma_twin(tmp_path, sep):
    text = "job_id,vc,gpu_num,submit_time,duration\n1,a,1,2020-09-01 00:00:00,60\n2,a,2,2020-09-01 00:00:09,5\n"
    (tmp_path / "vc_config.csv").write_text("vc,num\na,1\n")
    comma = load_trace(write(tmp_path, text, "comma.csv"))
    other = load_trace(write(tmp_path, text.replace(",", sep), "other.csv"), tmp_path / "vc_config.csv")
    pd.testing.assert_frame_equal(comma.frame, other.frame)
    assert other.delimiter == sep


def test_a_wrong_delimiter_is_named_in_the_error(tmp_path):
    path = write(tmp_path, "job_id;vc;gpu_num;submit_time;duration\n1;a;1;0;60\n")
    with pytest.raises(TraceError, match=r"columns split at the comma \(','\); --delimiter names another"):
        load_trace(path, delimiter="comma")
    with pytest.raises(ValueError, match="--delimiter must be"):
        load_trace(path, delimiter="#")


# --- the command line ----------------------------------------------------------------------------------------

def test_trace_inspect_says_what_was_read_and_warns_before_a_run(tmp_path):
    path = write(tmp_path, "job;start;gpus;duration_min\na;2021-03-01 10:00:00;1;2\nb;2021-03-02 09:30:00;8;90\n")
    columns = "job_id=job,submit_time=start,gpu_num=gpus,duration=duration_min"
    shown = runner.invoke(app, ["trace", "inspect", str(path), "--columns", columns, "--json"])
    assert shown.exit_code == 0, shown.output
    seen = json.loads(shown.stdout)
    assert seen["delimiter"] == "semicolon (';')" and seen["columns"]["duration"] == {"column": "duration_min",
                                                                                      "unit": "s"}
    assert seen["submitted"]["first"] == "36,000 s (2021-03-01 10:00:00)" and seen["gpu_histogram"] == {"1": 1, "8": 1}
    assert any("sounds like minutes" in w for w in seen["warnings"])
    told = runner.invoke(app, ["trace", "inspect", str(path), "--columns", columns, "--duration-unit", "min"])
    assert told.exit_code == 0 and "warning" not in told.output and "duration_min │ min" in told.output
    run = runner.invoke(app, ["run", "--trace", str(path), "--columns", columns, "--nodes", "1", "--out",
                              str(tmp_path / "out"), "--quiet"])
    assert run.exit_code == 0, run.output
    loud = runner.invoke(app, ["run", "--trace", str(path), "--columns", columns, "--nodes", "1", "--out",
                               str(tmp_path / "out"), "--dry-run"])
    assert "warning:" in loud.stderr and "--duration-unit min" in loud.stderr
