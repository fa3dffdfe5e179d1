"""Two results compared job by job: how many jobs agree, and where the two runs first part ways.

Either side is one of our run folders (``jobs.csv`` or ``jobs.parquet``) or a per-job CSV/parquet file of
another simulator — the Lucid and Helios artifacts write ``<policy>_<placer>_<vc>_log.csv`` per VC and
``…_all_log.csv`` for the whole cluster, with ``job_id, vc, submit_time, start_time, end_time, queue,
jct`` among their columns.  Jobs are matched by ``job_id``.  If the two sides count time from different
origins (every matched job's submit time differs by the same amount), the second side is shifted onto
the first and the shift is reported.

The *first divergence* is the earliest instant at which a matched job's start (or, when both started
together, its end) differs by more than ``tolerance`` seconds between the two runs; the jobs whose
divergence falls at that instant are listed with their times on both sides.  From there on, a
difference usually propagates, so that instant and those jobs are where to read the code.

>>> import pandas as pd
>>> a = pd.DataFrame({"job_id": ["1", "2"], "vc": "v", "submit_time": [0, 0], "start_time": [0, 10],
...                   "end_time": [10, 30]})
>>> b = a.assign(start_time=[0, 12], end_time=[10, 32])
>>> d = diff_tables(a, b)
>>> d.overall.matched, d.overall.equal_exact, d.overall.within_60s, d.overall.first.time
(2, 1, 2, 10.0)
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

NEEDED = ("job_id", "submit_time", "start_time", "end_time")
OVERALL = "all"


class DiffError(ValueError):
    """A side that cannot be read as per-job results; the message names the file and what is missing."""


@dataclass
class DivergentJob:
    job_id: str
    vc: str
    gpu_num: int | None
    submit_time: float
    start_a: float
    start_b: float
    end_a: float
    end_b: float


@dataclass
class Divergence:
    time: float  # the earliest instant at which the runs differ (a start, else an end, on either side)
    what: str  # "start" or "end": which time differs first
    jobs: list[DivergentJob] = field(default_factory=list)


@dataclass
class Agreement:
    """Figures for one VC (or the whole cluster) over the jobs both sides have."""

    vc: str
    jobs_a: int
    jobs_b: int
    matched: int
    equal_exact: int  # |JCT_a − JCT_b| ≤ 1 µs
    within_1s: int
    within_60s: int
    avg_jct_a: float
    avg_jct_b: float
    avg_queue_a: float
    avg_queue_b: float
    first: Divergence | None

    @property
    def jct_difference(self) -> float:
        return self.avg_jct_b - self.avg_jct_a

    @property
    def jct_difference_relative(self) -> float:
        return self.jct_difference / self.avg_jct_a if self.avg_jct_a else math.nan

    def share(self, count: int) -> float:
        return count / self.matched if self.matched else math.nan


@dataclass
class Diff:
    label_a: str
    label_b: str
    shift_b: float  # seconds added to B's times to bring them onto A's origin
    only_a: int
    only_b: int
    overall: Agreement
    per_vc: list[Agreement]

    def as_dict(self) -> dict[str, Any]:
        def figures(agreement: Agreement) -> dict[str, Any]:
            data = asdict(agreement)
            data["jct_difference"] = agreement.jct_difference
            data["jct_difference_relative"] = agreement.jct_difference_relative
            for key in ("equal_exact", "within_1s", "within_60s"):
                data[f"share_{key}"] = agreement.share(getattr(agreement, key))
            return data

        return {"a": self.label_a, "b": self.label_b, "shift_b": self.shift_b, "only_a": self.only_a,
                "only_b": self.only_b, "overall": figures(self.overall),
                "per_vc": {a.vc: figures(a) for a in self.per_vc}}


def read_jobs(path: str | Path) -> tuple[pd.DataFrame, str]:
    """(per-job frame, label) from a run folder or a per-job CSV/parquet file."""
    path = Path(path)
    if path.is_dir():
        found = [path / name for name in ("jobs.csv", "jobs.parquet") if (path / name).is_file()]
        if not found:
            raise DiffError(f"{path}: no jobs.csv or jobs.parquet (give a run folder or a per-job CSV file)")
        path = found[0]
    elif not path.is_file():
        raise DiffError(f"{path}: no such file or folder")
    try:
        frame = pd.read_parquet(path) if path.suffix == ".parquet" else pd.read_csv(path, dtype={"job_id": str})
    except (OSError, ValueError, pd.errors.ParserError) as exc:
        raise DiffError(f"{path}: cannot be read as a table: {exc}") from None
    missing = [c for c in NEEDED if c not in frame.columns]
    if missing:
        raise DiffError(f"{path}: missing column(s) {', '.join(missing)}; per-job results need "
                        f"{', '.join(NEEDED)} (and vc, jct, queue when they have them)")
    frame = frame.copy()
    frame["job_id"] = frame["job_id"].astype(str).str.replace(r"\.0$", "", regex=True)
    if frame["job_id"].duplicated().any():
        dup = frame.loc[frame["job_id"].duplicated(), "job_id"].iloc[0]
        raise DiffError(f"{path}: job_id {dup!r} appears more than once")
    for col in ("submit_time", "start_time", "end_time", "jct", "queue"):  # a file's own jct and queue stand
        if col in frame.columns:
            frame[col] = pd.to_numeric(frame[col], errors="coerce").astype(float)
    if "vc" in frame.columns:
        frame["vc"] = frame["vc"].astype(str)
    label = path.parent.name if path.name.startswith("jobs.") else path.name
    return frame, label


def diff_runs(a: str | Path, b: str | Path, tolerance: float = 1.0) -> Diff:
    frame_a, label_a = read_jobs(a)
    frame_b, label_b = read_jobs(b)
    return diff_tables(frame_a, frame_b, label_a, label_b, tolerance)


def diff_tables(a: pd.DataFrame, b: pd.DataFrame, label_a: str = "A", label_b: str = "B",
                tolerance: float = 1.0) -> Diff:
    """Compare two per-job frames (columns as :func:`read_jobs` makes them; vc, jct and queue are derived
    where a side has none)."""
    if "vc" not in a.columns:
        a = a.assign(vc=OVERALL)
    if "vc" not in b.columns:
        b = b.assign(vc=OVERALL)
    for side in (a, b):
        side["job_id"] = side["job_id"].astype(str)
        if "jct" not in side.columns:
            side["jct"] = side["end_time"] - side["submit_time"]
        if "queue" not in side.columns:
            side["queue"] = side["start_time"] - side["submit_time"]
    columns = ["job_id", "vc", "submit_time", "start_time", "end_time", "jct", "queue"]
    extra = ["gpu_num"] if "gpu_num" in a.columns else []
    merged = a[columns + extra].merge(b[columns], on="job_id", suffixes=("_a", "_b"))
    shift = _origin_shift(merged)
    if shift:
        for col in ("submit_time_b", "start_time_b", "end_time_b"):
            merged[col] += shift
    merged["vc"] = merged["vc_a"]
    overall = _agreement(OVERALL, a, b, merged, tolerance)
    per_vc = [_agreement(vc, a[a["vc"] == vc], b[b["vc"] == vc], merged[merged["vc"] == vc], tolerance)
              for vc in sorted(set(a["vc"]) | set(b["vc"])) if vc != OVERALL]
    matched = set(merged["job_id"])
    return Diff(label_a, label_b, shift, int((~a["job_id"].isin(matched)).sum()),
                int((~b["job_id"].isin(matched)).sum()), overall, per_vc)


def _origin_shift(merged: pd.DataFrame) -> float:
    """The constant that brings B's submit times onto A's, when every matched job differs by it."""
    if merged.empty:
        return 0.0
    offsets = merged["submit_time_a"] - merged["submit_time_b"]
    shift = float(offsets.median())
    if shift and (offsets - shift).abs().max() <= 1.0:
        return shift
    return 0.0


def _agreement(vc: str, a: pd.DataFrame, b: pd.DataFrame, merged: pd.DataFrame, tolerance: float) -> Agreement:
    gap = (merged["jct_a"] - merged["jct_b"]).abs()
    return Agreement(
        vc=vc, jobs_a=len(a), jobs_b=len(b), matched=len(merged),
        equal_exact=int((gap <= 1e-6).sum()), within_1s=int((gap <= 1.0).sum()), within_60s=int((gap <= 60.0).sum()),
        avg_jct_a=_mean(merged["jct_a"]), avg_jct_b=_mean(merged["jct_b"]),
        avg_queue_a=_mean(merged["queue_a"]), avg_queue_b=_mean(merged["queue_b"]),
        first=first_divergence(merged, tolerance),
    )


def _mean(values: pd.Series) -> float:
    return float(values.mean()) if len(values) else math.nan


def first_divergence(merged: pd.DataFrame, tolerance: float = 1.0) -> Divergence | None:
    """The earliest instant at which a matched job's start, else its end, differs by more than ``tolerance``."""
    if merged.empty:
        return None
    start_a, start_b = merged["start_time_a"].to_numpy(), merged["start_time_b"].to_numpy()
    end_a, end_b = merged["end_time_a"].to_numpy(), merged["end_time_b"].to_numpy()
    starts_differ = ~_close(start_a, start_b, tolerance)
    ends_differ = ~starts_differ & ~_close(end_a, end_b, tolerance)
    when = np.full(len(merged), np.inf)
    when[starts_differ] = np.fmin(start_a, start_b)[starts_differ]
    when[ends_differ] = np.fmin(end_a, end_b)[ends_differ]
    if not np.isfinite(when).any():
        return None
    earliest = float(when.min())
    at = np.flatnonzero(when <= earliest + tolerance)
    rows = merged.iloc[at].sort_values(["submit_time_a", "job_id"])
    jobs = [DivergentJob(str(r.job_id), str(r.vc), int(r.gpu_num) if "gpu_num" in merged.columns else None,
                         float(r.submit_time_a), float(r.start_time_a), float(r.start_time_b), float(r.end_time_a),
                         float(r.end_time_b)) for r in rows.itertuples(index=False)]
    what = "start" if starts_differ[at].any() else "end"
    return Divergence(earliest, what, jobs)


def _close(x: np.ndarray, y: np.ndarray, tolerance: float) -> np.ndarray:
    both_missing = np.isnan(x) & np.isnan(y)
    return both_missing | (np.abs(x - y) <= tolerance)
