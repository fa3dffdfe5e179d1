"""Tail and starvation figures: the longest waits, the share of jobs that waited past a bound, bounded slowdown.

A starvation-aware policy is judged by its worst jobs, not its average: ``max_queue`` and ``p999_queue``
(the longest and the 99.9th-percentile queueing delay), ``queue_over_<bound>`` (the share of finished jobs
that waited longer than ``bound`` in all, e.g. ``queue_over_4h``; ``lucid-sim run --wait-bound``, default
4 h) and ``avg_bounded_slowdown``, the mean over jobs of

    max(1, JCT ÷ max(duration, 10 s))

(Feitelson, Rudolph, Schwiegelshohn, Sevcik and Wong, "Theory and practice in parallel job scheduling",
JSSPP 1997: the bound keeps a 1-second job that waited a minute from weighing 60× a long one).  Every figure
is over finished jobs, computed from the jobs table's own columns (``queue``, ``jct``, ``duration``) with a
few vectorised passes; the same figures per user (``users.csv``) and per job size (``per_size`` in
``summary.json``, :data:`SIZE_BUCKETS`).

>>> figures = tail_figures(np.array([0.0, 100.0, 20000.0]), np.array([10.0, 200.0, 20100.0]),
...                        np.array([10.0, 100.0, 100.0]), (3600.0, 4 * 3600.0))
>>> figures["max_queue"], figures["queue_over_1h"], figures["queue_over_4h"], figures["avg_bounded_slowdown"]
(20000.0, 0.3333333333333333, 0.3333333333333333, 68.0)
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from simcluster.limits import LimitError, duration

HOUR = 3600.0
DEFAULT_WAIT_BOUNDS = (4 * HOUR,)
SLOWDOWN_BOUND = 10.0  # seconds: the usual bound of bounded slowdown in the literature
TAIL_FIGURES = ("max_queue", "p999_queue", "avg_bounded_slowdown")  # besides queue_over_<bound>
SIZE_BUCKETS = ((1, 1), (2, 4), (5, 8), (9, 32), (33, None))  # GPU counts of the per_size groups
SIZE_FIGURES = ("jobs", "avg_jct", "p99_jct", "avg_queue", "p99_queue", *TAIL_FIGURES)
_UNITS = {"": 1.0, "s": 1.0, "m": 60.0, "h": HOUR, "d": 86400.0}
_OVER = re.compile(r"queue_over_(\d+(?:\.\d+)?)([smhd])")


def parse_seconds(text: str, option: str = "--wait-bound") -> float:
    """A time given as seconds or with units (s, m, h, d), as ``--gantt-window`` takes it: ``14400``, ``90m``,
    ``4h``, ``1h30m``, ``1.5d`` (:func:`simcluster.limits.duration`).

    >>> parse_seconds("4h"), parse_seconds("90m"), parse_seconds("3600")
    (14400.0, 5400.0, 3600.0)
    """
    try:
        seconds = duration(str(text), option)
    except LimitError:
        raise ValueError(f"{option}: {text!r} is not a time such as 3600, 90m, 4h, 1h30m or 2d") from None
    if not 0 < seconds < 1e12:
        raise ValueError(f"{option}: expected a time above 0 (e.g. 4h), got {text!r}")
    return seconds


def bound_name(seconds: float) -> str:
    """A bound as it appears in a figure's name: the largest unit that divides it whole.

    >>> bound_name(14400), bound_name(5400), bound_name(90), bound_name(86400), bound_name(2.5)
    ('4h', '90m', '90s', '1d', '2.5s')
    """
    for unit, size in (("d", 86400.0), ("h", HOUR), ("m", 60.0)):
        if seconds >= size and seconds % size == 0:
            return f"{seconds / size:g}{unit}"
    return f"{seconds:g}s"


def over_key(seconds: float) -> str:
    """The name of the share of jobs that waited longer than ``seconds``: ``queue_over_4h``."""
    return f"queue_over_{bound_name(seconds)}"


def bound_of(key: str) -> float | None:
    """The bound in seconds of a ``queue_over_<bound>`` figure's name, else None.

    >>> bound_of("queue_over_4h"), bound_of("avg_jct")
    (14400.0, None)
    """
    found = _OVER.fullmatch(key)
    return float(found[1]) * _UNITS[found[2]] if found else None


def bounded_slowdown(jct: np.ndarray, duration: np.ndarray, bound: float = SLOWDOWN_BOUND) -> np.ndarray:
    """max(1, JCT ÷ max(duration, bound)) per job (NaN where the JCT is)."""
    return np.maximum(1.0, np.asarray(jct, float) / np.maximum(np.asarray(duration, float), bound))


def tail_figures(queue: np.ndarray, jct: np.ndarray, duration: np.ndarray,
                 bounds: Sequence[float] = DEFAULT_WAIT_BOUNDS) -> dict[str, Any]:
    """``max_queue``, ``p999_queue``, ``queue_over_<bound>`` for each of ``bounds`` and ``avg_bounded_slowdown``
    of finished jobs (their queueing delays, JCTs and durations); None for each when there are none."""
    queue = np.asarray(queue, float)
    if not len(queue):
        return {"max_queue": None, "p999_queue": None, **{over_key(b): None for b in bounds},
                "avg_bounded_slowdown": None}
    return {
        "max_queue": float(queue.max()),
        "p999_queue": float(np.percentile(queue, 99.9)),
        **{over_key(b): float(np.count_nonzero(queue > b)) / len(queue) for b in bounds},
        "avg_bounded_slowdown": float(bounded_slowdown(jct, duration).mean()),
    }


def frame_tail(done: pd.DataFrame, bounds: Sequence[float] = DEFAULT_WAIT_BOUNDS) -> dict[str, Any]:
    """:func:`tail_figures` of a jobs table's finished rows ``done``."""
    return tail_figures(done["queue"].to_numpy(float), done["jct"].to_numpy(float),
                        done["duration"].to_numpy(float), bounds)


