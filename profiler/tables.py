"""The profiler's output tables: rows from measurements, kept on disk row by row.

Each finished configuration is appended and the whole table rewritten atomically
through :func:`simcluster.colocation.write_table`, so the file is valid after every
row -- an interrupted sweep leaves a table that loads, and the next run resumes by
skipping the keys already in it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import pandas as pd

from profiler.plan import JobConfig, PairConfig, PairKey
from profiler.runner import RunOutcome
from simcluster.colocation import (
    PAIR_COLUMNS,
    PAIR_KEY,
    REPEAT_COLUMNS,
    REPEAT_KEY,
    SINGLE_COLUMNS,
    SINGLE_GPM_COLUMNS,
    SINGLE_KEY,
    SINGLE_REPEAT_COLUMNS,
    SINGLE_REPEAT_KEY,
    SPEED_MAX,
    STATUS_FAILED,
    STATUS_OK,
    read_pair_table,
    read_repeat_table,
    read_single_repeat_table,
    read_single_table,
    validate_pair_table,
    validate_repeat_table,
    validate_single_repeat_table,
    validate_single_table,
    write_table,
)
from simcluster.doubts import SUSPECT_SPEED

Row = dict[str, Any]

# SUSPECT_SPEED (simcluster.doubts, the same bound the simulator warns by): jobs never run faster shared than
# alone; a pair that seems to by more has a solo run measured too slow (a busy machine, a CPU).  The profiler
# measures the solo runs again once (profiler.pair) and marks the pair failed if it still seems faster.


def single_row(config: JobConfig, outcome: RunOutcome) -> Row:
    """The single-table row of a job measured alone."""
    job = outcome.jobs[0]
    iters = job.iters_per_s
    gmem = outcome.gpu.gmem if not math.isnan(outcome.gpu.gmem) else job.torch_peak_mem
    return {
        "model": config.model,
        "dataset": config.dataset,
        "batchsize": config.batchsize,
        "amp": int(config.amp),
        "gpu_num": config.gpu_num,
        "iters_per_s": iters,
        "samples_per_s": iters * config.batchsize * config.gpu_num,
        "gpu_util": outcome.gpu.gpu_util,
        "gmem_util": outcome.gpu.gmem_util,
        "gmem": gmem,
        "torch_peak_mem": job.torch_peak_mem,
        "status": STATUS_OK if outcome.ok else STATUS_FAILED,
        "error": outcome.error,
    } | {name: outcome.gpu.gpm.get(name, math.nan) for name in SINGLE_GPM_COLUMNS}


def pair_row(pair: PairConfig, outcome: RunOutcome | None, solo: tuple[float, float], error: str = "") -> Row:
    """The pair-table row; ``outcome=None`` when the pair was not run (``error`` says why)."""
    row: Row = {}
    for suffix, config in (("1", pair.first), ("2", pair.second)):
        row |= {
            f"model{suffix}": config.model,
            f"dataset{suffix}": config.dataset,
            f"batchsize{suffix}": config.batchsize,
            f"amp{suffix}": int(config.amp),
            f"gpu_num{suffix}": config.gpu_num,
        }
    shared = (outcome.jobs[0].iters_per_s, outcome.jobs[1].iters_per_s) if outcome else (math.nan, math.nan)
    speeds = pair_speeds(outcome, solo) if outcome else [math.nan, math.nan]
    if outcome is not None and not outcome.ok:
        error = outcome.error
    elif outcome is not None:
        error = speed_problem(speeds)
    ok = outcome is not None and outcome.ok and not error
    gpu = outcome.gpu if outcome else None
    row |= {
        "iters_per_s1": shared[0],
        "iters_per_s2": shared[1],
        "speed1": speeds[0] if ok else math.nan,
        "speed2": speeds[1] if ok else math.nan,
        "gpu_util": gpu.gpu_util if gpu else math.nan,
        "gmem_util": gpu.gmem_util if gpu else math.nan,
        "gmem": gpu.gmem if gpu else math.nan,
        "status": STATUS_OK if ok else STATUS_FAILED,
        "error": "" if ok else error,
    }
    return row


def pair_speeds(outcome: RunOutcome, solo: tuple[float, float]) -> list[float]:
    """Each job's shared throughput ÷ its throughput alone."""
    return [job.iters_per_s / alone if alone > 0 else math.nan
            for job, alone in zip(outcome.jobs, solo, strict=True)]


