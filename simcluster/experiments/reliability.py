"""A reliability study: the ETTR and wall-clock of one job of each size against its checkpoint interval, spares,
swap time and exclusion rule, under a fault model.

For each job size N (GPUs), each combination of hot spares (a count, or a share of the job's nodes: ``2%`` is
⌈0.02 × nodes⌉), spare swap time and exclusion rule (``N/DAYS`` or none), and each interval τ, ``replicas`` runs
of one N-GPU job (on N / GPUs-per-node nodes) of ``work`` seconds, seeded 0 … replicas−1; its ETTR is work ÷
(end − start) and its wall-clock end − start, in days.  A job that can never finish (at no moment are all its
nodes up, or the exclusion rule takes out more servers than the spares replace) counts as ETTR 0 and infinite
wall-clock, and its row says so (``unfinished_runs``, ``unfinished_why``).  A replayed fault log starts each
replica at its own offset into the log (``faults_offset="random"``, the default for a log:
:func:`~simcluster.faults.replay.random_offset` of the seed), so that the replicas sample the whole log rather
than its first weeks.  Per row, three intervals, each named for what it is:

- ``ettr_low``–``ettr_high``: the **95 % confidence interval of the mean** ETTR, mean ± t₀.₉₇₅,ₙ₋₁ · sd / √n
  (Student's t quantile), clipped to [0, 1] (``wall_days_low``–``wall_days_high`` the same of the wall-clock);
- ``ettr_runs_low``–``ettr_runs_high``: the **middle 95 % of the runs** (their 2.5th and 97.5th percentiles):
  the spread across seeds and offsets, what one training run may see (what ``sweep`` and ``report`` call the
  95 % interval over replicas; ``wall_days_runs_low``–``wall_days_runs_high`` the same of the wall-clock);
- ``ettr_rate_low``–``ettr_rate_high``, where the model's rate was counted from a log (a replayed log, a
  ``fitted.json``): the mean's interval widened by the **rate's own uncertainty** (:func:`rate_widened`): the
  exact Poisson (Garwood) interval of the rate from k faults in T server-seconds up, propagated to ETTR to first
  order, the loss to faults being proportional to the rate.

The closed form (:func:`simcluster.faults.ettr` with the restart and swap exposed) is given only where it applies
(:func:`closed_form_gap` says why not elsewhere): an exponential rate model, no exclusion, and spares that
almost never run short, so that every fault costs the same.  Each size is also run at Daly's interval for its
rate (λ × its nodes) and its checkpoint cost: the Young/Daly optimum, marked in the table (``daly``) and the
picture.

``lucid-sim reliability`` and :func:`reliability_study` run it, with the same bounds (:func:`check_sizes`,
:func:`check_intervals`, :func:`check_spares`, :func:`check_swaps`, :func:`check_exclusions`,
:func:`check_combinations`); :meth:`ReliabilityStudy.write` writes ``reliability.csv``, ``reliability.png``,
``reliability_spares.png`` (with several spares values) and, asked, ``reliability.html``: a page that opens
with the answer (:func:`answers`).
"""

from __future__ import annotations

import html
import itertools
import math
import numbers
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import pandas as pd

from simcluster.config import SimConfig
from simcluster.engine import Simulation
from simcluster.engine.failures import NoProgressError
from simcluster.faults import LogReplay, RateModel, daly_interval, ettr
from simcluster.faults.fit import poisson_interval
from simcluster.faults.models import FailureModel
from simcluster.faults.replay import random_offset
from simcluster.faults.spec import (
    RANDOM,
    LogReading,
    Offset,
    check_offset,
    failure_model,
    node_rate,
    offset_of,
    rate_evidence,
    seconds,
)
from simcluster.job import Job
from simcluster.limits import LimitError, number, shown
from simcluster.run import resolve_run
from simcluster.settings.fields import ConfigError
from simcluster.settings.reliability import MAX_COST_S, exclusion_rule

MAX_POINTS = 200
MAX_SIZES = 200  # job sizes in one study, as --points stops at 200 intervals
MAX_COMBINATIONS = 200  # sizes × spares × swaps × exclusions in one study, each run at every interval
# each of a job's nodes is simulated (about 6 kB a node in a run): 131,072 nodes stay near a gigabyte, and at 8
# GPUs a node above a million GPUs, beyond the largest cluster built
MAX_JOB_NODES = 131_072
MAX_SPARES = MAX_JOB_NODES  # spares are simulated node by node too
MAX_REPLICAS = 10_000
MAX_WORK_S = 10 * 365 * 86_400.0
CONFIDENCE = 0.95
SHORT_SPARES = 0.01  # above this share of faults finding no spare ready, faults no longer cost the same
DAY = 86_400.0
Spares = int | str  # a count of spare nodes, or a share of the job's nodes written as "2%"
Exclusion = str | None  # "N/DAYS", or None: no server is taken out


def parse_intervals(text: str, points: int = 8) -> tuple[float, ...]:
    """``5m..4h`` (``points`` intervals spaced evenly on a log scale, both ends included) or ``5m,30m,1h``.

    >>> [round(t) for t in parse_intervals("5m..4h", 3)]
    [300, 2078, 14400]
    >>> parse_intervals("600,1h")
    (600.0, 3600.0)
    """
    text = text.strip()
    if ".." in text:
        low_text, _, high_text = text.partition("..")
        low = seconds(low_text, "--checkpoint-interval (from)")
        high = seconds(high_text, "--checkpoint-interval (to)")
        points = int(number(points, "--points", low=2, high=MAX_POINTS, whole=True))
        if not 0 < low < high:
            raise LimitError(f"--checkpoint-interval {text}: needs 0 < FROM < TO, e.g. 5m..4h")
        return tuple(float(v) for v in np.geomspace(low, high, points))
    values = tuple(seconds(part, "--checkpoint-interval") for part in text.split(",") if part.strip())
    if not values or any(v <= 0 for v in values) or len(values) > MAX_POINTS:
        raise LimitError(f"--checkpoint-interval {text}: give FROM..TO (5m..4h) or positive times, e.g. 5m,30m,1h")
    return values


def check_intervals(intervals: Sequence[float], given: str | None = None) -> tuple[float, ...]:
    """Checkpoint intervals as a study takes them: 1 to :data:`MAX_POINTS` of them, each above 0 and at most
    30 days, the cap ``lucid-sim run`` puts on it (:data:`~simcluster.settings.reliability.MAX_COST_S`; beyond
    it the closed form overflows); :class:`LimitError` naming ``--checkpoint-interval`` (and the text as
    ``given``) otherwise.

    >>> check_intervals([1800, 3600.0])
    (1800.0, 3600.0)
    >>> check_intervals([864e6])
    Traceback (most recent call last):
    ...
    simcluster.limits.LimitError: --checkpoint-interval: an interval must be at most 30 days (2,592,000 s), as `lucid-sim run` takes it; got 864,000,000 s
    """
    named = f"--checkpoint-interval {shown(given)}" if given is not None else "--checkpoint-interval"
    if isinstance(intervals, (str, bytes)) or not 1 <= len(intervals) <= MAX_POINTS:
        count = len(intervals) if not isinstance(intervals, (str, bytes)) else 0
        raise LimitError(f"{named}: give 1 to {MAX_POINTS} intervals in seconds, got {count:,}")
    values = tuple(number(v, "--checkpoint-interval", above=0) for v in intervals)
    longest = max(values)
    if longest > MAX_COST_S:
        raise LimitError(f"{named}: an interval must be at most {MAX_COST_S / 86_400:g} days ({MAX_COST_S:,.0f} s), "
                         f"as `lucid-sim run` takes it; got {f'{longest:,.0f}' if longest < 1e15 else f'{longest:g}'} s")
    return values


