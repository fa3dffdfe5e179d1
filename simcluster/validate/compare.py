"""A simulated run beside what a real cluster recorded: queueing, waiting jobs and running GPUs, bin by bin.

:func:`validate` reads both sides onto one grid of time bins over one window (by default the run's
submissions), each through :mod:`simcluster.validate.record` (the run's ``jobs.csv`` is a per-job record
too), and returns a :class:`Validation`: the average queueing delay of each side, the waiting-jobs and
running-GPUs series side by side with their correlation, a table per day and the days where the two
differ most.  :meth:`Validation.write` writes them as a folder (``validation.json``, ``series.csv``,
``days.csv`` and two PNG plots in the style of ``lucid-sim report``).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from simcluster.limits import MAX_BINS, LimitError, check_csv, number
from simcluster.results import table_problem
from simcluster.validate.record import (
    EARLIER_JOBS,
    BinRecord,
    JobRecord,
    Record,
    Series,
    ValidateError,
    read_record,
)

DAY = 86400.0
DEFAULT_BIN = 600.0  # seconds: the bins of a per-job record (an aggregate record brings its own)
MIN_BIN, MAX_BIN = 1.0, 1e9  # seconds: the range of --bin


@dataclass(frozen=True)
class Validation:
    """A run compared with a record over ``window`` (seconds from ``epoch``): see the module."""

    run: str
    record: str
    kind: str  # the record's: "aggregate" or "per-job"
    epoch: str | None
    recorded: Series
    simulated: Series
    settings: dict[str, Any]  # how the record was read: backlog, running at start, earlier jobs
    run_avg_queue: float | None = None  # the run's own avg_queue (every wait, re-waits after preemptions too)
    notes: list[str] = field(default_factory=list)

    @property
    def window(self) -> tuple[float, float]:
        return float(self.recorded.edges[0]), float(self.recorded.edges[-1])

    @property
    def bin_seconds(self) -> float:
        return float(np.diff(self.recorded.edges)[0])

    def figures(self) -> dict[str, Any]:
        """The headline figures: each side's average queueing delay, their ratio, the series' correlations."""
        rec, sim = self.recorded, self.simulated
        rec_wait, sim_wait = rec.littles_law_wait(), sim.littles_law_wait()
        return {
            "recorded_avg_queue": rec_wait,
            "recorded_avg_queue_method": "Little's law on the binned counts" if self.kind == "aggregate"
            else "Little's law on the jobs' waits",
            "recorded_avg_queue_per_job": rec.per_job_wait,
            "simulated_avg_queue": sim_wait,
            "simulated_avg_queue_per_job": sim.per_job_wait,
            "simulated_avg_queue_all_waits": self.run_avg_queue,
            "queue_ratio": sim_wait / rec_wait if rec_wait else float("nan"),
            "recorded_arrivals": int(rec.arrivals.sum()),
            "simulated_arrivals": int(sim.arrivals.sum()),
            "recorded_mean_waiting": float(rec.waiting.mean()),
            "simulated_mean_waiting": float(sim.waiting.mean()),
            "recorded_mean_running_gpus": None if rec.running_gpus is None else float(rec.running_gpus.mean()),
            "simulated_mean_running_gpus": None if sim.running_gpus is None else float(sim.running_gpus.mean()),
            "correlation_waiting": correlation(rec.waiting, sim.waiting),
            "correlation_running_gpus": None if rec.running_gpus is None or sim.running_gpus is None
            else correlation(rec.running_gpus, sim.running_gpus),
        }

    def series_frame(self) -> pd.DataFrame:
        """One row per bin: its start (seconds, and wall-clock time when the epoch is known) and each side's figures."""
        rec, sim = self.recorded, self.simulated
        frame = pd.DataFrame({"time": rec.edges[:-1]})
        if self.epoch is not None:
            frame["timestamp"] = pd.Timestamp(self.epoch) + pd.to_timedelta(frame["time"], unit="s")
        frame["recorded_arrivals"], frame["simulated_arrivals"] = rec.arrivals, sim.arrivals
        frame["recorded_waiting"], frame["simulated_waiting"] = rec.waiting, sim.waiting
        if rec.running_gpus is not None:
            frame["recorded_running_gpus"] = rec.running_gpus
        if sim.running_gpus is not None:
            frame["simulated_running_gpus"] = sim.running_gpus
        return frame

    def days(self) -> pd.DataFrame:
        """One row per day (of the epoch's clock) in the window: arrivals, mean waiting jobs, Little's-law
        wait and mean running GPUs of each side."""
        frame = self.series_frame()
        width = self.bin_seconds
        frame["day"] = np.floor(frame["time"] / DAY).astype(int)
        sides = ("recorded", "simulated")
        agg: dict[str, tuple[str, str]] = {f"{s}_arrivals": (f"{s}_arrivals", "sum") for s in sides}
        agg |= {f"{s}_waiting": (f"{s}_waiting", "mean") for s in sides}
        agg |= {f"{s}_running_gpus": (f"{s}_running_gpus", "mean") for s in sides if f"{s}_running_gpus" in frame}
        agg["bins"] = ("time", "size")
        days = frame.groupby("day").agg(**agg).reset_index()  # type: ignore[call-overload]
        for side in sides:
            arrived = days[f"{side}_arrivals"].replace(0, np.nan)
            days[f"{side}_wait"] = days[f"{side}_waiting"] * days["bins"] * width / arrived
        days.insert(1, "date", [self.day_label(d) for d in days["day"]])
        order = ["day", "date", "bins", "recorded_arrivals", "simulated_arrivals", "recorded_waiting",
                 "simulated_waiting", "recorded_wait", "simulated_wait", "recorded_running_gpus",
                 "simulated_running_gpus"]
        return days[[c for c in order if c in days]]

    def divergent_days(self, top: int = 5) -> pd.DataFrame:
        """The ``top`` days whose mean waiting jobs differ most between the sides (most waiting-job-days first)."""
        days = self.days()
        gap = (days["simulated_waiting"] - days["recorded_waiting"]) * days["bins"]
        return days.assign(waiting_gap=gap).reindex(gap.abs().sort_values(ascending=False).index).head(top)

    def day_label(self, day: int) -> str:
        if self.epoch is None:
            return f"day {day}"
        return str((pd.Timestamp(self.epoch) + pd.Timedelta(days=day)).date())

    def as_dict(self, top: int = 5) -> dict[str, Any]:
        """Everything ``--json`` prints: the inputs, how the record was read, the figures, the days."""
        lo, hi = self.window
        return {
            "run": self.run, "record": self.record, "record_kind": self.kind, "epoch": self.epoch,
            "window": {"start": lo, "end": hi, "bin_seconds": self.bin_seconds, "bins": len(self.recorded.arrivals)},
            "settings": self.settings, **self.figures(), "notes": self.notes,
            "days": _records(self.days()), "divergent_days": _records(self.divergent_days(top)),
        }

    def plots(self) -> dict[str, bytes]:
        """``waiting.png`` and (when both sides have it) ``running_gpus.png``: each side's series over the days."""
        from simcluster.experiments.plots import over_time

        bin_label = f"{self.bin_seconds / 60:g}-minute" if self.bin_seconds % 60 == 0 else f"{self.bin_seconds:g}-s"
        days = (self.recorded.edges[:-1] - self.recorded.edges[0]) / DAY
        figures = self.figures()
        made = {"waiting.png": over_time(
            {"recorded": (days, self.recorded.waiting), "simulated": (days, self.simulated.waiting)},
            "jobs waiting", f"Jobs waiting, {bin_label} averages (r = {figures['correlation_waiting']:.3f})")}
        if self.recorded.running_gpus is not None and self.simulated.running_gpus is not None:
            made["running_gpus.png"] = over_time(
                {"recorded": (days, self.recorded.running_gpus), "simulated": (days, self.simulated.running_gpus)},
                "GPUs running", f"GPUs running, {bin_label} averages (r = {figures['correlation_running_gpus']:.3f})")
        return made

    def write(self, out: str | os.PathLike[str], overwrite: bool = False, top: int = 5) -> Path:
        """The folder ``out`` (written atomically): validation.json, series.csv, days.csv and the plots."""
        from simcluster.results import to_json, write_folder

        return write_folder(Path(out), {"series.csv": self.series_frame(), "days.csv": self.days()},
                            {"validation.json": to_json(self.as_dict(top), indent=2) + "\n"}, self.plots(),
                            kind="validate", inputs=[self.run, self.record], overwrite=overwrite)


