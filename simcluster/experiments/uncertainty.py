"""The report's intervals: each configuration's figures over its replicas, and paired differences with verdicts.

Two sources of replicas (:mod:`simcluster.experiments.replicas`):

* runs that *are* replicas — a sweep's ``--replicas N``, recorded in each summary's ``sweep_run``;
  configurations run on the same replica indices pair up;
* ``report --replicas N``: a post-hoc bootstrap of finished runs over the trace's days, the schedule
  held fixed (:func:`posthoc_figures`).

The comparison table gains ``F_sd``, ``F_low``, ``F_high`` (the 95 % percentile interval of the replica values)
and ``F_replicas`` for each figure with at least :data:`MIN_INTERVAL` replicas (fewer: its min–max stays, and the
report says so).  ``differences.csv`` holds, for each of the chosen figures (``report --metrics``,
:data:`HEADLINE` by default) and each pair of configurations, the paired difference ``first − second`` — its
mean and interval, and for figures in seconds or ratios the relative difference ``first ÷ second − 1`` per
replica (``rel_mean``, ``rel_low``, ``rel_high``) — and the verdict in words:

>>> d = Interval(-120.0, 40.0, -200.0, -50.0, 20)
>>> verdict_text("srtf-cap", "fifo", "p99_jct", d, Interval(-0.12, 0.02, -0.15, -0.08, 20))
"srtf-cap's p99 JCT is 12 % (95 % interval 8–15 %) lower than fifo's (20 paired replicas)"
>>> verdict_text("a", "b", "queue_over_4h", Interval(0.01, 0.01, -0.002, 0.03, 25), None)
'a and b: no difference in the share of jobs waiting > 4h can be told (a − b: +1 points on average, 95 % interval -0.2 to +3 points; 25 paired replicas)'
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from simcluster.experiments.aggregate import Configuration, baseline_of
from simcluster.experiments.replicas import (
    DAY,
    FEWEST,
    Interval,
    PerturbationError,
    interval,
    parse_perturbation,
    replica_rng,
)
from simcluster.limits import MAX_BLOCKS
from simcluster.metrics.tail import DEFAULT_WAIT_BOUNDS, bound_name, bound_of, bounded_slowdown, over_key

MAX_PAIRS = 45
MIN_INTERVAL = 3  # fewer replicas than this: no 95 % interval, the min–max is shown (and said)
HEADLINE = ("avg_jct", "p50_jct", "p99_jct", "avg_queue", "p99_queue", "max_queue", "avg_bounded_slowdown",
            "gpu_utilization", over_key(DEFAULT_WAIT_BOUNDS[0]))
_NAMES = {"avg_jct": "avg JCT", "p50_jct": "median JCT", "p99_jct": "p99 JCT", "avg_queue": "avg wait",
          "p99_queue": "p99 wait", "max_queue": "max wait", "p999_queue": "p99.9 wait", "makespan": "makespan",
          "avg_bounded_slowdown": "avg bounded slowdown", "gpu_utilization": "GPU utilization",
          "shared_gpu_fraction": "shared GPU time", "jain_users": "Jain's index", "rho_mean": "mean ρ",
          "rho_p99": "p99 ρ", "rho_above_1": "share of jobs with ρ > 1", "preemptions": "preemptions",
          "jobs": "jobs", "ettr_mean": "mean ETTR", "ettr_gpu_weighted": "GPU-weighted ETTR",
          "interruptions": "interruptions"}
_SHARES = {"gpu_utilization", "shared_gpu_fraction", "rho_above_1"}  # differences in percentage points


def metric_name(name: str) -> str:
    """A figure's name in words: ``p99_jct`` → 'p99 JCT', ``queue_over_4h`` → 'share of jobs waiting > 4h'."""
    bound = bound_of(name)
    if bound is not None:
        return f"share of jobs waiting > {bound_name(bound)}"
    return _NAMES.get(name, name)