def parse_sizes(text: str, gpus_per_node: int) -> tuple[int, ...]:
    """``8,64,512``: GPU counts, each a positive multiple of the GPUs per node, at most :data:`MAX_SIZES` of
    them (counted before they are read)."""
    parts = [part for part in text.split(",") if part.strip()]
    if len(parts) > MAX_SIZES:
        raise LimitError(f"--gpus: at most {MAX_SIZES} job sizes in one study (as --points stops at 200), "
                         f"got {len(parts):,}")
    sizes = tuple(int(number(part, "--gpus", low=1, high=10_000_000, whole=True)) for part in parts)
    if not sizes:
        raise LimitError("--gpus: give job sizes in GPUs, e.g. 8,64,512,4096,16384")
    return check_sizes(sizes, gpus_per_node)


def check_sizes(gpus: Sequence[int], gpus_per_node: int) -> tuple[int, ...]:
    """Job sizes as a study takes them: 1 to :data:`MAX_SIZES` sizes, each a whole number of nodes and at most
    :data:`MAX_JOB_NODES` of them, so that a study's time and memory stay bounded; :class:`LimitError` naming
    ``--gpus`` otherwise.

    >>> check_sizes([8, 64], 8)
    (8, 64)
    >>> check_sizes([10_000_000], 8)
    Traceback (most recent call last):
    ...
    simcluster.limits.LimitError: --gpus 10,000,000: a job of at most 131,072 nodes (1,048,576 GPUs at --gpus-per-node 8) is simulated node by node, got 1,250,000 nodes
    """
    per_node = int(number(gpus_per_node, "--gpus-per-node", low=1, high=1024, whole=True))
    if isinstance(gpus, (str, bytes)) or not 1 <= len(gpus) <= MAX_SIZES:
        count = len(gpus) if not isinstance(gpus, (str, bytes)) else 0
        raise LimitError(f"--gpus: at most {MAX_SIZES} job sizes in one study (as --points stops at 200), and at "
                         f"least one, got {count:,}")
    sizes = []
    for given in gpus:
        size = int(number(given, "--gpus", low=1, whole=True))
        if size % per_node:
            raise LimitError(f"--gpus {size}: a job of whole nodes, a multiple of --gpus-per-node {per_node}")
        if size // per_node > MAX_JOB_NODES:
            raise LimitError(f"--gpus {size:,}: a job of at most {MAX_JOB_NODES:,} nodes ({MAX_JOB_NODES * per_node:,} "
                             f"GPUs at --gpus-per-node {per_node}) is simulated node by node, got "
                             f"{size // per_node:,} nodes")
        sizes.append(size)
    return tuple(sizes)


def _listed(text: str, option: str) -> list[str]:
    """The comma-separated values of a list option, at most :data:`MAX_COMBINATIONS` (counted before they are
    read), at least one."""
    parts = [part.strip() for part in str(text).split(",")]
    if len(parts) > MAX_COMBINATIONS:
        raise LimitError(f"{option}: at most {MAX_COMBINATIONS} values in one study, got {len(parts):,}")
    if not all(parts):
        raise LimitError(f"{option} {shown(text)}: give comma-separated values, none empty")
    return parts


def _as_list(values: Any) -> list[Any]:
    """One value or a sequence of them (a string is one value)."""
    return [values] if isinstance(values, (str, bytes, numbers.Number)) or values is None else list(values)


def _no_twice(values: Sequence[Any], option: str) -> None:
    seen = set()
    for value in values:
        if value in seen:
            raise LimitError(f"{option}: {value if isinstance(value, str) else f'{value:g}'} given twice")
        seen.add(value)


def parse_spares(text: str) -> tuple[Spares, ...]:
    """``--spare-nodes``: counts of spare nodes and shares of the job's nodes, comma-separated (``0,8,16``,
    ``2%,5%``, ``0,2%``), as :func:`check_spares` takes them.

    >>> parse_spares("0, 8"), parse_spares("2%,5.5 %")
    ((0, 8), ('2%', '5.5%'))
    """
    return check_spares(_listed(text, "--spare-nodes"))


def check_spares(values: Spares | Sequence[Spares]) -> tuple[Spares, ...]:
    """Spares as a study takes them: each a whole count from 0 to :data:`MAX_SPARES`, or a share of the job's
    nodes from 0 % to 100 % (``"2%"``), none twice; :class:`LimitError` naming ``--spare-nodes`` otherwise.

    >>> check_spares(8), check_spares([0, "2%"])
    ((8,), (0, '2%'))
    >>> check_spares("150%")
    Traceback (most recent call last):
    ...
    simcluster.limits.LimitError: --spare-nodes '150%': a share of the job's nodes must be from 0 % to 100 %
    """
    found: list[Spares] = []
    for value in _as_list(values):
        text = str(value).strip()
        if text.endswith("%"):
            share = number(text[:-1].strip(), f"--spare-nodes {shown(text)} (a share in %)")
            if not 0 <= share <= 100:
                raise LimitError(f"--spare-nodes {shown(text)}: a share of the job's nodes must be from 0 % to 100 %")
            found.append(f"{share:g}%")
        else:
            found.append(int(number(value, "--spare-nodes", low=0, high=MAX_SPARES, whole=True)))
    _no_twice(found, "--spare-nodes")
    return tuple(found)


def spare_count(spares: Spares, nodes: int) -> int:
    """The spare nodes of a job on ``nodes`` nodes: the count, or ⌈share × nodes⌉ (computed in exact decimal
    steps: 2 % of 100 nodes is 2, not 3).

    >>> spare_count(8, 2048), spare_count("2%", 2048), spare_count("2%", 100), spare_count("0%", 64)
    (8, 41, 2, 0)
    """
    if isinstance(spares, str):
        return math.ceil(round(float(spares.rstrip("%")) * nodes / 100, 9))
    return int(spares)


def spare_share(spares: Spares) -> float:
    """The share of the job's nodes a spares value names (NaN for a count).

    >>> spare_share("5%"), spare_share(8)
    (0.05, nan)
    """
    return float(spares.rstrip("%")) / 100 if isinstance(spares, str) else math.nan


def parse_swaps(text: str) -> tuple[float, ...]:
    """``--spare-swap``: times to swap a spare in, comma-separated (``0,10m``), as :func:`check_swaps` takes them.

    >>> parse_swaps("0,10m,1h30m")
    (0.0, 600.0, 5400.0)
    """
    return check_swaps([seconds(part, "--spare-swap", high=MAX_COST_S) for part in _listed(text, "--spare-swap")])


def check_swaps(values: float | Sequence[float]) -> tuple[float, ...]:
    """Swap times in seconds, each from 0 to 30 days (as ``run`` takes one), none twice; :class:`LimitError`
    naming ``--spare-swap`` otherwise.

    >>> check_swaps(60), check_swaps([0, 600.0])
    ((60.0,), (0.0, 600.0))
    """
    found = tuple(number(value, "--spare-swap", low=0, high=MAX_COST_S) for value in _as_list(values))
    _no_twice(found, "--spare-swap")
    return found