def validate(run: Any, recorded: str | os.PathLike[str] | Record, *, epoch: str | None = None,
             start: float | str | None = None, end: float | str | None = None, bin_seconds: float = DEFAULT_BIN,
             backlog: str | int = "min", running_at_start: str | int = "min", earlier_jobs: str = "first",
             columns: dict[str, str] | None = None) -> Validation:
    """Compare ``run`` (a run folder, or a :class:`~simcluster.api.RunResult`) with ``recorded`` (an aggregate
    or per-job record file, or one read already).

    ``epoch``: the wall-clock time of the run's second 0 (default: the trace format's, e.g. 2020-04-01 for
    Helios/Venus logs, else the run's trace's own when it can be read).  ``start``/``end``: the window
    (seconds or timestamps; default the run's first and last submission, widened to whole bins).
    ``bin_seconds``: bins of a per-job record (an aggregate one has its own).  ``backlog``,
    ``running_at_start`` and ``earlier_jobs``: how an aggregate record's unknowns are taken (see
    :mod:`simcluster.validate.record`).

    >>> import pandas as pd
    >>> from simcluster.api import load_trace, simulate
    >>> jobs = pd.DataFrame({"job_id": ["a", "b"], "vc": "v", "gpu_num": 8, "submit_time": [0, 0],
    ...                      "duration": [600, 600]})
    >>> run = simulate(load_trace(jobs, {"v": 1}))  # b waits 600 s
    >>> log = JobRecord.from_frame(pd.DataFrame({"submit_time": [0, 0], "start_time": [0, 300],
    ...                            "end_time": [600, 900], "gpu_num": [8, 8]}), "cluster")  # b waited 300 s
    >>> figures = validate(run, log).figures()
    >>> figures["simulated_avg_queue"], figures["recorded_avg_queue"], figures["queue_ratio"]
    (300.0, 150.0, 2.0)
    """
    if earlier_jobs not in EARLIER_JOBS:
        raise ValidateError(f"--earlier-jobs must be one of {', '.join(EARLIER_JOBS)}, got {earlier_jobs!r}")
    try:
        bin_seconds = number(bin_seconds, "--bin", low=MIN_BIN, high=MAX_BIN)
    except LimitError as exc:
        raise ValidateError(f"{exc} (seconds)") from None
    jobs, summary, run_name = read_run(run)
    if epoch is None:
        epoch = run_epoch(summary)
    record = recorded if isinstance(recorded, (JobRecord, BinRecord)) else read_record(recorded, epoch, columns)
    simulated = JobRecord.from_frame(jobs, run_name)
    lo = _moment(start, epoch, "--start") if start is not None else float(simulated.submit.min())
    hi = _moment(end, epoch, "--end") if end is not None else float(simulated.submit.max())
    if hi < lo:
        raise ValidateError(f"the window ends ({hi:,.0f} s) before it starts ({lo:,.0f} s)")
    first, last = record.span
    if hi < first or lo >= last:
        raise ValidateError(
            f"{record.source} covers {_when(first, epoch)} to {_when(last, epoch)} but the window is "
            f"{_when(lo, epoch)} to {_when(hi, epoch)}: no overlap. Does the run count time from another "
            "epoch? Give --epoch (the wall-clock time of the run's second 0), or --start/--end")
    width = bin_seconds if isinstance(record, JobRecord) else record.bin_seconds
    if (hi - lo) / width > MAX_BINS:
        raise ValidateError(f"the window ({_when(lo, epoch)} to {_when(hi, epoch)}) holds {(hi - lo) / width:,.0f} "
                            f"bins of {width:g} s, more than the limit of {MAX_BINS:,}: give a wider --bin, or "
                            "--start/--end")
    edges = record.grid(lo, hi, bin_seconds)
    notes = []
    if edges[0] > lo or edges[-1] < hi:
        notes.append(f"the record covers only {_when(edges[0], epoch)} to {_when(edges[-1], epoch)} of the window")
    settings: dict[str, Any] = {"earlier_jobs": earlier_jobs}
    if isinstance(record, BinRecord):
        rec = record.series(edges, earlier_jobs, backlog, running_at_start)
        waiting = record.waiting_at_edges(backlog)
        k0 = int(np.searchsorted(record.edges, edges[0]))
        settings |= {"backlog": backlog, "backlog_jobs": record.backlog(backlog),
                     "waiting_at_window_start": int(waiting[k0]), "running_at_start": running_at_start}
        if rec.running_gpus is None:
            notes.append("the record has no GPU columns: no running-GPUs series")
    else:
        rec = record.series(edges, earlier_jobs)
    sim = simulated.series(edges, earlier_jobs)
    if "preemptions" in jobs and (jobs["preemptions"] > 0).any():
        notes.append("the run preempts jobs: its series count each job's first wait only; "
                     "simulated_avg_queue_all_waits counts every wait")
    return Validation(run_name, record.source, record.kind, epoch, rec, sim, settings,
                      summary.get("avg_queue"), notes)