def in_points(name: str) -> bool:
    """Whether the figure is a share, its differences told in percentage points rather than relative."""
    return name in _SHARES or bound_of(name) is not None


@dataclass(frozen=True)
class Difference:
    """The paired difference ``first − second`` of one figure over the replicas both have."""

    first: str
    second: str
    figure: str
    absolute: Interval
    relative: Interval | None  # first ÷ second − 1 per replica; None for shares or where second is 0
    verdict: str

    @property
    def told(self) -> bool:
        """Whether the interval excludes 0 (a difference can be told)."""
        return (self.relative or self.absolute).excludes_zero()


@dataclass
class Uncertainty:
    """What the report adds when runs have replicas."""

    method: str  # one sentence: where the replicas come from
    values: dict[str, dict[str, dict[str, dict[int, float]]]]  # label → vc → figure → replica → value
    differences: list[Difference] = field(default_factory=list)
    pairs_left_out: int = 0  # pairs of configurations not compared (every pair of many, without a baseline)

    @property
    def left_out_note(self) -> str | None:
        """What the report says of the pairs it did not compare, so that none is dropped silently."""
        if not self.pairs_left_out:
            return None
        return (f"{self.pairs_left_out:,} pair(s) of configurations were not compared: without a baseline every pair "
                f"on one trace is, up to {MAX_PAIRS}; give --baseline POLICY to compare each configuration with its "
                "baseline's, all of them")

    def differences_frame(self) -> pd.DataFrame:
        rows = [{"first": d.first, "second": d.second, "figure": d.figure, **vars(d.absolute),
                 **({"rel_mean": d.relative.mean, "rel_low": d.relative.low, "rel_high": d.relative.high}
                    if d.relative is not None else {}), "verdict": d.verdict} for d in self.differences]
        return pd.DataFrame(rows, columns=["first", "second", "figure", "mean", "sd", "low", "high", "n", "rel_mean",
                                           "rel_low", "rel_high", "verdict"])

    def replicas_of(self, label: str) -> int:
        """How many replicas configuration ``label`` has (of its avg JCT; 0 when none)."""
        return len(self.values.get(label, {}).get("all", {}).get("avg_jct", {}))

    def interval_of(self, label: str, name: str, vc: str = "all") -> Interval | None:
        """The figure's interval over the configuration's replicas, None with fewer than :data:`MIN_INTERVAL`."""
        by_replica = self.values.get(label, {}).get(vc, {}).get(name, {})
        found = interval(list(by_replica.values()))
        return found if found.n >= MIN_INTERVAL else None

    def with_intervals(self, table: pd.DataFrame) -> pd.DataFrame:
        """``table`` (comparison.csv) with ``F_sd``, ``F_low``, ``F_high``, ``F_replicas`` where a figure has at least
        :data:`MIN_INTERVAL` replicas."""
        table = table.copy()
        for i, row in table.iterrows():
            for name in self.values.get(row["label"], {}).get(row["vc"], {}):
                found = self.interval_of(row["label"], name, row["vc"])
                if found is not None:
                    table.loc[i, [f"{name}_sd", f"{name}_low", f"{name}_high", f"{name}_replicas"]] = [
                        found.sd, found.low, found.high, found.n]
        return table


def replica_uncertainty(groups: Sequence[Configuration], figures: Sequence[str], baseline: str | None = None,
                        metrics: Sequence[str] = HEADLINE) -> Uncertainty | None:
    """Intervals of ``figures`` from runs that are replicas, paired differences of ``metrics``; None when no run
    is a replica."""
    values: dict[str, dict[str, dict[str, dict[int, float]]]] = {}
    kinds = set()
    for g in groups:
        for r in g.runs:
            sweep = r.summary.get("sweep_run") or {}
            if sweep.get("replica") is None:
                continue
            kinds.add(str(sweep.get("perturb")))
            for vc in [*g.vcs, "all"]:
                source = r.summary if vc == "all" else r.summary.get("per_vc", {}).get(vc, {})
                for name in figures:
                    value = source.get(name)
                    if value is not None:
                        values.setdefault(g.label, {}).setdefault(vc, {}).setdefault(name, {})[
                            int(sweep["replica"])] = float(value)
    if not values:
        return None
    method = (f"{', '.join(sorted(kinds))} replicas simulated by the sweep (docs/uncertainty.md); each figure's "
              "mean over them with its 95 % interval (2.5th–97.5th percentile of the replica values)")
    found = Uncertainty(method, values)
    found.differences, found.pairs_left_out = _differences(groups, found, baseline, metrics)
    return _rough(found)