def parse_exclusions(text: str) -> tuple[Exclusion, ...]:
    """``--exclude-after``: exclusion rules, comma-separated, each ``N/DAYS`` or ``none`` (``none,3/7,2/1``).

    >>> parse_exclusions("none, 3/7")
    (None, '3/7')
    """
    return check_exclusions(_listed(text, "--exclude-after"))


def check_exclusions(values: Exclusion | Sequence[Exclusion]) -> tuple[Exclusion, ...]:
    """Exclusion rules as a study takes them: ``N/DAYS`` (a server out for good at its N-th fault within DAYS
    days, as ``run --exclude-after`` takes it) or None (``"none"``), none twice; :class:`LimitError` naming
    ``--exclude-after`` otherwise.

    >>> check_exclusions(None), check_exclusions(["none", " 3/7 "])
    ((None,), (None, '3/7'))
    >>> check_exclusions("3/x")
    Traceback (most recent call last):
    ...
    simcluster.limits.LimitError: --exclude-after '3/x': give N/DAYS (a server out for good at its N-th fault within DAYS days; N ≥ 1, 0 < DAYS ≤ 36,500; e.g. 3/7) or none
    """
    found: list[Exclusion] = []
    for value in _as_list(values):
        text = None if value is None else str(value).strip()
        if text is None or text.lower() == "none":
            found.append(None)
            continue
        try:
            exclusion_rule(text, "--exclude-after")
        except ConfigError:
            raise LimitError(f"--exclude-after {shown(text)}: give N/DAYS (a server out for good at its N-th fault "
                             "within DAYS days; N ≥ 1, 0 < DAYS ≤ 36,500; e.g. 3/7) or none") from None
        found.append(text)
    _no_twice(["none" if v is None else v for v in found], "--exclude-after")
    return tuple(found)


def check_combinations(sizes: int, spares: Sequence[Spares], swaps: Sequence[float],
                       exclusions: Sequence[Exclusion]) -> int:
    """The study's combinations (sizes × spares × swaps × exclusions), each run at every interval: at most
    :data:`MAX_COMBINATIONS`, so that its time stays bounded; :class:`LimitError` naming the options otherwise.

    >>> check_combinations(2, [0, 8], [0.0], [None, "3/7"])
    8
    >>> check_combinations(5, list(range(5)), [0.0, 60.0], list("abcde") + [None])
    Traceback (most recent call last):
    ...
    simcluster.limits.LimitError: --gpus × --spare-nodes × --spare-swap × --exclude-after: at most 200 combinations in one study (each run at every interval), got 5 × 5 × 2 × 6 = 300
    """
    total = sizes * len(spares) * len(swaps) * len(exclusions)
    if total > MAX_COMBINATIONS:
        raise LimitError(f"--gpus × --spare-nodes × --spare-swap × --exclude-after: at most {MAX_COMBINATIONS} "
                         f"combinations in one study (each run at every interval), got {sizes} × {len(spares)} × "
                         f"{len(swaps)} × {len(exclusions)} = {total:,}")
    return total


def mean_interval(values: Sequence[float], confidence: float = CONFIDENCE,
                  bounds: tuple[float, float] = (0.0, 1.0)) -> tuple[float, float]:
    """The confidence interval of the mean of ``values`` (ratios): mean ± t · sd / √n with Student's t
    quantile for n − 1 degrees of freedom, clipped to ``bounds`` ([0, 1] for a ratio) and never on the wrong
    side of the mean; (inf, inf) where a value is infinite (a job that never finished).

    >>> [round(v, 3) for v in mean_interval([0.90, 0.92])]   # t₀.₉₇₅,₁ = 12.7: two runs say little
    [0.783, 1.0]
    >>> mean_interval([0.5, 0.5, 0.5])
    (0.5, 0.5)
    >>> [round(v, 2) for v in mean_interval([2.0, 2.2, 2.4], bounds=(0.0, math.inf))]   # days
    [1.7, 2.7]
    """
    from scipy.stats import t

    data = np.asarray(values, dtype=float)
    mean = float(data.mean())
    if not math.isfinite(mean):
        return mean, mean
    if len(data) < 2:
        return mean, mean
    half = float(t.ppf(0.5 + confidence / 2, len(data) - 1) * data.std(ddof=1) / math.sqrt(len(data)))
    return max(bounds[0], min(mean, mean - half)), min(bounds[1], max(mean, mean + half))


def runs_spread(values: Sequence[float], confidence: float = CONFIDENCE) -> tuple[float, float]:
    """The middle ``confidence`` of the runs' values: their 2.5th and 97.5th percentiles (at 95 %); an
    infinite value (a job that never finished) ranks above every finite one.

    >>> [round(v, 3) for v in runs_spread([0.1 * i for i in range(11)])]
    [0.025, 0.975]
    >>> runs_spread([2.0, 3.0, math.inf])
    (2.05, inf)
    """
    tail = (1 - confidence) / 2
    data = np.asarray(values, dtype=float)
    infinite = ~np.isfinite(data)
    finite = np.where(infinite, 1e300, data)  # (interpolating towards inf gives nan; towards 1e300 a huge number)
    low, high = (float(v) if v < 1e299 else math.inf for v in np.quantile(finite, [tail, 1 - tail]))
    return low, high


