"""What a cluster recorded, read as jobs waiting and GPUs running over time: one side of ``lucid-sim validate``.

Two kinds of record are read (:func:`read_record` tells them by their header):

* **aggregate** (:class:`BinRecord`) — fixed-width bins, e.g. Helios' ``cluster_throughput.csv`` (10 minutes):
  per bin the GPU jobs submitted and started, and the GPUs started and ended.  The jobs waiting at a bin's
  edge are the backlog the record starts with plus every job submitted and not yet started since; their
  time average over the bin is taken as the mean of its two edges (exact when submissions and starts are
  spread evenly inside the bin).
* **per-job** (:class:`JobRecord`) — one row per job with its submit, start and end times (Helios'
  ``cluster_log.csv``, Acme's traces): waiting and running are known exactly.  A simulated run's
  ``jobs.csv`` is read the same way, so both sides of a comparison go through one computation.

**Little's law.**  Over a window, the time-average number of jobs waiting equals the arrival rate times the
average wait of the jobs that arrived: average wait = (∫ waiting dt) / arrivals.  For an aggregate record
that is the only way to an average wait (it lists no job); for a per-job log it agrees with the jobs' own
mean wait up to what the window's edges cut off.

**The backlog the record starts with** (jobs submitted before its first bin and still waiting then) is not
in an aggregate record; the raw running count of (submitted − started) goes below zero where such jobs
start.  ``backlog="min"`` takes the smallest backlog that keeps the count at or above zero everywhere — a
lower bound, since no job starts before it is submitted — or a number given.  Running GPUs start from the
same kind of bound (``running_at_start``).  **Jobs waiting when the comparison window opens** were
submitted before it and are not among its arrivals (nor in a run that starts there):
``earlier_jobs="first"`` takes them to start before any job of the window (first come, first served) and
leaves them out of the count as they drain, ``"count"`` keeps them in it.

>>> import pandas as pd
>>> log = pd.DataFrame({"submit_time": [0, 0, 60], "start_time": [0, 120, 300], "end_time": [600, 600, 600],
...                     "gpu_num": [1, 2, 1]})
>>> record = JobRecord.from_frame(log, "log")
>>> series = record.series(np.array([0.0, 600.0]))
>>> series.arrivals.tolist(), series.waiting.tolist(), series.littles_law_wait(), series.per_job_wait
([3], [0.6], 120.0, 120.0)
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from simcluster.experiments.plots import binned_mean
from simcluster.limits import check_csv, shown
from simcluster.paths import resolve_data
from simcluster.traces.errors import TraceError

# field → the column it is read from by default (Helios' names); ``columns`` renames any of them
BIN_FIELDS = {"time": "time", "submitted": "submit_gpu_job", "started": "start_gpu_job",
              "gpus_started": "start_gpu_num", "gpus_ended": "end_gpu_num"}
JOB_FIELDS = {"submit_time": "submit_time", "start_time": "start_time", "end_time": "end_time", "gpu_num": "gpu_num"}
UNIX_FROM = 10**9  # numbers at least this are Unix epoch seconds (as the trace loader reads them)
MAX_SECONDS = 10**11  # a time (seconds, or Unix time) this large is no time of a cluster's: the year 5138
MAX_COUNT = 10**9  # jobs or GPUs in one bin of an aggregate record
EARLIER_JOBS = ("first", "count")


class ValidateError(ValueError):
    """A record or run that cannot be compared; the message says which file and what is wrong."""


@dataclass(frozen=True)
class Series:
    """One side of a comparison on a window's bins (``edges``, seconds from the epoch): per bin the jobs that
    arrived, the time-average of the jobs waiting and of the GPUs running (None: not recorded)."""

    edges: np.ndarray
    arrivals: np.ndarray
    waiting: np.ndarray
    running_gpus: np.ndarray | None
    per_job_wait: float | None = None  # mean (start − submit) of the window's arrivals, where jobs are known

    def littles_law_wait(self) -> float:
        """Average queueing delay by Little's law: ∫ waiting dt over the window ÷ the jobs that arrived in it."""
        arrived = float(self.arrivals.sum())
        return float((self.waiting * np.diff(self.edges)).sum() / arrived) if arrived else float("nan")