def posthoc_uncertainty(groups: Sequence[Configuration], replicas: int, perturb: str, seed: int,
                        baseline: str | None = None, metrics: Sequence[str] = HEADLINE,
                        bounds: Sequence[float] = DEFAULT_WAIT_BOUNDS) -> Uncertainty:
    """Intervals by ``report --replicas``: the post-hoc bootstrap of each configuration's first run."""
    made = parse_perturbation(perturb)
    if made.kind != "bootstrap" or made.by != "day":
        raise ValueError(f"report --perturb {perturb}: a finished run can only be resampled by days (bootstrap, "
                         "bootstrap:block=SECONDS); jitter, seeds and users need simulated replicas: lucid-sim sweep "
                         "--replicas N --perturb …")
    jobs = {g.label: g.runs[0].jobs(["duration"]) for g in groups}
    drawn = posthoc_figures(jobs, replicas, seed, made.block, bounds)
    block = "days" if made.block == DAY else f"{made.block:g}-second blocks"
    method = (f"post-hoc bootstrap of each configuration's run over the trace's {block} ({replicas} replicas, seed "
              f"{seed}; the schedule held fixed: docs/uncertainty.md); each figure's mean over them with its 95 % "
              "interval (2.5th–97.5th percentile of the replica values)")
    found = Uncertainty(method, {label: {"all": figures} for label, figures in drawn.items()})
    found.differences, found.pairs_left_out = _differences(groups, found, baseline, metrics)
    return _rough(found)


def _rough(found: Uncertainty) -> Uncertainty:
    """``found``, its method saying so when some configuration has fewer than FEWEST replicas."""
    counts = [found.replicas_of(label) for label in found.values]
    if counts and min(counts) < FEWEST:
        found.method += (f"; fewer than {FEWEST} replicas ({min(counts)}): the intervals' ends rest on one or two "
                         "replicas each, a rough interval")
    return found


POSTHOC = ("avg_jct", "p50_jct", "p99_jct", "avg_queue", "p99_queue", "max_queue", "p999_queue",
           "avg_bounded_slowdown")  # and queue_over_<bound>: what a run's jobs give without simulating again