def rate_ratios(faults: int, exposure_s: float, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """The exact Poisson (Garwood) interval of a rate counted as ``faults`` in ``exposure_s``, as multiples of
    the rate counted (k / T); (nan, nan) with no fault, whose rate of 0 no multiple widens.

    >>> [round(r, 2) for r in rate_ratios(6, 1e6)]   # six faults: the rate is known to a factor of about 2.6
    [0.37, 2.18]
    """
    if faults <= 0 or exposure_s <= 0:
        return math.nan, math.nan
    low, high = poisson_interval(faults, exposure_s, confidence)
    return low * exposure_s / faults, high * exposure_s / faults


def fault_free_ettr(work: float, interval: float, checkpoint_cost: float) -> float:
    """The ETTR of a job that no fault strikes: its work over its work and its checkpoints (one every
    ``interval`` of progress but after the last stretch).

    >>> round(fault_free_ettr(86_400.0, 3600.0, 60.0), 4)
    0.9843
    """
    checkpoints = max(0, math.ceil(work / interval) - 1)
    return work / (work + checkpoints * checkpoint_cost)


def rate_widened(low: float, high: float, fault_free: float, ratio_low: float, ratio_high: float) -> tuple[float, float]:
    """The ETTR interval ``low``–``high`` widened by a rate known to within ``ratio_low``–``ratio_high`` of the
    rate simulated.  To first order each fault costs the same wall time, so the share of the fault-free ETTR
    E₀ lost to faults, 1 − ETTR / E₀, is proportional to the rate: at r times the rate it is r times as large.
    The low end scales the low end's loss by the high ratio, the high end the high end's by the low ratio;
    clipped to [0, E₀].

    >>> [round(v, 3) for v in rate_widened(0.90, 0.92, 0.98, 0.5, 2.0)]
    [0.82, 0.95]
    """
    if not (math.isfinite(ratio_low) and math.isfinite(ratio_high)):
        return math.nan, math.nan

    def scaled(ettr_value: float, ratio: float) -> float:
        loss = max(0.0, 1.0 - ettr_value / fault_free)
        return min(fault_free, max(0.0, fault_free * (1.0 - ratio * loss)))

    return min(low, scaled(low, ratio_high)), max(high, min(1.0, scaled(high, ratio_low)))


def spares_short(model: RateModel, gpus_per_node: int, nodes: int, spares: int) -> float:
    """The share of a job's faults that find no spare ready, in the long run: each of its nodes + spares servers
    is down a share p = λR / (1 + λR) of the time (λ its fault rate, R the mean repair), independently, and a
    fault of one finds a spare only when fewer than ``spares`` of the others are down (Poisson faults see the
    time average): P(Binomial(nodes + spares − 1, p) ≥ spares).

    >>> model = RateModel.from_mtbf(10 * DAY, 2 * DAY)
    >>> round(spares_short(model, 8, 4, 1), 2), round(spares_short(model, 8, 4, 4), 3)
    (0.52, 0.018)
    """
    from scipy.stats import binom

    rate = model.node_rate(gpus_per_node)
    if spares <= 0 or rate <= 0:
        return 1.0 if spares <= 0 else 0.0
    repair = sum(c.rate * c.repair.mean for c in model.classes) / sum(c.rate for c in model.classes)
    down = rate * repair / (1 + rate * repair)
    return float(binom.sf(spares - 1, nodes + spares - 1, down))


def closed_form_gap(model: FailureModel, gpus_per_node: int, nodes: int, spares: int, exclusion: Exclusion) -> str:
    """Why the closed form (every fault costs the same: the work since the checkpoint, the restart and the swap,
    at exponential times) does not describe a row; "" where it does.

    >>> rates = RateModel.from_mtbf(30 * DAY, 3600.0)
    >>> closed_form_gap(rates, 8, 64, 8, None), closed_form_gap(rates, 8, 64, 0, None)
    ('', 'no spares: a fault waits for its repair')
    >>> closed_form_gap(RateModel.from_mtbf(10 * DAY, 2 * DAY), 8, 4, 1, None)
    'spares run short: 52 % of faults find none ready'
    """
    if not isinstance(model, RateModel):
        return "a replayed log: its faults are not exponential" if isinstance(model, LogReplay) else \
            f"{type(model).__name__}: not an exponential rate model"
    if model.shape != 1.0:
        return f"Weibull times (shape {model.shape:g}): not exponential"
    if exclusion is not None:
        return "exclusion takes servers out"
    if spares <= 0:
        return "no spares: a fault waits for its repair"
    short = spares_short(model, gpus_per_node, nodes, spares)
    if short > SHORT_SPARES:
        return f"spares run short: {100 * short:.2g} % of faults find none ready"
    return ""


@dataclass(frozen=True)
class ReliabilityStudy:
    """The study's table (one row per size, spares, swap, exclusion and interval: ``gpus, nodes, spare_nodes,
    spare_share`` (the share of the job's nodes given, NaN for a count), ``spare_swap_s, exclude_after`` (empty:
    none), ``interval_s, daly, replicas, ettr_mean, ettr_low, ettr_high`` (the mean's 95 % confidence interval),
    ``ettr_sd, ettr_runs_low, ettr_runs_high`` (the middle 95 % of the runs), ``ettr_rate_low, ettr_rate_high``
    (with the rate's uncertainty; NaN for a rate given by hand), ``wall_days_mean, wall_days_low, wall_days_high,
    wall_days_runs_low, wall_days_runs_high`` (the job's wall-clock in days, its mean's CI and the runs' middle
    95 %), ``unfinished_runs, unfinished_why, closed_form, closed_form_why`` (empty where it applies),
    ``interruptions_mean, offsets_days`` (each replica's offset into a replayed log, in seed order)), each run's
    ``runs`` (``gpus, spare_nodes, spare_swap_s, exclude_after, interval_s, daly, seed, offset_s, ettr,
    wall_days, interruptions, error``) and what it was run with."""

    table: pd.DataFrame
    settings: dict[str, Any]
    runs: pd.DataFrame = field(default_factory=pd.DataFrame)

    def pictures(self) -> dict[str, bytes]:
        """``reliability.png`` (ETTR against interval) and, with several spares values,
        ``reliability_spares.png`` (ETTR and wall days against spares, at each size's best interval)."""
        found = {"reliability.png": ettr_picture(self.table, self.settings)}
        if spares_vary(self.table):
            found["reliability_spares.png"] = spares_picture(self.table)
        return found

    def write(self, out: str | os.PathLike[str], page: bool = False) -> list[Path]:
        """``reliability.csv`` and the :meth:`pictures` into folder ``out`` (made if needed); with ``page``,
        ``reliability.html`` too, the one page that opens with the answer (:func:`html_page`)."""
        from simcluster.atomic import atomic_write

        folder = Path(out)
        folder.mkdir(parents=True, exist_ok=True)
        pictures = self.pictures()
        files = {"reliability.csv": self.table.to_csv(index=False).encode(), **pictures}
        if page:
            files["reliability.html"] = html_page(self.table, self.settings, pictures).encode()
        if "reliability_spares.png" not in files:  # an earlier study's picture would contradict this one
            (folder / "reliability_spares.png").unlink(missing_ok=True)
        return [atomic_write(folder / name, _writer(data)) for name, data in files.items()]


def _writer(data: bytes) -> Callable[[BinaryIO], object]:
    """What :func:`~simcluster.atomic.atomic_write` calls to write ``data``."""
    return lambda handle: handle.write(data)


def replica_offsets(model: FailureModel, faults_offset: Offset | None, replicas: int) -> list[float] | None:
    """Each replica's offset into a replayed log (seed ``i`` the ``i``-th): drawn from the seed for ``random``
    (the default, ``None``, for a log), else the one offset given; None for a model that is not a log (an
    offset given for one is refused, as ``run`` refuses it)."""
    offset = RANDOM if faults_offset is None and isinstance(model, LogReplay) else offset_of(faults_offset or 0.0)
    if not isinstance(model, LogReplay):
        if offset:
            raise LimitError(f"--faults-offset applies to a replayed fault log, not to {type(model).__name__}")
        return None
    span = model.log.span_s
    if offset == RANDOM:
        return [random_offset(span, seed) for seed in range(replicas)]
    return [check_offset(float(offset), span, faults_offset)] * replicas


@dataclass(frozen=True)
class Cell:
    """One row's place in the study: a job size, a spares, swap and exclusion combination, an interval."""

    gpus: int
    nodes: int
    spares: Spares  # as given: a count, or a share "2%"
    spare_nodes: int  # the count at this size
    swap: float
    exclusion: Exclusion
    interval: float
    daly: bool


@dataclass(frozen=True)
class Replica:
    """One run: its ETTR (0 where the job never finished), wall-clock (inf), interruptions, offset into the
    log (None: not a log) and, where it never finished, the engine's reason."""

    ettr: float
    wall_s: float
    interruptions: int
    offset: float | None
    error: str = ""


def reliability_study(gpus: Sequence[int], intervals: Sequence[float], faults: str | FailureModel,
                      replicas: int = 20, work: float = 2 * 86_400.0, checkpoint_cost: float = 60.0,
                      restart_cost: float = 300.0, spare_nodes: Spares | Sequence[Spares] = 8,
                      spare_swap: float | Sequence[float] = 0.0, gpus_per_node: int = 8,
                      faults_offset: Offset | None = None, reading: LogReading | None = None,
                      exclude_after: Exclusion | Sequence[Exclusion] = None) -> ReliabilityStudy:
    """Run the study (module docstring).  ``faults``: what ``--faults`` takes, or a failure model;
    ``spare_nodes``, ``spare_swap``, ``exclude_after``: one value or a list of them (an axis: every combination
    is run); ``faults_offset``: ``"random"`` (the default for a log), or seconds into it for every replica;
    ``reading``: how a log is read (its fleet, open faults, columns).  Refuses in words, naming the option, what
    ``lucid-sim reliability`` refuses (sizes, intervals, costs, replicas, spares, combinations)."""
    sizes = check_sizes(gpus, gpus_per_node)
    intervals = check_intervals(intervals)
    replicas = int(number(replicas, "--replicas", low=2, high=MAX_REPLICAS, whole=True))
    work = number(work, "--work", above=0, high=MAX_WORK_S)
    for value, name in ((checkpoint_cost, "--checkpoint-cost"), (restart_cost, "--restart-cost")):
        number(value, name, low=0, high=MAX_COST_S)
    axes = check_spares(spare_nodes), check_swaps(spare_swap), check_exclusions(exclude_after)
    check_combinations(len(sizes), *axes)
    model = failure_model(faults, reading=reading) if isinstance(faults, (str, os.PathLike)) else faults
    offsets = replica_offsets(model, faults_offset, replicas)
    evidence = rate_evidence(faults if isinstance(faults, (str, os.PathLike)) else model, reading)
    ratios = rate_ratios(*evidence) if evidence is not None else (math.nan, math.nan)
    rate = node_rate(model, gpus_per_node)
    rows: list[dict[str, Any]] = []
    runs: list[dict[str, Any]] = []
    for size, (spares, swap, exclusion) in itertools.product(sizes, itertools.product(*axes)):
        nodes = size // gpus_per_node
        count = spare_count(spares, nodes)
        gap = closed_form_gap(model, gpus_per_node, nodes, count, exclusion)
        daly = daly_interval(checkpoint_cost, rate * nodes) if rate > 0 and checkpoint_cost > 0 else None
        for interval in (*intervals, *([daly] if daly else [])):
            cell = Cell(size, nodes, spares, count, swap, exclusion, float(interval), interval is daly)
            config = SimConfig(checkpoint_interval=cell.interval, checkpoint_cost=checkpoint_cost,
                               restart_cost=restart_cost, spare_nodes=count, spare_swap=swap,
                               exclude_after=exclusion, gpus_per_node=gpus_per_node)
            found = [_one_run(config, model, offsets, seed, size, nodes, work) for seed in range(replicas)]
            runs.extend(_run_record(cell, seed, replica) for seed, replica in enumerate(found))
            closed = (ettr(cell.interval, checkpoint_cost, rate * nodes, restart_cost + swap, work=work, exposed=True)
                      if not gap else math.nan)
            rows.append(_row(cell, found, ratios, fault_free_ettr(work, cell.interval, checkpoint_cost), closed, gap))
    settings = {"work_s": work, "checkpoint_cost_s": checkpoint_cost, "restart_cost_s": restart_cost,
                "spare_nodes": _one_or_list(axes[0]), "spare_swap_s": _one_or_list(axes[1]),
                "exclude_after": _one_or_list(axes[2]), "combinations": len(sizes) * math.prod(map(len, axes)),
                "replicas": replicas, "gpus_per_node": gpus_per_node, "node_rate_per_day": rate * DAY,
                "faults": str(faults) if not hasattr(faults, "outages") else type(faults).__name__,
                **_offset_settings(faults_offset, offsets), **_rate_settings(evidence, ratios, rate)}
    return ReliabilityStudy(pd.DataFrame(rows), settings, pd.DataFrame(runs))


def _one_or_list(values: tuple[Any, ...]) -> Any:
    """An axis in the settings: its one value where one was given (as the study of one value has it), else the
    list."""
    return values[0] if len(values) == 1 else list(values)


def _one_run(config: SimConfig, model: FailureModel, offsets: list[float] | None, seed: int, size: int, nodes: int,
             work: float) -> Replica:
    """One replica; a job that the engine finds can never finish (:class:`NoProgressError`: at no moment are
    enough of its servers up, or it is evicted again and again without progress) has ETTR 0 and no end."""
    offset = offsets[seed] if offsets is not None else None
    seeded = model.at(offset) if offset is not None and isinstance(model, LogReplay) else model
    job = Job(index=0, job_id="0", vc="job", gpu_num=size, submit_time=0, duration=work)
    sim = Simulation([job], resolve_run(config=replace(config, seed=seed), cluster={"job": nodes}, faults=seeded))
    try:
        sim.run()
    except NoProgressError as stopped:  # (what was found: its advice names run's options, not the study's)
        return Replica(0.0, math.inf, _interruptions(sim, job), offset, stopped.finding)
    wall = job.end_time - job.start_time
    return Replica(work / wall, wall, _interruptions(sim, job), offset)


def _interruptions(sim: Simulation, job: Job) -> int:
    costs = sim.reliability.costs.get(job) if sim.reliability is not None else None
    return costs.interruptions if costs is not None else 0


def _run_record(cell: Cell, seed: int, replica: Replica) -> dict[str, Any]:
    return {"gpus": cell.gpus, "spare_nodes": cell.spare_nodes, "spare_swap_s": cell.swap,
            "exclude_after": cell.exclusion, "interval_s": cell.interval, "daly": cell.daly, "seed": seed,
            "offset_s": replica.offset, "ettr": replica.ettr, "wall_days": replica.wall_s / DAY,
            "interruptions": replica.interruptions, "error": replica.error}


def unfinished_reason(error: str) -> str:
    """Why a job never finished, in a few words, from the engine's :class:`NoProgressError` (whose advice names
    ``run``'s options, not all the study's).

    >>> unfinished_reason("… can never start: … from t=9 s on; --exclude-after takes 3 server(s) out for good …")
    'the exclusion rule takes out more servers than the spares replace'
    >>> unfinished_reason("… can practically never finish (t=0 s): each of its runs must last 2,160 s …")
    'a run between its checkpoints practically never outlasts the faults of its nodes'
    """
    if not error:
        return ""
    if "can practically never finish" in error:
        return "a run between its checkpoints practically never outlasts the faults of its nodes"
    if "--exclude-after takes" in error:
        return "the exclusion rule takes out more servers than the spares replace"
    if "times by faults under" in error:  # (the horizon passed while it was stopped again and again)
        return "evicted again and again without its checkpointed progress advancing"
    if "can never start" in error or "horizon" in error:
        return "at no moment are all its nodes up: too few spares"
    return "evicted again and again without its checkpointed progress advancing"


def _row(cell: Cell, found: list[Replica], ratios: tuple[float, float], fault_free: float, closed: float,
         gap: str) -> dict[str, Any]:
    """One row of the table from its replicas (the class docstring names the columns)."""
    values = [r.ettr for r in found]
    days = [r.wall_s / DAY for r in found]
    low, high = mean_interval(values)
    errors = [r.error for r in found if r.error]
    # (each fault costing about the same wall time, the propagation's premise, fails where a job never finishes)
    rate_low, rate_high = rate_widened(low, high, fault_free, *ratios) if not errors else (math.nan, math.nan)
    offsets = [r.offset for r in found if r.offset is not None]
    return {"gpus": cell.gpus, "nodes": cell.nodes, "spare_nodes": cell.spare_nodes,
            "spare_share": spare_share(cell.spares), "spare_swap_s": cell.swap, "exclude_after": cell.exclusion,
            "interval_s": cell.interval, "daly": cell.daly, "replicas": len(values),
            "ettr_mean": float(np.mean(values)), "ettr_low": low, "ettr_high": high,
            "ettr_sd": float(np.std(values, ddof=1)), **dict(zip(("ettr_runs_low", "ettr_runs_high"),
                                                                 runs_spread(values), strict=True)),
            "ettr_rate_low": rate_low, "ettr_rate_high": rate_high, "wall_days_mean": float(np.mean(days)),
            **dict(zip(("wall_days_low", "wall_days_high"), mean_interval(days, bounds=(0.0, math.inf)), strict=True)),
            **dict(zip(("wall_days_runs_low", "wall_days_runs_high"), runs_spread(days), strict=True)),
            "unfinished_runs": len(errors), "unfinished_why": unfinished_reason(errors[0] if errors else ""),
            "closed_form": closed, "closed_form_why": gap,
            "interruptions_mean": float(np.mean([r.interruptions for r in found])),
            "offsets_days": ";".join(f"{o / DAY:.2f}" for o in offsets)}


def _offset_settings(given: Offset | None, offsets: list[float] | None) -> dict[str, Any]:
    """The offsets into a replayed log, for the study's settings (None where the model is not a log)."""
    if offsets is None:
        return {"faults_offset": None, "offsets_days": None}
    mode = RANDOM if given is None else offset_of(given)
    return {"faults_offset": mode, "offsets_days": [round(o / DAY, 4) for o in offsets]}


def _rate_settings(evidence: tuple[int, float] | None, ratios: tuple[float, float], rate: float) -> dict[str, Any]:
    """What the rate was counted from and its 95 % interval per node-day (None for a rate given by hand)."""
    if evidence is None:
        return {"rate_faults": None, "rate_exposure_server_days": None, "node_rate_interval_per_day": None}
    interval = None if math.isnan(ratios[0]) else [rate * DAY * r for r in ratios]
    return {"rate_faults": evidence[0], "rate_exposure_server_days": evidence[1] / DAY,
            "node_rate_interval_per_day": interval}


AXIS_KEYS = {"_spares": "spares", "_swap": "swap", "_exclusion": "exclusion"}  # a combination's keys, as words


def time_words(seconds_: float) -> str:
    """A time as a reader says it.

    >>> time_words(0), time_words(1047.6), time_words(5400), time_words(54 * DAY)
    ('0 s', '17.5 min', '1.5 h', '54 d')
    """
    for unit, size in (("d", DAY), ("h", 3600.0), ("min", 60.0)):
        if seconds_ >= size:
            return f"{seconds_ / size:.3g} {unit}"
    return f"{seconds_:.3g} s"


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value)) or value == ""


