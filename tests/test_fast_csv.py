"""The run folder's CSV writer writes exactly pandas' ``to_csv`` bytes, whatever the cells hold."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simcluster import fast_csv
from simcluster.api import load_trace, simulate
from simcluster.config import SimConfig
from simcluster.fast_csv import write_csv
from simcluster.metrics.fairness import USER_COLUMNS, users_table
from simcluster.results import write_run

AWKWARD_FLOATS = [3.0, 12.5, 0.1, 1 / 3, -2.75, np.nan, 0.0, -0.0, 1e-4, 9.5e-5, 1e-5, 1.5e-7, 1e10,
                  12345678901.5, 1e15, 1e16, 1.2345e17, 2.0 ** 53, 9999999999999998.0, np.inf, -np.inf,
                  5e-324, 1.7976931348623157e308]


def assert_written_as_pandas(frame: pd.DataFrame, folder: Path) -> None:
    write_csv(frame, folder / "fast.csv")
    frame.to_csv(folder / "pandas.csv", index=False)
    assert (folder / "fast.csv").read_bytes() == (folder / "pandas.csv").read_bytes()


def awkward_frame(rows: int) -> pd.DataFrame:
    """Every kind of cell a run's tables hold, and the odd ones: quotes, commas, newlines, NaN, None."""
    ids = ['a,"b"', "plain", "", 'say "hi"', "two\nlines", "ü-ñ", " lead", "x"]
    floats = np.resize(np.array(AWKWARD_FLOATS), rows)
    return pd.DataFrame({
        "job_id": pd.array(np.resize(np.array(ids, dtype=object), rows), dtype="string"),
        "user": pd.Series(np.resize(np.array(["u1", None, "u,2", "u3"], dtype=object), rows), dtype=object),
        "gpu_num": np.resize(np.array([1, 8, 2 ** 62, -(2 ** 63), 0], dtype=np.int64), rows),
        "small": np.resize(np.array([7, 7, 7], dtype=np.int32), rows),
        "end_time": floats,
        "jct": floats[::-1].copy(),
        "whole": np.arange(rows, dtype=float) * 1000.0,
        "constant": np.full(rows, 1.0),
        "declined": np.resize(np.array([True, False, False]), rows),
        "never": np.full(rows, np.nan),
        "nobody": pd.Series([None] * rows, dtype=object),
    })


@pytest.mark.parametrize("chunk", [3, 7, 1 << 16])
@pytest.mark.parametrize("rows", [0, 1, 5, 40])
def test_awkward_cells_are_written_exactly_as_pandas_writes_them(tmp_path, monkeypatch, chunk, rows):
    monkeypatch.setattr(fast_csv, "CHUNK", chunk)  # short chunks: rows alike in one chunk, unlike in the next
    frame = awkward_frame(rows)
    assert fast_csv._formats(frame) is not None  # (the fast path, not pandas' fallback)
    assert_written_as_pandas(frame, tmp_path)


def test_columns_of_one_value_per_chunk_keep_their_sign_and_missing_cells(tmp_path, monkeypatch):
    monkeypatch.setattr(fast_csv, "CHUNK", 2)
    frame = pd.DataFrame({"zero": [0.0, -0.0, -0.0, -0.0, 0.0, 0.0],
                          "nan": [np.nan, np.nan, 1.0, np.nan, 2.5, 2.5],
                          "flag": [True, True, False, False, True, False], "n": [5, 5, 6, 6, 7, 7]})
    assert_written_as_pandas(frame, tmp_path)


@pytest.mark.parametrize("odd", [
    pd.DataFrame({"only": ["", "a", None]}),  # one column: the csv module quotes an empty cell alone
    pd.DataFrame({"a": ["x\ry", "z"], "b": [1, 2]}),  # a carriage return: quoted or not by Python's version
    pd.DataFrame({"a": pd.Categorical(["x", "y"]), "b": [1.5, 2.0]}),
    pd.DataFrame({"a": pd.array([1, None], dtype="Int64"), "b": [1.5, 2.0]}),
    pd.DataFrame({"a": pd.to_datetime(["2024-01-01", "2024-01-02"]), "b": [1, 2]}),
    pd.DataFrame({"a": [1, "two"], "b": [1.5, 2.0]}),  # object column of mixed types
    pd.DataFrame({"a": np.array([1.5, 2.5], dtype=np.float32), "b": [1, 2]}),
    pd.DataFrame({1: [1, 2], 2: [3, 4]}),  # labels that are not text
], ids=["one-column", "carriage-return", "categorical", "nullable-int", "datetime", "mixed", "float32",
        "int-labels"])