@dataclass(frozen=True)
class JobRecord:
    """A per-job record: each job's submit, start and end (NaN: not yet) in seconds, and its GPUs."""

    source: str
    submit: np.ndarray
    start: np.ndarray
    end: np.ndarray
    gpus: np.ndarray
    kind: str = "per-job"

    @classmethod
    def from_frame(cls, frame: pd.DataFrame, source: str) -> JobRecord:
        """From a table with numeric ``submit_time, start_time, end_time, gpu_num`` (a run's ``jobs.csv``)."""
        return cls(source, *(frame[c].to_numpy(dtype=float) for c in ("submit_time", "start_time", "end_time",
                                                                      "gpu_num")))

    @property
    def span(self) -> tuple[float, float]:
        ends = np.concatenate([self.submit, self.start[np.isfinite(self.start)], self.end[np.isfinite(self.end)]])
        return float(self.submit.min()), float(ends.max())

    def grid(self, start: float, end: float, bin_seconds: float) -> np.ndarray:
        """Bin edges covering [start, end] (``end`` inside the last bin), on multiples of ``bin_seconds``."""
        first, last = np.floor(start / bin_seconds), np.floor(end / bin_seconds) + 1
        return np.arange(first, max(last, first + 1) + 1) * bin_seconds

    def series(self, edges: np.ndarray, earlier_jobs: str = "first") -> Series:
        """Exact per-bin figures: arrivals, waiting jobs (those submitted in the window, or all with
        ``earlier_jobs="count"``), running GPUs."""
        lo, hi = edges[0], edges[-1]
        start = np.where(np.isfinite(self.start), self.start, np.inf)
        end = np.where(np.isfinite(self.end), self.end, np.inf)
        own = (self.submit >= lo) & (self.submit < hi)
        waits = own if earlier_jobs == "first" else (self.submit < hi)
        waiting = _step_mean(self.submit[waits], start[waits], np.ones(int(waits.sum())), edges)
        running = _step_mean(start, end, self.gpus, edges)
        arrivals = np.histogram(self.submit[own], edges)[0]
        started = own & np.isfinite(self.start)
        per_job = float((self.start[started] - self.submit[started]).mean()) if started.any() else None
        return Series(edges, arrivals, waiting, running, per_job)


@dataclass(frozen=True)
class BinRecord:
    """An aggregate record: bins of ``bin_seconds`` starting at ``times`` (seconds from the epoch), with the jobs
    submitted and started in each, and the GPUs started and ended (None: not recorded)."""

    source: str
    times: np.ndarray
    submitted: np.ndarray
    started: np.ndarray
    gpus_started: np.ndarray | None
    gpus_ended: np.ndarray | None
    bin_seconds: float
    kind: str = "aggregate"

    @property
    def span(self) -> tuple[float, float]:
        return float(self.times[0]), float(self.times[-1] + self.bin_seconds)

    @property
    def edges(self) -> np.ndarray:
        return np.append(self.times, self.times[-1] + self.bin_seconds)

    def grid(self, start: float, end: float, bin_seconds: float | None = None) -> np.ndarray:
        """The record's own bin edges that cover [start, end] (``end`` inside the last bin; clipped to the record)."""
        edges = self.edges
        first = max(int(np.searchsorted(edges, start, "right")) - 1, 0)
        last = min(int(np.searchsorted(edges, end, "right")), len(edges) - 1)
        return edges[first:max(last, first + 1) + 1]

    def backlog(self, given: str | int = "min") -> int:
        """Jobs waiting when the record starts: ``given``, or with "min" the fewest that keep the count ≥ 0."""
        return _initial(np.cumsum(self.submitted - self.started), given, "--backlog")

    def waiting_at_edges(self, backlog: str | int = "min") -> np.ndarray:
        """Jobs waiting at every bin edge (just before it): the backlog plus submitted − started so far."""
        counted = np.concatenate([[0], np.cumsum(self.submitted - self.started)])
        return counted + self.backlog(backlog)

    def running_at_edges(self, running_at_start: str | int = "min") -> np.ndarray | None:
        if self.gpus_started is None or self.gpus_ended is None:
            return None
        counted = np.concatenate([[0], np.cumsum(self.gpus_started - self.gpus_ended)])
        return counted + _initial(counted[1:], running_at_start, "--running-at-start")

    def series(self, edges: np.ndarray, earlier_jobs: str = "first", backlog: str | int = "min",
               running_at_start: str | int = "min") -> Series:
        """Per-bin figures on ``edges`` (a run of the record's own edges): edge means of the counts."""
        k0 = int(np.searchsorted(self.edges, edges[0]))
        k1 = k0 + len(edges) - 1
        waiting = self.waiting_at_edges(backlog)[k0:k1 + 1].astype(float)
        if earlier_jobs == "first":  # the window's first waiting jobs start before any of its own
            started = np.concatenate([[0], np.cumsum(self.started[k0:k1])])
            waiting -= np.maximum(waiting[0] - started, 0)
        running = self.running_at_edges(running_at_start)
        return Series(edges, self.submitted[k0:k1].copy(), _edge_means(waiting),
                      None if running is None else _edge_means(running[k0:k1 + 1].astype(float)))


Record = JobRecord | BinRecord