def size_label(low: int, high: int | None) -> str:
    return f"{low}" if low == high else (f"{low}+" if high is None else f"{low}-{high}")


def size_figures(frame: pd.DataFrame, bounds: Sequence[float] = DEFAULT_WAIT_BOUNDS) -> dict[str, dict[str, Any]]:
    """``per_size``: per bucket of GPU counts (:data:`SIZE_BUCKETS`, ``"1"``, ``"2-4"``, …, only those with
    finished jobs) the finished jobs' count, avg/p99 JCT, avg/p99/max/p99.9 queueing delay, the shares over
    ``bounds`` and avg bounded slowdown: whether a policy starves the large jobs."""
    done = frame["end_time"].notna().to_numpy()
    gpus = frame["gpu_num"].to_numpy(float)[done]
    edges = [low for low, _ in SIZE_BUCKETS[1:]]
    bucket = np.searchsorted(edges, gpus, side="right").astype(np.int8)  # (a GPU count below 1: the first bucket)
    order = np.argsort(bucket, kind="stable")  # (a radix sort of small integers: each bucket's jobs a slice)
    ends = np.cumsum(np.bincount(bucket, minlength=len(SIZE_BUCKETS)))
    queue, jct, duration = (frame[c].to_numpy(float)[done][order] for c in ("queue", "jct", "duration"))
    found: dict[str, dict[str, Any]] = {}
    for k, (low, high) in enumerate(SIZE_BUCKETS):
        mine = slice(ends[k - 1] if k else 0, ends[k])
        q, j = queue[mine], jct[mine]
        if not len(q):
            continue
        found[size_label(low, high)] = {
            "jobs": len(q), "avg_jct": float(j.mean()), "p99_jct": float(np.percentile(j, 99)),
            "avg_queue": float(q.mean()), "p99_queue": float(np.percentile(q, 99)),
            **tail_figures(q, j, duration[mine], bounds),
        }
    return found


def with_wait_bounds(summary: dict[str, Any], frame: pd.DataFrame, bounds: Iterable[float]) -> dict[str, Any]:
    """``summary`` with its ``queue_over_<bound>`` figures (overall, ``per_vc``, ``per_size``) for ``bounds``
    instead of the ones it has, from the run's jobs table ``frame``; ``wait_bounds`` records them.  The other
    figures are kept as they are."""
    bounds = sorted(set(bounds))
    done = frame[frame["end_time"].notna()]

    def shares(rows: pd.DataFrame) -> dict[str, Any]:
        queue = rows["queue"].to_numpy(float)
        return {over_key(b): (float(np.count_nonzero(queue > b)) / len(queue) if len(queue) else None)
                for b in bounds}

    def replaced(figures: dict[str, Any], rows: pd.DataFrame) -> dict[str, Any]:
        kept = {k: v for k, v in figures.items() if bound_of(k) is None}
        at = list(kept).index("avg_bounded_slowdown") if "avg_bounded_slowdown" in kept else len(kept)
        items = list(kept.items())
        return dict(items[:at] + list(shares(rows).items()) + items[at:])

    summary = replaced(summary, done)
    vcs = done["vc"].to_numpy()
    summary["per_vc"] = {vc: replaced(figures, done[vcs == vc]) for vc, figures in summary.get("per_vc", {}).items()}
    if "per_size" in summary:
        summary["per_size"] = size_figures(frame, bounds)
    summary["wait_bounds"] = bounds
    return summary