def speed_problem(speeds: list[float]) -> str:
    """Why these pair speeds cannot be recorded (empty if they can)."""
    impossible = [f"speed{i + 1} {s:.3g}" for i, s in enumerate(speeds) if not 0 < s <= SPEED_MAX]
    if impossible:
        return (f"{', '.join(impossible)} outside (0, {SPEED_MAX:g}]: shared faster than solo by too much, "
                "so the solo measurement is suspect; --retry-failed measures the solo runs and the pair again")
    fast = [f"speed{i + 1} {s:.3g}" for i, s in enumerate(speeds) if s > SUSPECT_SPEED]
    if fast:
        return (f"{', '.join(fast)} above {SUSPECT_SPEED:g}: faster shared than alone, so the solo measurement is "
                "suspect (a busy machine or a CPU); --retry-failed measures the solo runs and the pair again")
    return ""


_KINDS: dict[str, tuple[list[str], list[str], Any, Any]] = {  # columns, key, reader, validator
    "single": ([*SINGLE_COLUMNS, *SINGLE_GPM_COLUMNS], SINGLE_KEY, read_single_table, validate_single_table),
    "single_repeat": ([*SINGLE_REPEAT_COLUMNS, *SINGLE_GPM_COLUMNS], SINGLE_REPEAT_KEY, read_single_repeat_table,
                      validate_single_repeat_table),
    "pair": (PAIR_COLUMNS, PAIR_KEY, read_pair_table, validate_pair_table),
    "repeat": (REPEAT_COLUMNS, REPEAT_KEY, read_repeat_table, validate_repeat_table),
}


class ResultTable:
    """A single, pair or repeat table on disk, loaded once, then appended to row by row."""

    def __init__(self, path: Path, kind: str) -> None:
        if kind not in _KINDS:
            raise ValueError(f"kind must be one of {', '.join(map(repr, _KINDS))}, got {kind!r}")
        self.path = path
        self.kind = kind
        self._columns, self._key, reader, self._validate = _KINDS[kind]
        if path.exists():
            self._frame = reader(path)
        else:
            self._frame = pd.DataFrame({c: pd.Series(dtype=object) for c in self._columns})
        self._status = {self._key_of(r): r["status"] for r in self._frame.to_dict("records")}
        self.added = 0
        """Rows added (or replaced) since the table was opened."""
        self.added_keys: set[tuple[Any, ...]] = set()
        """Keys of those rows."""

    def __len__(self) -> int:
        return len(self._frame)

    def _key_of(self, row: Row) -> tuple[Any, ...]:
        return tuple(row[c] for c in self._key)

    def status(self, key: tuple[Any, ...]) -> str | None:
        """``ok``, ``failed`` or None (not measured) for a row key."""
        return self._status.get(tuple(key))

    def row(self, key: tuple[Any, ...]) -> Row | None:
        if tuple(key) not in self._status:
            return None
        mask = pd.Series(True, index=self._frame.index)
        for column, value in zip(self._key, key, strict=True):
            mask &= self._frame[column] == value
        return self._frame[mask].iloc[0].to_dict()

    def add(self, row: Row) -> None:
        """Add (or replace, for a retried key) a row and rewrite the file atomically."""
        key = self._key_of(row)
        frame = self._frame
        if key in self._status:
            keep = pd.Series(False, index=frame.index)
            for column, value in zip(self._key, key, strict=True):
                keep |= frame[column] != value
            frame = frame[keep]
        new = pd.DataFrame([row], columns=self._columns)
        combined = new if frame.empty else pd.concat([frame, new], ignore_index=True)
        write_table(combined, self.path)
        self._frame = self._validate(combined, str(self.path))
        self._status[key] = row["status"]
        self.added += 1
        self.added_keys.add(key)

    def pair_status(self, pair: PairConfig, repeat: int | None = None) -> str | None:
        """Status of a pair measured in either order (of its ``repeat``-th measurement, in a repeat table)."""
        more = () if repeat is None else (repeat,)
        return self.status(pair.key + more) or self.status(_swapped(pair.key) + more)


class SoloTable(Protocol):
    """Where a pair's solo throughputs come from, and where missing ones are written: a single table, or
    one round of a single repeat table (:class:`RoundOfRepeats`)."""

    @property
    def path(self) -> Path: ...

    def status(self, key: tuple[Any, ...]) -> str | None: ...

    def row(self, key: tuple[Any, ...]) -> Row | None: ...

    def add(self, row: Row) -> None: ...


@dataclass(frozen=True)
class RoundOfRepeats:
    """Round ``repeat`` of a single repeat table, seen as a single table: the solo runs that the pairs of
    the same round are judged against, so that a repeated speed carries the noise of both its runs."""

    table: ResultTable
    repeat: int

    @property
    def path(self) -> Path:
        return self.table.path

    def status(self, key: tuple[Any, ...]) -> str | None:
        return self.table.status((*key, self.repeat))

    def row(self, key: tuple[Any, ...]) -> Row | None:
        return self.table.row((*key, self.repeat))

    def add(self, row: Row) -> None:
        self.table.add(row | {"repeat": self.repeat})


def _swapped(key: PairKey) -> PairKey:
    return key[5:] + key[:5]  # type: ignore[return-value]