def posthoc_figures(jobs: Mapping[str, pd.DataFrame], replicas: int, seed: int, block: float = DAY,
                    bounds: Sequence[float] = DEFAULT_WAIT_BOUNDS) -> dict[str, dict[str, dict[int, float]]]:
    """Replicas of finished runs without simulating again: each replica draws the trace's days with replacement
    (the same draws for every run, so runs of one trace pair up; the days a ``--perturb bootstrap`` replay of
    the same seed draws) and recomputes :data:`POSTHOC` and the shares over ``bounds`` from the drawn days' jobs as
    they ran (a day drawn k times weighs k; percentiles as ``np.percentile`` of the jobs repeated).

    ``jobs``: label → the run's finished jobs (``submit_time``, ``jct``, ``queue``, and ``duration`` for the
    bounded slowdown).  Returns label → figure → replica → value.
    """
    firsts = [float(frame["submit_time"].min()) for frame in jobs.values() if len(frame)]
    start = np.floor(min(firsts, default=0.0) / block) * block
    days = max((int((float(f["submit_time"].max()) - start) // block) + 1 for f in jobs.values() if len(f)), default=1)
    if days > MAX_BLOCKS:
        raise PerturbationError(f"the runs span {days:,} blocks of {block:g} s, more than the limit of {MAX_BLOCKS:,} a "
                                "replica draws: give a longer block (bootstrap:block=SECONDS)")
    draws = [np.bincount(replica_rng(seed, i).integers(days, size=days), minlength=days) for i in range(replicas)]
    found: dict[str, dict[str, dict[int, float]]] = {}
    for label, frame in jobs.items():
        day = ((frame["submit_time"].to_numpy(float) - start) // block).astype(np.int64).clip(0, days - 1)
        jct, queue = frame["jct"].to_numpy(float), frame["queue"].to_numpy(float)
        slowdown = (bounded_slowdown(jct, frame["duration"].to_numpy(float)) if "duration" in frame
                    else np.full(len(jct), np.nan))
        by_jct, by_queue = np.argsort(jct, kind="stable"), np.argsort(queue, kind="stable")
        figures: dict[str, dict[int, float]] = {name: {} for name in (*POSTHOC, *map(over_key, bounds))}
        for i, times in enumerate(draws):
            weight = times[day]
            if not weight.sum():
                continue
            w = weight.astype(float)
            figures["avg_jct"][i] = float(np.average(jct, weights=w))
            figures["avg_queue"][i] = float(np.average(queue, weights=w))
            figures["p50_jct"][i], figures["p99_jct"][i] = _repeated_percentiles(jct[by_jct], weight[by_jct], (50, 99))
            figures["p99_queue"][i], figures["p999_queue"][i] = _repeated_percentiles(
                queue[by_queue], weight[by_queue], (99, 99.9))
            figures["max_queue"][i] = float(queue[weight > 0].max())
            figures["avg_bounded_slowdown"][i] = float(np.average(slowdown, weights=w))
            for b in bounds:
                figures[over_key(b)][i] = float(np.average(queue > b, weights=w))
        found[label] = figures
    return found


def _repeated_percentiles(ordered: np.ndarray, times: np.ndarray, qs: Sequence[float]) -> list[float]:
    """``np.percentile(np.repeat(ordered, times), qs)`` of sorted values without repeating them.

    >>> values, times = np.array([1.0, 2.0, 5.0]), np.array([2, 0, 3])
    >>> _repeated_percentiles(values, times, (10, 50, 99)) == list(np.percentile(np.repeat(values, times), (10, 50, 99)))
    True
    """
    counts = np.cumsum(times)
    total = int(counts[-1])
    found = []
    for q in qs:
        rank = q / 100 * (total - 1)
        low = int(np.floor(rank))
        at = np.searchsorted(counts, [low, min(low + 1, total - 1)], side="right")
        a, b = ordered[at[0]], ordered[at[1]]
        found.append(float(a + (rank - low) * (b - a)))
    return found


def _differences(groups: Sequence[Configuration], found: Uncertainty, baseline: str | None,
                 metrics: Sequence[str]) -> tuple[list[Difference], int]:
    """Paired differences of ``metrics``: each configuration against its baseline's (every one: they were asked
    for), else every pair on one trace up to :data:`MAX_PAIRS`; and how many pairs were left out."""
    if baseline is not None:
        pairs = [(g.label, base.label) for g in groups if g.policy != baseline
                 and (base := baseline_of(g, groups, baseline)) is not None]
    else:
        pairs = [(a.label, b.label) for i, a in enumerate(groups) for b in groups[i + 1:] if a.trace == b.trace]
    compared = pairs if baseline is not None else pairs[:MAX_PAIRS]
    differences = []
    for a, b in compared:
        for name in metrics:
            mine = found.values.get(a, {}).get("all", {}).get(name, {})
            theirs = found.values.get(b, {}).get("all", {}).get(name, {})
            shared = [k for k in mine if k in theirs]
            if len(shared) < 2:
                continue
            absolute = interval([mine[k] - theirs[k] for k in shared])
            relative = inverse = None
            if not in_points(name) and all(theirs[k] > 0 for k in shared):
                relative = interval([mine[k] / theirs[k] - 1 for k in shared])
                if all(mine[k] > 0 for k in shared):
                    inverse = interval([theirs[k] / mine[k] - 1 for k in shared])
            differences.append(Difference(a, b, name, absolute, relative,
                                          verdict_text(a, b, name, absolute, relative, inverse)))
    return differences, len(pairs) - len(compared)


def verdict_text(first: str, second: str, name: str, absolute: Interval, relative: Interval | None,
                 inverse: Interval | None = None) -> str:
    """What the paired difference ``first − second`` of figure ``name`` lets one say, with its 95 % interval:
    relative (``first ÷ second − 1``) where given — as a multiple where one is at least twice the other
    (``inverse``: ``second ÷ first − 1``, for when ``second`` is the larger) — in percentage points for shares,
    else in the figure's unit."""
    replicas = f"{absolute.n} paired replicas"
    what = metric_name(name)
    if relative is not None:
        shown, unit, scale = relative, " %", 100.0
    elif in_points(name):
        shown, unit, scale = absolute, " points", 100.0
    else:
        shown, unit, scale = absolute, "" if name in ("jain_users", "rho_mean", "rho_p99", "avg_bounded_slowdown",
                                                      "preemptions", "jobs", "ettr_mean", "ettr_gpu_weighted",
                                                      "interruptions") else " s", 1.0
    if relative is not None and relative.excludes_zero() and relative.low >= 1:  # at least twice: say how many times
        return (f"{first}'s {what} is {_amount(1 + relative.mean)}× {second}'s (95 % interval {_amount(1 + relative.low)}"
                f"–{_amount(1 + relative.high)}×; {replicas})")
    if relative is not None and inverse is not None and relative.excludes_zero() and inverse.low >= 1:
        return verdict_text(second, first, name, absolute, inverse)
    if shown.excludes_zero():
        direction = "lower" if shown.mean < 0 else "higher"
        low, high = sorted((abs(shown.low) * scale, abs(shown.high) * scale))
        return (f"{first}'s {what} is {_amount(abs(shown.mean) * scale)}{unit} (95 % interval {_amount(low)}–"
                f"{_amount(high)}{unit}) {direction} than {second}'s ({replicas})")
    article = "the " if what.startswith("share") else ""
    if relative is not None:  # the interval runs from lower to higher
        return (f"{first} and {second}: no difference in {article}{what} can be told ({first}'s is "
                f"{_amount(abs(shown.mean) * scale)}{unit} {'lower' if shown.mean < 0 else 'higher'} on average, 95 % "
                f"interval {_amount(abs(shown.low) * scale)}{unit} lower to {_amount(abs(shown.high) * scale)}{unit} "
                f"higher; {replicas})")
    return (f"{first} and {second}: no difference in {article}{what} can be told ({first} − {second}: "
            f"{_signed(shown.mean * scale)}{unit} on average, 95 % interval {_signed(shown.low * scale, False)} to "
            f"{_signed(shown.high * scale)}{unit}; {replicas})")


def _amount(value: float) -> str:
    if value >= 100:
        return f"{value:,.0f}"
    return f"{value:.0f}" if value >= 10 else f"{value:.2g}"  # (two significant digits)


def _signed(value: float, plus: bool = True) -> str:
    text = _amount(abs(value))
    return ("-" if value < 0 else "+" if plus else "") + text


def interval_cell(row: Any, name: str, text: str, value: Any) -> str | None:
    """``mean [low–high]`` for a figure with replicas (``value`` formats a number), else None."""
    low, high = row.get(f"{name}_low"), row.get(f"{name}_high")
    if not text or low is None or high is None or not np.isfinite(low):
        return None
    return f"{text} [{value(name, low)}–{value(name, high)}]"