def spares_key(count: int, share: float) -> str:
    """A spares value as given: a share (``2 %``) or a count (``8``)."""
    return f"{100 * share:g} %" if not _missing(share) else f"{int(count):,}"


def keyed_table(table: pd.DataFrame) -> pd.DataFrame:
    """The table with its combination's keys as words (columns of :data:`AXIS_KEYS`), from the study or its
    ``reliability.csv`` read back."""
    keyed = table.copy()
    keyed["_spares"] = [spares_key(n, s) for n, s in zip(table["spare_nodes"], table["spare_share"], strict=True)]
    swaps = set(table["spare_swap_s"])
    words = {swap: time_words(swap) for swap in swaps}
    if len(set(words.values())) < len(swaps):  # (two swaps alike in words: each in seconds, so none merge)
        words = {swap: f"{swap:g} s" for swap in swaps}
    keyed["_swap"] = [words[swap] for swap in table["spare_swap_s"]]
    keyed["_exclusion"] = ["none" if _missing(e) else str(e) for e in table["exclude_after"]]
    return keyed


def varying(table: pd.DataFrame) -> list[str]:
    """The keys of :data:`AXIS_KEYS` that take several values in the (keyed) table."""
    return [key for key in AXIS_KEYS if table[key].nunique() > 1]