def read_run(run: Any) -> tuple[pd.DataFrame, dict[str, Any], str]:
    """(jobs table, summary, name) of a run folder or a RunResult."""
    if hasattr(run, "jobs") and hasattr(run, "summary"):
        return run.jobs, dict(run.summary), "run"
    folder = Path(run)
    if not folder.is_dir():
        raise ValidateError(f"{folder}: no such run folder")
    found = [folder / name for name in ("jobs.csv", "jobs.parquet") if (folder / name).is_file()]
    if not found:
        raise ValidateError(f"{folder}: no jobs.csv or jobs.parquet; give a folder `lucid-sim run` wrote")
    if not (folder / "summary.json").is_file():
        raise ValidateError(f"{folder}: no summary.json, which every run folder has (it says the run's trace and "
                            "its time zero); give a whole folder `lucid-sim run` wrote, or run it again")
    try:
        summary = json.loads((folder / "summary.json").read_text())
    except (OSError, ValueError) as exc:
        raise ValidateError(f"{folder / 'summary.json'}: not readable JSON ({exc}); run it again") from None
    if not isinstance(summary, dict):
        raise ValidateError(f"{folder / 'summary.json'}: not a run's summary (a JSON object)")
    try:
        if found[0].suffix == ".parquet":
            jobs = pd.read_parquet(found[0])
        else:
            check_csv(found[0])
            jobs = pd.read_csv(found[0])
    except (OSError, ValueError) as exc:  # (a TraceError from check_csv too)
        raise ValidateError(f"{found[0]}: cannot be read as a table: {exc}") from None
    missing = [c for c in ("submit_time", "start_time", "end_time", "gpu_num") if c not in jobs]
    if missing:
        raise ValidateError(f"{found[0]}: missing column(s) {', '.join(missing)}")
    problem = table_problem(found[0], len(jobs), summary)
    if problem is not None:
        raise ValidateError(problem)
    if jobs.empty:
        raise ValidateError(f"{found[0]}: holds no job; there is nothing to compare")
    try:
        jobs = jobs.astype({c: float for c in ("submit_time", "start_time", "end_time", "gpu_num")})
    except (TypeError, ValueError) as exc:
        raise ValidateError(f"{found[0]}: its times and GPU counts are not all numbers ({exc}); "
                            "write it again") from None
    return jobs, summary, str(folder)