def test_tables_the_fast_path_does_not_take_are_written_by_pandas(tmp_path, odd):
    assert fast_csv._formats(odd) is None
    assert_written_as_pandas(odd, tmp_path)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.floats(allow_nan=True, allow_infinity=True),
                          st.integers(-(2 ** 63), 2 ** 63 - 1),
                          st.one_of(st.none(), st.text(max_size=6))), max_size=30))
def test_any_floats_integers_and_text_are_written_as_pandas_writes_them(tmp_path_factory, rows):
    frame = pd.DataFrame(rows, columns=["x", "n", "s"]).astype({"x": float, "n": np.int64, "s": object})
    assert_written_as_pandas(frame, tmp_path_factory.mktemp("csv"))


@pytest.fixture(scope="module")
def stopped_run():
    """A run stopped early (unfinished jobs: empty end times, NaN speeds and ρ), with ids to quote."""
    jobs = pd.DataFrame({"job_id": ['a,"b"', "b", "c\nd", "e", "f"], "vc": "vc0",
                         "user": ["u,1", "u2", "u2", "u3", ""],
                         "gpu_num": [8, 4, 4, 2, 1], "submit_time": [0, 10, 20, 30, 40],
                         "duration": [3600, 600, 60, 1e6, 7]})
    return simulate(load_trace(jobs, {"vc0": 1}), SimConfig(policy="fifo", until=5000))


def test_a_run_folder_holds_pandas_bytes_for_each_table(tmp_path, stopped_run):
    tables = stopped_run.tables()
    assert stopped_run.jobs["end_time"].isna().any() and stopped_run.jobs["mean_speed"].notna().any()
    write_run(tmp_path / "run", tables, stopped_run.summary)
    for name, frame in tables.items():
        assert (tmp_path / "run" / f"{name}.csv").read_bytes() == frame.to_csv(index=False).encode(), name


def test_a_parquet_run_folder_still_holds_the_same_values(tmp_path, stopped_run):
    tables = stopped_run.tables()
    write_run(tmp_path / "run", tables, stopped_run.summary, "parquet")
    for name, frame in tables.items():
        back = pd.read_parquet(tmp_path / "run" / f"{name}.parquet")
        pd.testing.assert_frame_equal(back, frame, check_dtype=False, check_exact=True)


def users_by_name(jobs: pd.DataFrame) -> pd.DataFrame:
    """The users table as it was first written: grouped by the users' names, one group-by per figure."""
    frame = jobs.assign(_done=jobs["end_time"].notna(),
                        _slowdown=jobs["jct"] / np.maximum(jobs["duration"].astype(float), 1.0),
                        _bounded=np.maximum(1.0, jobs["jct"] / np.maximum(jobs["duration"].astype(float), 10.0)),
                        _over=jobs["queue"] > 4 * 3600,
                        _gpu_seconds=jobs["busy_time"] * jobs["gpu_num"])
    if "rho" not in frame.columns:
        frame["rho"] = np.nan
    done, users = frame[frame["_done"]], frame["user"].astype(str)
    named = done["user"].astype(str)
    total = float(frame["_gpu_seconds"].sum())
    table = pd.DataFrame({
        "vcs": frame.groupby(users)["vc"].agg(lambda v: ";".join(sorted(set(map(str, v))))),
        "jobs": frame.groupby(users)["_done"].sum().astype(np.int64),
        "unfinished": (~frame["_done"]).groupby(users).sum().astype(np.int64),
        "avg_jct": done.groupby(named)["jct"].mean(), "p50_jct": done.groupby(named)["jct"].median(),
        "avg_queue": done.groupby(named)["queue"].mean(),
        "max_queue": done.groupby(named)["queue"].max(),
        "queue_over_4h": done.groupby(named)["_over"].mean(),
        "avg_jct_slowdown": done.groupby(named)["_slowdown"].mean(),
        "avg_bounded_slowdown": done.groupby(named)["_bounded"].mean(),
        "mean_rho": done.groupby(named)["rho"].mean(),
        "gpu_seconds": frame.groupby(users)["_gpu_seconds"].sum(),
    })
    table["gpu_share"] = table["gpu_seconds"] / total if total > 0 else 0.0
    table.index.name = "user"
    return table.reset_index()[USER_COLUMNS]


@pytest.mark.parametrize("change", ["none", "no-rho", "no-user", "none-finished"])
def test_the_users_table_grouped_by_codes_is_the_one_grouped_by_names(stopped_run, change):
    jobs = stopped_run.jobs
    jobs = {"none": jobs, "no-rho": jobs.drop(columns="rho"),
            "no-user": jobs.assign(user=pd.Series(["u1", None, "u1", None, "u2"], dtype=object),
                                   vc=pd.Series(["v", "w", None, "v", "v"], dtype=object)),
            "none-finished": jobs.assign(end_time=np.nan, jct=np.nan)}[change]
    pd.testing.assert_frame_equal(users_table(jobs), users_by_name(jobs), check_exact=True)