def spares_vary(table: pd.DataFrame) -> bool:
    """Whether the study has several spares values (what ``reliability_spares.png`` draws)."""
    return "_spares" in varying(keyed_table(table))


def best_rows(table: pd.DataFrame) -> pd.DataFrame:
    """Per size and combination, the row of its best interval (the highest mean ETTR, Daly's included; the
    first of equals), keyed (:func:`keyed_table`)."""
    keyed = keyed_table(table)
    best = keyed.groupby(["gpus", *AXIS_KEYS], sort=False)["ettr_mean"].idxmax()
    return keyed.loc[best.to_numpy()]


@dataclass(frozen=True)
class SizeAnswer:
    """What the study says for one job size: its best setting in one sentence, then how the interval and each
    axis that varies move ETTR and wall-clock."""

    gpus: int
    nodes: int
    headline: str
    details: tuple[str, ...]


def answers(table: pd.DataFrame) -> list[SizeAnswer]:
    """The answer for each size, in words (the page's and the command's first lines).

    >>> rows = pd.DataFrame({"gpus": 8, "nodes": 1, "spare_nodes": [0, 0, 2, 2], "spare_share": math.nan,
    ...     "spare_swap_s": 0.0, "exclude_after": None, "interval_s": [1800.0, 3600.0] * 2, "daly": False,
    ...     "replicas": 5, "ettr_mean": [0.80, 0.78, 0.95, 0.96], "ettr_low": [0.78, 0.76, 0.94, 0.95],
    ...     "ettr_high": [0.82, 0.80, 0.96, 0.97], "ettr_runs_low": 0.7, "ettr_runs_high": 0.99,
    ...     "wall_days_mean": [2.5, 2.56, 2.1, 2.08], "wall_days_runs_low": 2.0, "wall_days_runs_high": 2.9,
    ...     "interruptions_mean": 4.0, "unfinished_runs": 0, "unfinished_why": ""})
    >>> found = answers(rows)[0]
    >>> print(found.headline)
    Best: checkpoint every 1 h with 2 spares, swap 0 s, no exclusion: ETTR 0.960 (runs 0.700–0.990), 2.08 days of wall-clock (runs 2.00–2.90), 4 interruptions (1.9 a day).
    >>> print(found.details[1])
    Spares, each at its best interval, against none (ETTR 0.800, 2.50 days): 2 spares: ETTR 0.960, 2.08 days: +16.0 ETTR points, -0.42 days (told apart: the means' 95 % CIs do not overlap).
    """
    keyed, best = keyed_table(table), best_rows(table)
    axes = varying(keyed)
    found = []
    for size, rows in best.groupby("gpus", sort=True):
        top = rows.loc[rows["ettr_mean"].idxmax()]
        details = [_interval_line(keyed, top)]
        details += [_axis_line(rows, top, axis) for axis in axes]
        found.append(SizeAnswer(int(size), int(top["nodes"]), _headline(top), tuple(details)))
    return found


def _spares_words(row: pd.Series) -> str:
    """``no spares``, ``8 spares``, ``41 spares (2 %)``."""
    count = int(row["spare_nodes"])
    share = f" ({row['_spares']})" if "%" in row["_spares"] else ""
    return f"no spares{share}" if count == 0 else f"{count:,} spare{'s' if count > 1 else ''}{share}"


def _setting_words(row: pd.Series) -> str:
    spares = _spares_words(row)
    exclusion = "no exclusion" if row["_exclusion"] == "none" else f"exclusion {row['_exclusion']}"
    return f"{spares}, swap {row['_swap']}, {exclusion}"


def _interval_words(row: pd.Series) -> str:
    return time_words(row["interval_s"]) + (" (Daly's interval)" if bool(row["daly"]) else "")