def read_record(path: str | os.PathLike[str], epoch: str | None = None, columns: Mapping[str, str] | None = None) -> Record:
    """A record file: aggregate bins when it has the bin columns, else a per-job log (see the module).

    ``epoch``: the wall-clock time of second 0 of the run it is compared with (timestamps are counted from
    it; numbers below 10⁹ are taken as seconds on the run's own clock).  ``columns``: field → column, for
    files whose columns are named otherwise (fields: :data:`BIN_FIELDS`, :data:`JOB_FIELDS`).
    """
    path = resolve_data(path)  # a name in the shared data (venus_sept/cluster_throughput.csv) as every command
    given = dict(columns or {})
    unknown = sorted(set(given) - set(BIN_FIELDS) - set(JOB_FIELDS))
    if unknown:
        raise ValidateError(f"--columns: unknown field(s) {', '.join(unknown)}; fields: "
                            f"{', '.join([*BIN_FIELDS, *JOB_FIELDS])}")
    if not path.is_file():
        raise ValidateError(f"{path}: no such file")
    check_csv(path)  # its header and lines within bounds, before a parser builds anything
    try:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, OSError) as exc:
        raise TraceError(path, f"not a readable CSV file ({exc})") from exc
    header = set(frame.columns)
    bins = {**BIN_FIELDS, **{k: v for k, v in given.items() if k in BIN_FIELDS}}
    jobs = {**JOB_FIELDS, **{k: v for k, v in given.items() if k in JOB_FIELDS}}
    if {bins["time"], bins["submitted"], bins["started"]} <= header:
        return _bin_record(path, frame, bins, epoch)
    if {jobs["submit_time"], jobs["start_time"]} <= header:
        return _job_record(path, frame, jobs, epoch)
    raise TraceError(path, f"neither an aggregate record (columns {bins['time']}, {bins['submitted']}, "
                     f"{bins['started']}) nor a per-job log (columns {jobs['submit_time']}, {jobs['start_time']}, "
                     f"{jobs['end_time']}, {jobs['gpu_num']}); found: {', '.join(frame.columns)}. Name the columns "
                     "with --columns FIELD=COLUMN", line=1)


def _bin_record(path: Path, frame: pd.DataFrame, names: Mapping[str, str], epoch: str | None) -> BinRecord:
    if frame.empty:
        raise TraceError(path, "no bins")
    times = seconds(frame[names["time"]], epoch, path, names["time"])
    _require(path, frame, names["time"], ~np.isfinite(times), "empty time")
    steps = np.diff(times)
    width = float(np.median(steps)) if len(steps) else 600.0
    _require(path, frame, names["time"], np.concatenate([[False], steps != width]),
             f"bins must be evenly spaced ({width:g} s apart, as most are); this one is not, after the one before")
    counts = {field: _counts(path, frame, names[field]) if names[field] in frame.columns else None
              for field in ("submitted", "started", "gpus_started", "gpus_ended")}
    if width <= 0:
        raise TraceError(path, "bins must be in time order", line=3, field=names["time"])
    return BinRecord(str(path), times, counts["submitted"], counts["started"],  # type: ignore[arg-type]
                     counts["gpus_started"], counts["gpus_ended"], width)


def _job_record(path: Path, frame: pd.DataFrame, names: Mapping[str, str], epoch: str | None) -> JobRecord:
    gpus = _counts(path, frame, names["gpu_num"]) if names["gpu_num"] in frame.columns else np.ones(len(frame))
    keep = gpus > 0  # (CPU jobs: an aggregate record's GPU columns leave them out too)
    submit = seconds(frame[names["submit_time"]], epoch, path, names["submit_time"])
    _require(path, frame, names["submit_time"], ~np.isfinite(submit) & keep, "empty submit time")
    start = seconds(frame[names["start_time"]], epoch, path, names["start_time"])
    end = (seconds(frame[names["end_time"]], epoch, path, names["end_time"]) if names["end_time"] in frame.columns
           else np.full(len(frame), np.nan))
    _require(path, frame, names["start_time"], keep & (start < submit), "starts before it is submitted")
    _require(path, frame, names["end_time"], keep & (end < start), "ends before it starts")
    start = np.where(np.isfinite(start), start, end)  # never started: left the queue when it ended (cancelled)
    if not keep.any():
        raise TraceError(path, "no GPU jobs (every row asks for 0 GPUs)", field=names["gpu_num"])
    return JobRecord(str(path), submit[keep], start[keep], end[keep], gpus[keep].astype(float))


