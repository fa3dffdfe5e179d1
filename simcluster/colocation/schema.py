"""The colocation tables shared by the profiler (``lucid-profile``) and the simulator.

Two tables describe how training jobs behave on a GPU, alone and in pairs.  The
profiler writes them, the simulator reads them, and this module is the only
place that knows their shape, so that what one side writes the other accepts.

Single-job table -- one row per job configuration measured alone
(key: ``model, dataset, batchsize, amp, gpu_num``)::

    model,dataset,batchsize,amp,gpu_num,iters_per_s,samples_per_s,gpu_util,gmem_util,gmem,torch_peak_mem,status,error

* ``model``, ``dataset``: workload names as they appear in the trace (``ResNet18``, ``CIFAR-10``).
* ``batchsize``: batch size per GPU (int > 0); ``amp``: mixed precision, 0 or 1;
  ``gpu_num``: GPUs of the job (int > 0; more than one means DistributedDataParallel).
* ``iters_per_s``: steady-state training iterations per second; ``samples_per_s``:
  samples per second over all GPUs of the job (``iters_per_s * batchsize * gpu_num``).
* ``gpu_util``, ``gmem_util``: mean NVML GPU and memory(-bandwidth) utilization in
  percent over the measured window, averaged over the job's GPUs; empty (NaN)
  when NVML could not be read (no GPU, CPU run).
* ``gmem``: peak used GPU memory in MiB on the job's busiest GPU as NVML saw it,
  falling back to ``torch_peak_mem`` when NVML is unavailable.
* ``torch_peak_mem``: peak memory allocated by PyTorch in MiB (NaN on CPU).
* ``status``: ``ok`` or ``failed``; ``error``: why it failed, empty when ok.
  Measurements of a failed row may be empty.

Pair table -- one row per pair of configurations sharing the same GPU(s)
(key: the two configurations)::

    model1,dataset1,batchsize1,amp1,gpu_num1,model2,dataset2,batchsize2,amp2,gpu_num2,
    iters_per_s1,iters_per_s2,speed1,speed2,gpu_util,gmem_util,gmem,status,error

* ``iters_per_s1``/``2``: each job's iterations per second while sharing.
* ``speed1``/``2``: normalized speed, shared throughput divided by the same
  configuration's throughput alone (from the single table); 1.0 means no
  slowdown, and the slowdown factor is ``1 / speed``.  Must lie in (0, 2].
* ``gpu_util``, ``gmem_util``, ``gmem``: as above, for the GPU(s) holding both jobs.

This mirrors the layout of Lucid's public ``colocate_info.csv`` (speed, utilization
and memory of each measured pair) with explicit throughputs and a status.

Repeat tables -- the pair table's columns plus ``repeat`` (1, 2, ...): the same pairs
measured several times, to tell how repeatable a measurement is (key: the pair and
``repeat``); likewise the single table's columns plus ``repeat`` for jobs measured alone
several times (key: the configuration and ``repeat``).

Optional single-table columns -- the GPU performance-monitoring (GPM) metrics that Hopper
and later GPUs give through NVML, means over the measured window, empty where the GPU (or
its virtualisation) has none: ``gr_active``, ``sm_active``, ``sm_occupancy``,
``tensor_active``, ``dram_active``, ``fp32_active``, ``fp16_active`` (percent) and
``pcie_tx_mibps``, ``pcie_rx_mibps``, ``nvlink_tx_mibps``, ``nvlink_rx_mibps`` (MiB/s).
A table without them is complete; a table with them keeps them.

Files are CSV or Parquet, chosen by the extension (``.csv``, ``.parquet``/``.pq``).
Columns other than the ones above are ignored on reading; keys must be unique.
:func:`read_single_table` and :func:`read_pair_table` check every row and raise
:class:`TableError` naming the file, the 1-based data row and the field at fault;
:func:`write_table` checks the same rules, then writes atomically (a temporary
file in the same directory, then ``os.replace``), so a reader never sees half a table.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import BinaryIO

import numpy as np
import pandas as pd

from simcluster.atomic import atomic_write

__all__ = [
    "PAIR_COLUMNS",
    "PAIR_KEY",
    "REPEAT_COLUMNS",
    "REPEAT_KEY",
    "SINGLE_COLUMNS",
    "SINGLE_GPM_COLUMNS",
    "SINGLE_KEY",
    "SINGLE_REPEAT_COLUMNS",
    "SINGLE_REPEAT_KEY",
    "SPEED_MAX",
    "STATUS_FAILED",
    "STATUS_OK",
    "TableError",
    "read_pair_table",
    "read_repeat_table",
    "read_single_repeat_table",
    "read_single_table",
    "validate_pair_table",
    "validate_repeat_table",
    "validate_single_repeat_table",
    "validate_single_table",
    "write_table",
]

SINGLE_KEY: list[str] = ["model", "dataset", "batchsize", "amp", "gpu_num"]
SINGLE_COLUMNS: list[str] = [
    *SINGLE_KEY,
    "iters_per_s",
    "samples_per_s",
    "gpu_util",
    "gmem_util",
    "gmem",
    "torch_peak_mem",
    "status",
    "error",
]

_JOB_FIELDS = ["model", "dataset", "batchsize", "amp", "gpu_num"]
PAIR_KEY: list[str] = [f"{f}1" for f in _JOB_FIELDS] + [f"{f}2" for f in _JOB_FIELDS]
PAIR_COLUMNS: list[str] = [
    *PAIR_KEY,
    "iters_per_s1",
    "iters_per_s2",
    "speed1",
    "speed2",
    "gpu_util",
    "gmem_util",
    "gmem",
    "status",
    "error",
]

REPEAT_KEY: list[str] = [*PAIR_KEY, "repeat"]
REPEAT_COLUMNS: list[str] = [*PAIR_COLUMNS, "repeat"]

GPM_PERCENT_COLUMNS: list[str] = [
    "gr_active", "sm_active", "sm_occupancy", "tensor_active", "dram_active", "fp32_active", "fp16_active",
]
GPM_RATE_COLUMNS: list[str] = ["pcie_tx_mibps", "pcie_rx_mibps", "nvlink_tx_mibps", "nvlink_rx_mibps"]
SINGLE_GPM_COLUMNS: list[str] = [*GPM_PERCENT_COLUMNS, *GPM_RATE_COLUMNS]
"""Optional columns of the single tables: kept when present, never required."""

SINGLE_REPEAT_KEY: list[str] = [*SINGLE_KEY, "repeat"]
SINGLE_REPEAT_COLUMNS: list[str] = [*SINGLE_COLUMNS, "repeat"]

STATUS_OK = "ok"
STATUS_FAILED = "failed"
SPEED_MAX = 2.0
"""Largest normalized speed accepted: sharing may look a little faster than running
alone through measurement noise (Lucid's own table reaches 1.5), never twice as fast."""

_PARQUET_SUFFIXES = {".parquet", ".pq"}
_CSV_SUFFIXES = {".csv"}


class TableError(ValueError):
    """A colocation table that breaks the format; the message names file, row and field."""


# ---------------------------------------------------------------- field rules
# Each rule: (columns, kind, required_when_ok).  Kinds say what a value must be.
_STRING = "string"
_POS_INT = "positive integer"
_FLAG = "0 or 1"
_NONNEG = "non-negative number"
_POSITIVE = "positive number"
_PERCENT = "percentage in [0, 100]"
_SPEED = f"normalized speed in (0, {SPEED_MAX:g}]"

_SINGLE_RULES: list[tuple[list[str], str, bool]] = [
    (["model", "dataset"], _STRING, True),
    (["batchsize", "gpu_num"], _POS_INT, True),
    (["amp"], _FLAG, True),
    (["iters_per_s", "samples_per_s"], _POSITIVE, True),
    (["gpu_util", "gmem_util"], _PERCENT, False),
    (["gmem", "torch_peak_mem"], _NONNEG, False),
]

_PAIR_RULES: list[tuple[list[str], str, bool]] = [
    (["model1", "dataset1", "model2", "dataset2"], _STRING, True),
    (["batchsize1", "gpu_num1", "batchsize2", "gpu_num2"], _POS_INT, True),
    (["amp1", "amp2"], _FLAG, True),
    (["iters_per_s1", "iters_per_s2"], _POSITIVE, True),
    (["speed1", "speed2"], _SPEED, True),
    (["gpu_util", "gmem_util"], _PERCENT, False),
    (["gmem"], _NONNEG, False),
]


_REPEAT_RULES: list[tuple[list[str], str, bool]] = [*_PAIR_RULES, (["repeat"], _POS_INT, True)]
_SINGLE_REPEAT_RULES: list[tuple[list[str], str, bool]] = [*_SINGLE_RULES, (["repeat"], _POS_INT, True)]
_GPM_RULES: list[tuple[list[str], str, bool]] = [(GPM_PERCENT_COLUMNS, _PERCENT, False),
                                                  (GPM_RATE_COLUMNS, _NONNEG, False)]


def _fail(source: str, row: int | None, field: str | None, problem: str) -> TableError:
    where = [source]
    if row is not None:
        where.append(f"row {row}")
    if field is not None:
        where.append(f"field {field!r}")
    return TableError(f"{', '.join(where)}: {problem}")


def _is_blank(value: object) -> bool:
    if value is None:
        return True
    if isinstance(value, float) and math.isnan(value):
        return True
    return isinstance(value, str) and value.strip() == ""


def _as_text(series: pd.Series) -> pd.Series:
    """Strings with blanks as ''; keeps pandas' NA out of the string columns."""
    return series.map(lambda v: "" if _is_blank(v) else str(v).strip()).astype(object)


def _number(value: object) -> float:
    """The value as a float, NaN for a blank; raises ValueError for anything else."""
    if _is_blank(value):
        return math.nan
    if isinstance(value, bool):
        raise TypeError("a boolean is not a number")
    number = float(value)  # type: ignore[arg-type]
    if math.isinf(number):
        raise ValueError("infinite")
    return number


def _check_value(kind: str, number: float) -> str | None:
    """What is wrong with a present value of the given kind, or None."""
    if kind == _POS_INT:
        if number != int(number) or number <= 0:
            return f"expected a {kind}, got {number:g}"
    elif kind == _FLAG:
        if number not in (0.0, 1.0):
            return f"expected {kind}, got {number:g}"
    elif kind == _NONNEG:
        if number < 0:
            return f"expected a {kind}, got {number:g}"
    elif kind == _POSITIVE:
        if number <= 0:
            return f"expected a {kind} (throughput), got {number:g}"
    elif kind == _PERCENT:
        if not 0.0 <= number <= 100.0:
            return f"expected a {kind}, got {number:g}"
    elif kind == _SPEED and not 0.0 < number <= SPEED_MAX:
        return f"expected a {kind}, got {number:g}"
    return None


def _validate(
    df: pd.DataFrame,
    columns: Sequence[str],
    key: Sequence[str],
    rules: list[tuple[list[str], str, bool]],
    source: str,
    optional: Sequence[tuple[list[str], str, bool]] = (),
) -> pd.DataFrame:
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise _fail(
            source, None, None, f"missing column(s) {', '.join(missing)}; expected {','.join(columns)}"
        )
    df = df.reset_index(drop=True)
    out: dict[str, pd.Series] = {}

    status = _as_text(df["status"])
    for i, value in enumerate(status):
        if value not in (STATUS_OK, STATUS_FAILED):
            raise _fail(
                source, i + 1, "status", f"expected {STATUS_OK!r} or {STATUS_FAILED!r}, got {value!r}"
            )
    ok = (status == STATUS_OK).to_numpy()
    error = _as_text(df["error"])
    for i, (is_ok, text) in enumerate(zip(ok, error, strict=True)):
        if not is_ok and not text:
            raise _fail(source, i + 1, "error", "a failed row must say why (error is empty)")

    # an optional group is kept where any of its columns holds a value: no GPM, no empty columns
    present = [(names_, kind_, False) for names_, kind_, _ in optional
               if any(not all(map(_is_blank, df[n].tolist())) for n in names_ if n in df.columns)]
    for names, kind, required_when_ok in [*rules, *present]:
        for name in names:
            if name not in df.columns:  # an optional column the table lacks while it has others of its group
                out[name] = pd.Series(np.full(len(df), math.nan))
                continue
            if kind == _STRING:
                text_values = _as_text(df[name])
                for i, value in enumerate(text_values):
                    if not value:
                        raise _fail(source, i + 1, name, "empty; a workload name is required")
                out[name] = text_values
                continue
            numbers = np.empty(len(df), dtype=float)
            for i, raw in enumerate(df[name].tolist()):
                try:
                    number = _number(raw)
                except (TypeError, ValueError):
                    raise _fail(source, i + 1, name, f"not a number: {raw!r}") from None
                if math.isnan(number):
                    if kind in (_POS_INT, _FLAG) or (required_when_ok and ok[i]):
                        raise _fail(source, i + 1, name, f"missing; expected a {kind}")
                else:
                    problem = _check_value(kind, number)
                    if problem:
                        raise _fail(source, i + 1, name, problem)
                numbers[i] = number
            if kind in (_POS_INT, _FLAG):
                out[name] = pd.Series(numbers.astype(np.int64))
            else:
                out[name] = pd.Series(numbers)
    out["status"] = status
    out["error"] = error
    extra = [name for names, _, _ in present for name in names]
    table = pd.DataFrame({c: out[c] for c in [*columns, *extra]})

    duplicated = table.duplicated(subset=list(key), keep="first").to_numpy()
    if duplicated.any():
        row = int(np.argmax(duplicated)) + 1
        values = ", ".join(f"{k}={table.at[row - 1, k]}" for k in key)
        raise _fail(source, row, None, f"duplicate key ({values}) already given in an earlier row")
    return table


def validate_single_table(df: pd.DataFrame, source: str = "<single table>") -> pd.DataFrame:
    """The single-job table in canonical column order and dtypes; TableError if it breaks a rule."""
    return _validate(df, SINGLE_COLUMNS, SINGLE_KEY, _SINGLE_RULES, source, _GPM_RULES)


def validate_single_repeat_table(df: pd.DataFrame, source: str = "<single repeat table>") -> pd.DataFrame:
    """The table of jobs measured alone several times, in canonical order; TableError if it breaks a rule."""
    return _validate(df, SINGLE_REPEAT_COLUMNS, SINGLE_REPEAT_KEY, _SINGLE_REPEAT_RULES, source, _GPM_RULES)


def validate_pair_table(df: pd.DataFrame, source: str = "<pair table>") -> pd.DataFrame:
    """The pair table in canonical column order and dtypes; TableError if it breaks a rule."""
    return _validate(df, PAIR_COLUMNS, PAIR_KEY, _PAIR_RULES, source)


def validate_repeat_table(df: pd.DataFrame, source: str = "<repeat table>") -> pd.DataFrame:
    """The repeat table in canonical column order and dtypes; TableError if it breaks a rule."""
    return _validate(df, REPEAT_COLUMNS, REPEAT_KEY, _REPEAT_RULES, source)


def _format_of(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix in _CSV_SUFFIXES:
        return "csv"
    if suffix in _PARQUET_SUFFIXES:
        return "parquet"
    raise TableError(f"{path}: unknown table format {suffix or '(no extension)'!r}; use .csv or .parquet")


def _read_raw(path: Path) -> pd.DataFrame:
    fmt = _format_of(path)
    if not path.exists():
        raise TableError(f"{path}: no such file")
    try:
        if fmt == "csv":
            # Everything as text first, so a bad value is reported, not silently coerced.
            return pd.read_csv(path, dtype=str, keep_default_na=False)
        return pd.read_parquet(path)
    except (OSError, ValueError, pd.errors.ParserError) as exc:
        raise TableError(f"{path}: cannot be read as {fmt}: {exc}") from exc


def read_single_table(path: str | os.PathLike[str]) -> pd.DataFrame:
    """Load and check a single-job table (CSV or Parquet)."""
    p = Path(path)
    return validate_single_table(_read_raw(p), str(p))


def read_single_repeat_table(path: str | os.PathLike[str]) -> pd.DataFrame:
    """Load and check a table of jobs measured alone several times (CSV or Parquet)."""
    p = Path(path)
    return validate_single_repeat_table(_read_raw(p), str(p))


def read_pair_table(path: str | os.PathLike[str]) -> pd.DataFrame:
    """Load and check a pair table (CSV or Parquet)."""
    p = Path(path)
    return validate_pair_table(_read_raw(p), str(p))


def read_repeat_table(path: str | os.PathLike[str]) -> pd.DataFrame:
    """Load and check a repeat table (CSV or Parquet)."""
    p = Path(path)
    return validate_repeat_table(_read_raw(p), str(p))


def write_table(df: pd.DataFrame, path: str | os.PathLike[str]) -> None:
    """Check ``df`` as a single, pair or repeat table (told apart by its columns) and write it atomically.

    The columns are written in canonical order; NaN becomes an empty CSV field.
    """
    p = Path(path)
    fmt = _format_of(p)
    if set(REPEAT_KEY) <= set(df.columns):
        table = validate_repeat_table(df, f"table for {p}")
    elif set(PAIR_KEY) <= set(df.columns):
        table = validate_pair_table(df, f"table for {p}")
    elif set(SINGLE_REPEAT_KEY) <= set(df.columns):
        table = validate_single_repeat_table(df, f"table for {p}")
    elif set(SINGLE_KEY) <= set(df.columns):
        table = validate_single_table(df, f"table for {p}")
    else:
        raise TableError(
            f"table for {p}: neither a single-job table (key {','.join(SINGLE_KEY)}) "
            f"nor a pair table (key {','.join(PAIR_KEY)})"
        )
    def write(handle: BinaryIO) -> None:
        if fmt == "csv":
            handle.write(table.to_csv(index=False, lineterminator="\n").encode())
        else:
            table.to_parquet(handle, index=False)

    atomic_write(p, write)