def _figure(value: float) -> str:
    """A figure of days to about three digits, trailing zeros kept: 2.08, 60.8, 291, 1,204."""
    if not math.isfinite(value):
        return "∞"
    return f"{value:,.0f}" if value >= 100 else f"{value:.1f}" if value >= 10 else f"{value:.2f}"


def _days(value: float) -> str:
    return "never finishes" if not math.isfinite(value) else f"{_figure(value)} days"


def _unfinished(row: pd.Series) -> str:
    if not row.get("unfinished_runs", 0):
        return ""
    return f"; in {int(row['unfinished_runs'])} of {int(row['replicas'])} runs it never finishes ({row['unfinished_why']})"


def _headline(top: pd.Series) -> str:
    if top["ettr_mean"] <= 0:
        return f"Under every setting studied the job never finishes ({top['unfinished_why']})."
    wall = top["wall_days_mean"]
    per_day = (f" ({top['interruptions_mean'] / wall:.2g} a day)" if math.isfinite(wall) and wall > 0 else "")
    spread = (f" (runs {_figure(top['wall_days_runs_low'])}–{_figure(top['wall_days_runs_high'])})"
              if math.isfinite(top["wall_days_runs_high"]) else "")
    return (f"Best: checkpoint every {_interval_words(top)} with {_setting_words(top)}: ETTR {top['ettr_mean']:.3f} "
            f"(runs {top['ettr_runs_low']:.3f}–{top['ettr_runs_high']:.3f}), {_days(wall)} of wall-clock{spread}, "
            f"{top['interruptions_mean']:,.3g} interruption{'' if top['interruptions_mean'] == 1 else 's'}{per_day}"
            f"{_unfinished(top)}.")


def _interval_line(keyed: pd.DataFrame, top: pd.Series) -> str:
    """Every interval at the best's combination, against the best."""
    same = keyed[(keyed["gpus"] == top["gpus"]) & np.logical_and.reduce(
        [keyed[key] == top[key] for key in AXIS_KEYS])].sort_values("interval_s")
    parts = []
    for _, row in same.iterrows():
        star = " ★" if row.name == top.name else ""
        parts.append(f"{_interval_words(row)}: ETTR {row['ettr_mean']:.3f}, {_wall_words(row)}{star}")
    return f"Checkpoint interval, at {_setting_words(top)}: " + "; ".join(parts) + "."


REFERENCES = {"_spares": ({"0", "0 %"}, "none"), "_swap": ({"0 s"}, "an instant swap"),
              "_exclusion": ({"none"}, "no exclusion")}


def _axis_line(best: pd.DataFrame, top: pd.Series, axis: str) -> str:
    """What each value of ``axis`` buys against its reference (none, where given; else its first value), each at
    its best interval, the other axes held at the best's."""
    others = [key for key in AXIS_KEYS if key != axis]
    rows = best[np.logical_and.reduce([best[key] == top[key] for key in others])]
    zero, word = REFERENCES[axis]
    given = rows[rows[axis].isin(zero)]
    reference = given.iloc[0] if len(given) else rows.iloc[0]
    against = (word if len(given) else f"the first given ({reference[axis]})") + \
        f" (ETTR {reference['ettr_mean']:.3f}, {_wall_words(reference)})"
    held = ", ".join(f"{AXIS_KEYS[key]} {top[key]}" for key in others if best[key].nunique() > 1)
    parts = [_effect(row, reference, axis) for _, row in rows.iterrows() if row.name != reference.name]
    name = AXIS_KEYS[axis].capitalize()
    return f"{name}, each at its best interval{f' ({held})' if held else ''}, against {against}: " + "; ".join(parts) + "."


def _effect(row: pd.Series, reference: pd.Series, axis: str) -> str:
    """One value of ``axis`` against the reference: ETTR points and days, and whether the means are told apart."""
    name = {"_spares": _spares_words(row), "_swap": f"swap {row['_swap']}",
            "_exclusion": "no exclusion" if row["_exclusion"] == "none" else f"exclusion {row['_exclusion']}"}[axis]
    wall, before = row["wall_days_mean"], reference["wall_days_mean"]
    days = f", {wall - before:+.2f} days" if math.isfinite(wall) and math.isfinite(before) else ""
    apart = row["ettr_low"] > reference["ettr_high"] or row["ettr_high"] < reference["ettr_low"]
    told = ("told apart: the means' 95 % CIs do not overlap" if apart else
            f"not told apart at {int(row['replicas'])} replicas: the means' 95 % CIs overlap")
    return (f"{name}: ETTR {row['ettr_mean']:.3f}, {_wall_words(row)}: "
            f"{100 * (row['ettr_mean'] - reference['ettr_mean']):+.1f} ETTR points{days} ({told})")


def _wall_words(row: pd.Series) -> str:
    """The mean wall-clock in days, or in how many runs the job never finished."""
    stuck, replicas = int(row.get("unfinished_runs", 0)), int(row["replicas"])
    if stuck == 0 or math.isfinite(row["wall_days_mean"]):
        return _days(row["wall_days_mean"])
    return "never finishes" if stuck >= replicas else f"never finishes in {stuck} of {replicas} runs"


def ettr_picture(table: pd.DataFrame, settings: dict[str, Any]) -> bytes:
    """ETTR against the checkpoint interval (log scale), one line per job size: the mean's 95 % confidence
    interval as a band, the middle 95 % of the runs as a fainter one, Daly's interval marked with a star; with
    several spares, swap or exclusion values, one panel per size and a line per combination."""
    from simcluster.canvas import new_figure, png_bytes

    keyed = keyed_table(table)
    axes = varying(keyed)
    sizes = list(keyed.groupby("gpus", sort=True))
    if axes:  # a panel per size, a line per combination
        fig, panels = _panels(len(sizes))
        for panel, (size, rows) in zip(panels, sizes, strict=True):
            for i, (key, combo) in enumerate(rows.groupby(axes, sort=False)):
                values = key if isinstance(key, tuple) else (key,)
                name = ", ".join(f"{AXIS_KEYS[a]} {v}" for a, v in zip(axes, values, strict=True))
                _ettr_line(panel, combo, name, f"C{i % 10}", runs=False)
            panel.set_title(f"{size:,} GPUs", fontsize="small", loc="left")
    else:  # one panel, a line per size
        fig, ax = new_figure()
        panels = [ax]
        for size, rows in sizes:
            _ettr_line(ax, rows, f"{size:,} GPUs", None)
    from matplotlib.ticker import LogFormatter

    for panel in panels:  # minutes as written (30, 100), not 3×10¹; minor ticks labelled over a short range
        panel.set_xscale("log")
        panel.xaxis.set_major_formatter(LogFormatter())
        panel.xaxis.set_minor_formatter(LogFormatter(labelOnlyBase=False, minor_thresholds=(2, 0.5)))
        panel.grid(True, which="both", alpha=0.3)
    panels[-1].set_xlabel("checkpoint interval (min, log scale)")
    panels[0].set_ylabel("ETTR (productive ÷ wall time)")
    panels[0].legend(loc="best" if axes else "lower left", fontsize="small")
    runs = "" if axes else " and, fainter, the middle 95 % of the runs"
    what = (f"ETTR against checkpoint interval: mean, its 95 % confidence interval (t){runs}; ★ Daly's interval; "
            f"dotted: closed form where it applies (δ {settings['checkpoint_cost_s']:g} s, R "
            f"{settings['restart_cost_s']:g} s)")
    if axes:
        fig.suptitle(what, fontsize="small", wrap=True)
    else:
        panels[0].set_title(what, fontsize="small", wrap=True)
    return png_bytes(fig)