def run_epoch(summary: dict[str, Any]) -> str | None:
    """The wall-clock time of a run's second 0: its trace format's default epoch (a synthetic trace's: the
    default of ``lucid-sim trace synth``), else its trace's own (when the trace can still be read), else None."""
    from simcluster.traces.columns import KNOWN_FORMATS
    from simcluster.traces.synth import SynthSpec

    fmt = summary.get("trace_format")
    defaults = {f.name: f.default_epoch for f in KNOWN_FORMATS} | {"synthetic": SynthSpec().epoch}
    default = defaults.get(str(fmt))
    if default is not None or not summary.get("trace") or not Path(summary["trace"]).is_file():
        return default
    from simcluster.traces import load_trace

    try:
        return getattr(load_trace(summary["trace"], sized=False), "epoch", None)
    except (ValueError, TypeError, OSError):
        return None


def correlation(a: np.ndarray, b: np.ndarray) -> float:
    """Pearson's r of two series; NaN when either is constant."""
    if len(a) < 2 or np.std(a) == 0 or np.std(b) == 0:
        return float("nan")
    return float(np.corrcoef(a, b)[0, 1])


def _moment(value: float | str, epoch: str | None, option: str) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        pass
    if epoch is None:
        raise ValidateError(f"{option} {value!r} is a timestamp, and the run's time zero is not known: give --epoch")
    try:
        return float((pd.Timestamp(value) - pd.Timestamp(epoch)) / pd.Timedelta(seconds=1))
    except (ValueError, TypeError) as exc:
        raise ValidateError(f"{option}: not a number of seconds or a timestamp: {value!r} ({exc})") from None


def _when(seconds: float, epoch: str | None) -> str:
    if epoch is None:
        return f"{seconds:,.0f} s"
    return str(pd.Timestamp(epoch) + pd.Timedelta(seconds=seconds))


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    return [{k: (v.item() if hasattr(v, "item") else v) for k, v in row.items()}
            for row in frame.to_dict(orient="records")]
