"""Deadlines of jobs: read from a trace's ``deadline`` column, or drawn.

A deadline is an absolute time on the trace's own clock (seconds, like ``submit_time``).  A trace
without one can be given deadlines as ElasticFlow's authors gave the ITP traces theirs:
``submit + U(a, b) × duration`` (``--deadlines 0.5,1.5``), drawn here from a seeded generator (the
authors' draw had no seed, so their values cannot be regenerated; the ITP traces carry them).  Jobs
without a deadline (NaN) are best-effort.

>>> import pandas as pd
>>> frame = pd.DataFrame({"submit_time": [0.0, 100.0], "duration": [1000.0, 50.0]})
>>> with_deadlines(frame, parse_deadline_range("1,1"))["deadline"].tolist()
[1000.0, 150.0]
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from simcluster.errors import TraceError
from simcluster.settings.deadlines import deadline_range


def parse_deadline_range(text: str) -> tuple[float, float]:
    """``--deadlines A,B``: the range of U(a, b), with 0 < a ≤ b (a ConfigError, a ValueError, otherwise).

    >>> parse_deadline_range("0.5,1.5")
    (0.5, 1.5)
    """
    return deadline_range(text, "--deadlines")


def draw_deadlines(submit: np.ndarray, duration: np.ndarray, low: float, high: float, seed: int = 0) -> np.ndarray:
    """``submit + int(u × duration)`` with ``u ~ U(low, high)`` per job, from a generator seeded by ``seed``
    (whole seconds, as the ITP traces' deadlines are).

    >>> draw_deadlines(np.array([0.0, 10.0]), np.array([100.0, 100.0]), 0.5, 1.5, seed=1).tolist()
    [101.0, 155.0]
    """
    u = np.random.default_rng(seed).uniform(low, high, size=len(submit))
    return np.asarray(submit, dtype=float) + np.floor(u * np.asarray(duration, dtype=float))


def with_deadlines(frame: pd.DataFrame, drawn: tuple[float, float] | None = None, seed: int = 0,
                   replace: bool = False) -> pd.DataFrame:
    """The frame with a ``deadline`` column: drawn by ``drawn`` = (a, b) for jobs without one (all jobs
    with ``replace``), kept where the trace has one."""
    out = frame.copy()
    have = out["deadline"].to_numpy(dtype=float) if "deadline" in out else np.full(len(out), np.nan)
    if drawn is not None:
        new = draw_deadlines(out["submit_time"].to_numpy(), out["duration"].to_numpy(), *drawn, seed=seed)
        have = new if replace else np.where(np.isnan(have), new, have)
    out["deadline"] = have
    return out


def deadline_seconds(path: object, text: pd.Series, submit_raw: pd.Series, submit_seconds: np.ndarray,
                     lines: np.ndarray) -> np.ndarray:
    """A log's ``deadline`` column on the simulation's clock: each deadline keeps its distance from its job's
    submit time as the log writes both (numbers on one clock), so a log counted from any epoch reads right.
    Empty: no deadline (NaN).  A deadline that is not a number, or before its submit time, is a TraceError
    naming the line."""
    values = pd.to_numeric(text.str.strip().replace("", np.nan), errors="coerce").to_numpy(dtype=float)
    bad = np.flatnonzero(np.isnan(values) & (text.str.strip() != "").to_numpy())
    if len(bad):
        row = int(bad[0])
        raise TraceError(str(path), f"not a number of seconds: {text.iloc[row]!r}", line=int(lines[row]), field="deadline")
    submitted = pd.to_numeric(submit_raw, errors="coerce").to_numpy(dtype=float)
    given = ~np.isnan(values)
    if np.any(given & np.isnan(submitted)):
        row = int(np.flatnonzero(given & np.isnan(submitted))[0])
        raise TraceError(str(path), "a deadline needs a numeric submit time on the same clock (seconds); this "
                         f"row's is {submit_raw.iloc[row]!r}", line=int(lines[row]), field="deadline")
    early = np.flatnonzero(given & (values < submitted))
    if len(early):
        row = int(early[0])
        raise TraceError(str(path), f"deadline {text.iloc[row]} is before the job's submit time {submit_raw.iloc[row]}",
                         line=int(lines[row]), field="deadline")
    return np.where(given, values - submitted + submit_seconds, np.nan)


def job_deadlines(frame: pd.DataFrame, drawn: str | None, seed: int = 0) -> np.ndarray | None:
    """Each row's deadline for a run (NaN: none): the trace's ``deadline`` column, with deadlines drawn for
    the rows without one when ``drawn`` (``--deadlines A,B``) is given; None when no row has one.

    >>> frame = pd.DataFrame({"submit_time": [0.0, 10.0], "duration": [100.0, 100.0], "deadline": [50.0, np.nan]})
    >>> job_deadlines(frame, None).tolist(), job_deadlines(frame, "1,1").tolist()
    ([50.0, nan], [50.0, 110.0])
    """
    if drawn is None and "deadline" not in frame:
        return None
    values = with_deadlines(frame[[c for c in ("submit_time", "duration", "deadline") if c in frame]],
                            parse_deadline_range(drawn) if drawn is not None else None, seed)["deadline"]
    out = values.to_numpy(dtype=float)
    return out if not np.isnan(out).all() else None