def seconds(column: pd.Series, epoch: str | None, path: Path | str, name: str) -> np.ndarray:
    """A time column in seconds from ``epoch`` (NaN where empty): timestamps need the epoch; numbers are
    seconds on the run's clock, or Unix time from 10⁹ on (then counted from the epoch too)."""
    text = column.astype(str).str.strip()
    filled = text != ""
    numbers = pd.to_numeric(text.where(filled), errors="coerce")
    if numbers[filled].notna().sum() * 2 > int(filled.sum()):  # mostly numbers: seconds (or Unix time)
        frame = pd.DataFrame({name: text})
        _require(path, frame, name, (filled & numbers.isna()).to_numpy(), "not a number")
        values = numbers.to_numpy(dtype=float, na_value=np.nan)
        _require(path, frame, name, filled.to_numpy() & ~np.isfinite(values), "not a finite number")
        _require(path, frame, name, np.abs(np.nan_to_num(values)) >= MAX_SECONDS,
                 f"beyond the bound of {MAX_SECONDS:.0e} s (milliseconds?)")
        if filled.any() and np.nanmin(values) >= UNIX_FROM:
            zero = _epoch(epoch, path, name, "Unix times")
            values = values - (zero.tz_convert("UTC").tz_localize(None) if zero.tzinfo else zero).timestamp()
        return values
    zero = _epoch(epoch, path, name, "timestamps")
    stamps = pd.to_datetime(text.where(filled), format="%Y-%m-%d %H:%M:%S", errors="coerce")
    retry = (stamps.isna() & filled).to_numpy()
    if retry.any():
        stamps = stamps.astype(object)
        stamps[retry] = pd.to_datetime(text[retry], format="ISO8601", errors="coerce")
        try:
            stamps = pd.to_datetime(stamps)
        except (ValueError, TypeError) as exc:
            raise TraceError(path, f"timestamps mix timezones: {exc}", field=name) from None
    _require(path, pd.DataFrame({name: text}), name, (stamps.isna() & filled).to_numpy(), "unparsable time")
    try:
        return ((stamps - zero) / pd.Timedelta(seconds=1)).to_numpy(dtype=float, na_value=np.nan)
    except TypeError:
        raise TraceError(path, f"the epoch {epoch!r} and the timestamps must both have a timezone or neither",
                         field=name) from None


def _epoch(epoch: str | None, path: Path | str, name: str, what: str) -> pd.Timestamp:
    if epoch is None:
        raise TraceError(path, f"holds {what}, and the run's time zero is not known: give --epoch (the wall-clock "
                         "time of the run's second 0, e.g. 2020-04-01 00:00:00 for Helios/Venus traces)", field=name)
    try:
        return pd.Timestamp(epoch)
    except (ValueError, TypeError) as exc:
        raise ValidateError(f"--epoch: not a timestamp: {epoch!r} ({exc})") from None


def _counts(path: Path, frame: pd.DataFrame, name: str) -> np.ndarray:
    values = pd.to_numeric(frame[name].str.strip(), errors="coerce")
    _require(path, frame, name, (values.isna() | (values < 0) | (values % 1 != 0) | (values > MAX_COUNT)).to_numpy(),
             f"must be a whole number from 0 to {MAX_COUNT:,}")
    return values.to_numpy(dtype=np.int64)


def _require(path: Path | str, frame: pd.DataFrame, name: str, bad: np.ndarray, problem: str) -> None:
    """TraceError at the first row where ``bad`` holds (its file line: the header is line 1), quoting its value
    (shortened)."""
    if np.any(bad):
        row = int(np.flatnonzero(bad)[0])
        raise TraceError(path, f"{problem}: {shown(frame[name].iloc[row])}", line=row + 2, field=name)


def _initial(counted: np.ndarray, given: str | int, option: str) -> int:
    """The count before the first bin: ``given``, or with "min" the least that keeps ``counted`` ≥ 0."""
    if given == "min":
        return int(max(0, -counted.min())) if len(counted) else 0
    try:
        value = int(given)
    except ValueError:
        raise ValidateError(f"{option} must be 'min' or a whole number ≥ 0, got {shown(given)}") from None
    if not 0 <= value <= MAX_COUNT:
        raise ValidateError(f"{option} must be 'min' or a whole number from 0 to {MAX_COUNT:,}, got {shown(given)}")
    return value


def _edge_means(at_edges: np.ndarray) -> np.ndarray:
    return (at_edges[:-1] + at_edges[1:]) / 2


def _step_mean(begin: np.ndarray, finish: np.ndarray, weight: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Per bin, the time-average of Σ weight over the intervals [begin, finish) that cover it."""
    times = np.concatenate([begin, finish])
    steps = np.concatenate([weight, -weight])
    finite = np.isfinite(times)
    order = np.argsort(times[finite], kind="stable")
    at, level = times[finite][order], np.cumsum(steps[finite][order])
    if not len(at):
        return np.zeros(len(edges) - 1)
    return binned_mean(at, level, edges)