def _panels(count: int) -> tuple[Any, list[Any]]:
    """A figure of the canvas's size with ``count`` panels in a grid (at most 3 across), sharing their axes."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from simcluster.canvas import DPI, HEIGHT, WIDTH

    fig = Figure(figsize=(WIDTH / DPI, HEIGHT / DPI), dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    across = min(count, 3)
    grid = fig.subplots(-(-count // across), across, squeeze=False, sharex=True, sharey=True)
    cells = list(grid.flat)
    for unused in cells[count:]:
        unused.set_visible(False)
    return fig, cells[:count]


def _ettr_line(ax: Any, rows: pd.DataFrame, name: str, colour: str | None, runs: bool = True) -> None:
    """One size's (or combination's) ETTR against interval, the mean's CI as a band (and the runs' middle 95 % as
    a fainter one, with ``runs``), its closed form and Daly's star."""
    grid = rows[~rows["daly"].astype(bool)].sort_values("interval_s")
    minutes = grid["interval_s"] / 60
    line = ax.plot(minutes, grid["ettr_mean"], marker="o", label=name, color=colour)[0]
    ax.fill_between(minutes, grid["ettr_low"], grid["ettr_high"], color=line.get_color(), alpha=0.3)
    if runs:
        ax.fill_between(minutes, grid["ettr_runs_low"], grid["ettr_runs_high"], color=line.get_color(), alpha=0.08)
    if grid["closed_form"].notna().any():
        ax.plot(minutes, grid["closed_form"], linestyle=":", color=line.get_color())
    for _, daly in rows[rows["daly"].astype(bool)].iterrows():
        ax.plot([daly["interval_s"] / 60], [daly["ettr_mean"]], marker="*", markersize=14, color=line.get_color(),
                markeredgecolor="black")


def spares_picture(table: pd.DataFrame) -> bytes:
    """ETTR and wall-clock days against spares, at each size's (and other combination's) best interval
    (:func:`simcluster.experiments.plots.against_spares`)."""
    from simcluster.experiments.plots import against_spares

    best = best_rows(table)
    others = [key for key in varying(best) if key != "_spares"]
    lines: dict[str, list[tuple[str, tuple[float, float, float], tuple[float, float, float]]]] = {}
    for _, row in best.iterrows():
        name = ", ".join([f"{int(row['gpus']):,} GPUs", *(f"{AXIS_KEYS[k]} {row[k]}" for k in others)])
        lines.setdefault(name, []).append((row["_spares"], (row["ettr_mean"], row["ettr_runs_low"],
                                                            row["ettr_runs_high"]),
                                           (row["wall_days_mean"], row["wall_days_runs_low"],
                                            row["wall_days_runs_high"])))
    return against_spares(lines, "ETTR and wall-clock against hot spares, each at its best checkpoint interval: mean "
                                 "and the middle 95 % of the runs (▲ at the top: the job never finished in some run)")


PAGE_STYLE = """body { font-family: system-ui, sans-serif; margin: 2em; max-width: 70em; }
p.headline { font-size: 1.1em; } table { border-collapse: collapse; font-size: 0.85em; }
td, th { border: 1px solid #ccc; padding: 0.2em 0.5em; text-align: right; } th { text-align: left; }
img { max-width: 100%; } .note { color: #555; font-size: 0.9em; }"""


def html_page(table: pd.DataFrame, settings: dict[str, Any], pictures: dict[str, bytes]) -> str:
    """``reliability.html``: one page that opens with the answer for each size (:func:`answers`), then every
    combination at its best interval, the pictures and how the study was run."""
    import base64

    said = "\n".join(f"<h3>{a.gpus:,} GPUs ({a.nodes:,} nodes)</h3>\n<p class=\"headline\"><b>{html.escape(a.headline)}"
                     "</b></p>\n<ul>" + "".join(f"<li>{html.escape(d)}</li>" for d in a.details) + "</ul>"
                     for a in answers(table))
    figures = "\n".join(f'<figure><img alt="{name}" src="data:image/png;base64,{base64.b64encode(data).decode()}">'
                        f"<figcaption>{name}</figcaption></figure>" for name, data in pictures.items())
    return f"""<!doctype html>
<html><head><meta charset="utf-8"><title>Reliability study</title><style>{PAGE_STYLE}</style></head><body>
<h1>Reliability: ETTR and wall-clock of one training job</h1>
<p class="note">{html.escape(_run_words(settings))}</p>
<h2 id="answer">The answer</h2>
{said}
<h2 id="best">Each combination at its best interval</h2>
{_best_table(table)}
<h2 id="pictures">Pictures</h2>
{figures}
<h2 id="how">How to read it</h2>
<p class="note">{html.escape(INTERVAL_WORDS)} ETTR: the job's work ÷ its wall-clock from start to end; a job that
never finishes counts as ETTR 0. ETTR points: 100 × the difference of two mean ETTRs. Two settings are told apart
where the 95 % confidence intervals of their means do not overlap. All figures per row are in reliability.csv.</p>
</body></html>
"""


INTERVAL_WORDS = ("runs: the middle 95 % of the runs (2.5th–97.5th percentile of the replicas), what one training "
                  "run may see, what sweep and report call the 95 % interval over replicas; mean's CI: the 95 % "
                  "confidence interval of the mean, mean ± Student's t · sd / √replicas.")


def _run_words(settings: dict[str, Any]) -> str:
    """How the study was run, in one sentence."""
    offsets = settings.get("offsets_days")
    where = (f"; a replayed log, each replica at its own offset into it ({'drawn from its seed' if settings.get('faults_offset') == RANDOM else 'as given'})"
             if isinstance(offsets, list) else "")
    return (f"One job of {time_words(settings['work_s'])} of work under {settings['faults']} "
            f"(a node fails {settings['node_rate_per_day']:.3g} times a day){where}; {settings['replicas']} replicas "
            f"per row; checkpoints cost {time_words(settings['checkpoint_cost_s'])}, a restart "
            f"{time_words(settings['restart_cost_s'])}; {settings['gpus_per_node']} GPUs a node.")


def _best_table(table: pd.DataFrame) -> str:
    """Every size and combination at its best interval, as an HTML table."""
    head = ("GPUs", "spares", "swap", "exclusion", "best interval", "ETTR", "ETTR runs", "wall days", "wall days runs",
            "interruptions", "never finished")
    cells = []
    for _, row in best_rows(table).iterrows():
        spares = f"{int(row['spare_nodes']):,}" + (f" ({row['_spares']})" if "%" in row["_spares"] else "")
        cells.append((f"{int(row['gpus']):,}", spares, row["_swap"], row["_exclusion"], _interval_words(row),
                      f"{row['ettr_mean']:.3f}", f"{row['ettr_runs_low']:.3f}–{row['ettr_runs_high']:.3f}",
                      _days(row["wall_days_mean"]).removesuffix(" days"),
                      f"{_figure(row['wall_days_runs_low'])}–{_figure(row['wall_days_runs_high'])}",
                      f"{row['interruptions_mean']:,.3g}", f"{int(row['unfinished_runs'])} of {int(row['replicas'])}"))
    body = "\n".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>" for row in cells)
    return ("<table><thead><tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in head) + "</tr></thead><tbody>\n"
            + body + "\n</tbody></table>")
