"""How fast two jobs run when they share GPUs, answered for any pair, measured or not.

The simulator asks "if job A (on ``a_gpus`` GPUs) and job B share their GPUs, how fast does each
run?" many times, and for workloads, batch sizes and GPU counts that no table measured.  A
:class:`ColocationModel` answers from a single-job table and a pair table in the format of
:mod:`simcluster.colocation.schema` and never fails: when the exact pair was not measured it walks a
fallback chain, from the most specific evidence to the least, and counts which step answered.

Pair speeds (``speed`` = throughput shared / throughput alone, 1.0 = no slowdown) rest on a
*prior* that every step but ``exact`` refines.  From all measured pairs (both orientations), a
configuration's ``own`` speed is its mean speed with anyone and its ``impact`` the mean speed of
its partners; each is shrunk towards its model's mean (and that towards the overall mean ``g``)
by :data:`PRIOR_STRENGTH` pseudo-measurements, so a configuration seen once, or never, leans on its
model.  The prior of A beside B is ``own[A] * impact[B] / g``: A's sensitivity times B's
aggressiveness, relative to a typical pair.  The steps, most specific first:

1. ``exact``: the pair was measured (in either orientation; both orientations, or the two jobs
   of a pair of identical configurations, are averaged, so the answer is symmetric).
2. ``interpolated``: the same model pair with the same datasets was measured with the same AMP
   settings at other batch sizes / GPU counts.  The measured configurations of the model pair
   are points in ``(log2 batchsize1, log2 batchsize2, log2 gpus1, log2 gpus2, amp1, amp2)`` --
   so the other AMP settings count too, one unit away, as far as a doubling of batch size -- and
   the answer is the prior plus a locally weighted linear regression (LOESS) of the measured
   speeds' residuals from the prior: Gaussian weights of bandwidth :data:`BANDWIDTH` (one
   doubling), a ridge penalty :data:`RIDGE` on the slopes so that one or two points, or points on
   a line, still give a well-posed fit.  The query is first moved onto the bounding box of the
   measured points, so residuals are never extrapolated: beyond the measured batch sizes or GPU
   counts the residual at the edge is kept, and the prior carries the rest.  In leave-one-out on
   Lucid's RTX 3090 table (``benchmarks/bench_colocation.py``) this beats nearest-neighbour and
   ``scipy``'s ``LinearNDInterpolator``: the prior explains what the configurations do with
   everyone, the neighbours what is particular to this model pair, and the kernel averages
   measurement noise instead of copying one noisy neighbour.
3. ``model_pair``: the same two models measured only at other settings (AMP, datasets): the
   prior plus the mean residual of all of the model pair's measurements.
4. ``model_average``: the two models were never measured together, but at least one was with
   someone: the prior alone (a model with no pair data counts as typical).
5. ``default``: nothing is known about either model: ``g``, the mean of all measured speeds (a
   typical pair), or :data:`NEUTRAL_SPEED` = 0.5 when the pair table is empty -- time slicing,
   under which sharing neither gains nor loses total throughput, so a scheduler is neither lured
   into nor scared off colocation by a guess.

Every answer is clamped to ``[floor, ceiling]`` (default ``[0.05, 1.0]``), measured ones included:
in the simulator a job never runs faster shared than alone.  Lucid's table holds speeds up to 1.5,
which are noise in the solo baselines, not a real gain; pass ``ceiling=SPEED_MAX`` to get them back.
A speed is never NaN.

Single-job memory (MiB) and GPU utilization (%) follow the same pattern: exact -> the same model
and dataset at other batch sizes (``interpolated``: linear in batch size for memory, in
log2(batch size) for utilization, held at the measured edge for utilization, extended with the
edge slope for memory) -> the model's mean over all its configurations (``model_average``) ->
the table's median, or a constant when the table has none (``default``).  Memory per GPU does
not depend on the GPU count (the batch size is per GPU), so configurations with the same GPU count
are preferred but others are used.

>>> import pandas as pd
>>> from simcluster.colocation.schema import SINGLE_COLUMNS
>>> from simcluster.job import Workload
>>> single = pd.DataFrame(columns=SINGLE_COLUMNS)
>>> pair = pd.DataFrame([dict(model1="A", dataset1="d", batchsize1=32, amp1=0, gpu_num1=1,
...     model2="B", dataset2="d", batchsize2=32, amp2=0, gpu_num2=1, iters_per_s1=1.0,
...     iters_per_s2=1.0, speed1=0.8, speed2=0.6, gpu_util=90.0, gmem_util=None, gmem=None,
...     status="ok", error="")])
>>> model = ColocationModel(single, pair, source="example")
>>> a, b = Workload("A", "d", 32, 0), Workload("B", "d", 32, 0)
>>> model.pair_speeds(b, 1, a, 1)
(0.6, 0.8)
>>> [round(s, 3) for s in model.pair_speeds(Workload("A", "d", 64, 0), 1, b, 1)]  # interpolated
[0.78, 0.618]
>>> [round(s, 3) for s in model.pair_speeds(Workload("C", "d", 32, 0), 1, b, 1)]  # C never shared
[0.744, 0.656]
>>> model.pair_speeds(Workload("C", "d", 32, 0), 1, Workload("D", "d", 32, 0), 1)  # the mean speed
(0.7, 0.7)
>>> model.fallback_counts()
{'exact': 1, 'interpolated': 1, 'model_pair': 0, 'model_average': 1, 'default': 1}
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from simcluster.colocation.schema import (
    STATUS_OK,
    validate_pair_table,
    validate_single_table,
)
from simcluster.job import Workload

__all__ = [
    "BANDWIDTH",
    "CEILING",
    "DEFAULT_MEMORY_MIB",
    "DEFAULT_UTIL",
    "FALLBACK_STEPS",
    "FLOOR",
    "NEUTRAL_SPEED",
    "PRIOR_STRENGTH",
    "RIDGE",
    "ColocationModel",
]

FALLBACK_STEPS: tuple[str, ...] = ("exact", "interpolated", "model_pair", "model_average", "default")
"""The steps of the fallback chain, most specific first (keys of :meth:`ColocationModel.fallback_counts`)."""

FLOOR = 0.05
"""Smallest speed returned: a 20x slowdown; below that the measurement or the guess is not credible."""
CEILING = 1.0
"""Largest speed returned by default: sharing never makes a job faster than running alone."""
NEUTRAL_SPEED = 0.5
"""Default speed when the pair table is empty: time slicing, no gain and no loss from sharing."""
BANDWIDTH = 1.0
"""Gaussian kernel width of the interpolation, in log2 units: one doubling of batch size or GPUs."""
RIDGE = 0.3
"""Ridge penalty on the interpolation's slopes: keeps few or collinear points well-posed."""
PRIOR_STRENGTH = 3.0
"""Pseudo-measurements that pull a configuration's (model's) mean speed towards its model's (all)."""
DEFAULT_MEMORY_MIB = 4096.0
"""Memory of a job when the single table knows nothing at all (a small-to-medium training job)."""
DEFAULT_UTIL = 50.0
"""GPU utilization (%) of a job when the single table knows nothing at all."""
DEFAULT_MEM_UTIL = 30.0
"""GPU memory-bandwidth utilization (%) of a job when the single table knows nothing at all."""

_JobKey = tuple[str, str, int, int, int]  # model, dataset, batchsize, amp, gpus
_GroupKey = tuple[str, str, str, str]  # model1, dataset1, model2, dataset2


@dataclass(frozen=True, slots=True)
class _Group:
    """Measured configurations of one (model, dataset) pair, oriented as the group key."""

    points: np.ndarray  # n x 6: log2 batchsize1, log2 batchsize2, log2 gpus1, log2 gpus2, amp1, amp2
    residuals: np.ndarray  # n x 2: speed1, speed2 minus their priors
    low: np.ndarray  # 6: per-dimension minimum of points
    high: np.ndarray  # 6: per-dimension maximum
    amps: frozenset[tuple[int, int]]  # the (amp1, amp2) settings measured


def _job_key(w: Workload, gpus: int) -> _JobKey:
    if int(w.batchsize) <= 0:
        raise ValueError(f"workload {w}: batch size must be a positive integer, got {w.batchsize!r}")
    if int(gpus) <= 0:
        raise ValueError(f"workload {w}: GPU count must be a positive integer, got {gpus!r}")
    return (str(w.model), str(w.dataset), int(w.batchsize), int(w.amp), int(gpus))


class _Log2(dict[int, float]):
    """log2 of positive integers, memoized (batch sizes and GPU counts repeat endlessly)."""

    def __missing__(self, n: int) -> float:
        value = self[n] = math.log2(n)
        return value


_LOG2 = _Log2()


def _features(a: _JobKey, b: _JobKey) -> tuple[float, ...]:
    return (_LOG2[a[2]], _LOG2[b[2]], _LOG2[a[4]], _LOG2[b[4]], float(a[3]), float(b[3]))


def _clamped(group: _Group, features: tuple[float, ...]) -> tuple[float, ...]:
    """The query moved onto the bounding box of the group's measured points."""
    return tuple(min(max(x, lo), hi) for x, lo, hi in zip(features, group.low.tolist(), group.high.tolist()))


def _loess(group: _Group, q: np.ndarray) -> np.ndarray:
    """Locally weighted ridge regression of both residuals at ``q`` (a query already clamped to the box)."""
    offsets = group.points - q
    distance2 = np.einsum("ij,ij->i", offsets, offsets)
    weights = np.exp(-0.5 * distance2 / BANDWIDTH**2)
    design = np.hstack([np.ones((len(offsets), 1)), offsets])
    weighted = design * weights[:, None]
    normal = design.T @ weighted
    normal[1:, 1:] += RIDGE * np.eye(offsets.shape[1])
    coef = np.linalg.lstsq(normal, weighted.T @ group.residuals, rcond=None)[0]
    intercept = coef[0]
    if not np.all(np.isfinite(intercept)):  # pragma: no cover - weights are positive, kept for safety
        return np.average(group.residuals, axis=0, weights=weights)
    return intercept


class ColocationModel:
    """Pair speeds, solo memory and solo utilization for any jobs, from measured or analytic tables.

    ``single`` and ``pair`` are tables in the schema's format (checked here; rows whose status is
    not ``ok`` are ignored; ``validate=False`` skips the check for tables that already passed it,
    e.g. subsets of one in a leave-one-out loop).  ``source`` says where they came from, for run
    outputs, and ``provenance`` what kind of evidence they are (``kind``: measured, calibrated,
    analytic, public or tables; ``description``: one line for people; anything else that helps);
    ``floor`` and ``ceiling`` bound every speed returned.  ``per_gpu=True`` says the tables describe
    one GPU whatever a job's GPU count (a model whose rule has no GPU count, as the calibrated one):
    every lookup is then made for one GPU.  Answers are cached per key, so repeated lookups cost a
    dictionary access; :meth:`fallback_counts` counts every call by the step that answered it.
    """

    def __init__(
        self,
        single: pd.DataFrame,
        pair: pd.DataFrame,
        *,
        source: str = "in-memory tables",
        provenance: dict[str, Any] | None = None,
        floor: float = FLOOR,
        ceiling: float = CEILING,
        validate: bool = True,
        per_gpu: bool = False,
    ) -> None:
        if not 0.0 < floor <= ceiling:
            raise ValueError(f"need 0 < floor <= ceiling, got floor={floor}, ceiling={ceiling}")
        self.source = source
        self.provenance: dict[str, Any] = dict(provenance) if provenance else {"kind": "tables", "description": source}
        self.floor = float(floor)
        self.ceiling = float(ceiling)
        self.per_gpu = per_gpu
        if validate:
            single = validate_single_table(single, f"single table of {source}")
            pair = validate_pair_table(pair, f"pair table of {source}")
        self.single = single[single["status"] == STATUS_OK]  # the measurements, for models trained on them
        self.pair = pair[pair["status"] == STATUS_OK]
        self._index_pairs(self.pair)
        self._index_single(self.single)
        self._pair_cache: dict[tuple[_JobKey, _JobKey], tuple[tuple[float, float], str]] = {}
        # the same answers keyed by what the simulator passes (interned Workloads and GPU counts), both
        # orientations: a hit skips building and checking the keys, which dominated sharing runs
        self._by_workload: dict[tuple[Workload, int, Workload, int], tuple[tuple[float, float], str]] = {}
        # and by the Workloads' identities (interned per trace): a Workload's dataclass hash is Python code,
        # an id's is not.  The entry holds both Workloads, so their ids stay theirs while it exists
        self._by_identity: dict[tuple[int, int, int, int], tuple[Workload, Workload, tuple[tuple[float, float], str]]] = {}
        self._single_cache: dict[tuple[str, _JobKey], tuple[float, str]] = {}
        self._counts: dict[str, dict[str, int]] = {
            kind: dict.fromkeys(FALLBACK_STEPS, 0) for kind in ("pair", "memory", "util", "mem_util")
        }
        self._pair_counts = self._counts["pair"]
        self._loess_cache: dict[tuple[str, str, str, str, tuple[float, ...]], tuple[float, ...]] = {}

    # ----------------------------------------------------------------- indexes
    def _index_pairs(self, pair: pd.DataFrame) -> None:
        # Plain Python over column lists: building a model must stay cheap (leave-one-out builds
        # one per pair), and per-row pandas or numpy calls would dominate.
        fields = ("model", "dataset", "batchsize", "amp", "gpu_num")
        job1 = zip(*(pair[f"{f}1"].tolist() for f in fields))
        job2 = zip(*(pair[f"{f}2"].tolist() for f in fields))
        sums: dict[tuple[_JobKey, _JobKey], list[float]] = {}
        for (m1, d1, b1, p1, g1), (m2, d2, b2, p2, g2), s1, s2 in zip(
            job1, job2, pair["speed1"].tolist(), pair["speed2"].tolist()
        ):
            a = (str(m1), str(d1), int(b1), int(p1), int(g1))
            b = (str(m2), str(d2), int(b2), int(p2), int(g2))
            for key, x, y in (((a, b), float(s1), float(s2)), ((b, a), float(s2), float(s1))):
                total = sums.setdefault(key, [0.0, 0.0, 0])
                total[0] += x
                total[1] += y
                total[2] += 1
        self._exact: dict[tuple[_JobKey, _JobKey], tuple[float, float]] = {
            key: (t[0] / t[2], t[1] / t[2]) for key, t in sums.items()
        }

        # Prior: per configuration and per model, sums of own speeds and of partners' speeds.
        own_cfg: dict[_JobKey, list[float]] = {}
        impact_cfg: dict[_JobKey, list[float]] = {}
        own_model: dict[str, list[float]] = {}
        impact_model: dict[str, list[float]] = {}
        for (a, b), speeds in self._exact.items():
            _accumulate(own_cfg, a, speeds[0])
            _accumulate(impact_cfg, b, speeds[0])
            _accumulate(own_model, a[0], speeds[0])
            _accumulate(impact_model, b[0], speeds[0])
        n = sum(t[1] for t in own_model.values())
        g = self._typical = sum(t[0] for t in own_model.values()) / n if n else NEUTRAL_SPEED
        k = PRIOR_STRENGTH
        self._own_model = {m: (t[0] + k * g) / (t[1] + k) for m, t in own_model.items()}
        self._impact_model = {m: (t[0] + k * g) / (t[1] + k) for m, t in impact_model.items()}
        self._own_cfg = {c: (t[0] + k * self._own_model[c[0]]) / (t[1] + k) for c, t in own_cfg.items()}
        self._impact_cfg = {
            c: (t[0] + k * self._impact_model[c[0]]) / (t[1] + k) for c, t in impact_cfg.items()
        }

        # Residuals from the prior, grouped by model pair + datasets, and by model pair.
        grouped: dict[_GroupKey, tuple[list[tuple[float, ...]], list[tuple[float, float]]]] = {}
        by_models: dict[tuple[str, str], list[float]] = {}
        for (a, b), speeds in self._exact.items():
            r1, r2 = speeds[0] - self._prior(a, b), speeds[1] - self._prior(b, a)
            points, residuals = grouped.setdefault((a[0], a[1], b[0], b[1]), ([], []))
            points.append(_features(a, b))
            residuals.append((r1, r2))
            total = by_models.setdefault((a[0], b[0]), [0.0, 0.0, 0])
            total[0] += r1
            total[1] += r2
            total[2] += 1
        self._groups: dict[_GroupKey, _Group] = {}
        for group_key, (points, residuals) in grouped.items():
            array = np.array(points)
            self._groups[group_key] = _Group(
                points=array,
                residuals=np.array(residuals),
                low=array.min(axis=0),
                high=array.max(axis=0),
                amps=frozenset((int(p[4]), int(p[5])) for p in points),
            )
        self._model_pairs = {models: (t[0] / t[2], t[1] / t[2]) for models, t in by_models.items()}

    def _prior(self, a: _JobKey, b: _JobKey) -> float:
        """A's prior speed beside B: A's sensitivity times B's aggressiveness, over a typical pair."""
        g = self._typical
        own = self._own_cfg.get(a)
        if own is None:
            own = self._own_model.get(a[0], g)
        impact = self._impact_cfg.get(b)
        if impact is None:
            impact = self._impact_model.get(b[0], g)
        return own * impact / g

    def _index_single(self, single: pd.DataFrame) -> None:
        quantities = ("memory", "util", "mem_util")
        self._single: dict[str, dict[_JobKey, float]] = {q: {} for q in quantities}
        # per quantity, per (model, dataset): rows of (batchsize, amp, gpus, value)
        self._single_models: dict[str, dict[tuple[str, str], list[tuple[int, int, int, float]]]] = {
            q: defaultdict(list) for q in quantities
        }
        self._single_model_mean: dict[str, dict[str, float]] = {q: {} for q in quantities}
        self._single_default: dict[str, float] = {}
        for quantity, column, fallback in (
            ("memory", "gmem", DEFAULT_MEMORY_MIB),
            ("util", "gpu_util", DEFAULT_UTIL),
            ("mem_util", "gmem_util", DEFAULT_MEM_UTIL),
        ):
            rows = single[["model", "dataset", "batchsize", "amp", "gpu_num", column]].dropna()
            per_model: dict[str, list[float]] = defaultdict(list)
            for model, dataset, bs, amp, gpus, value in rows.itertuples(index=False, name=None):
                key = (str(model), str(dataset), int(bs), int(amp), int(gpus))
                self._single[quantity][key] = float(value)
                self._single_models[quantity][(key[0], key[1])].append((key[2], key[3], key[4], float(value)))
                per_model[key[0]].append(float(value))
            self._single_model_mean[quantity] = {m: float(np.mean(v)) for m, v in per_model.items()}
            values = rows[column].to_numpy(dtype=float)
            self._single_default[quantity] = float(np.median(values)) if len(values) else fallback

    # ----------------------------------------------------------------- pair speeds
    def pair_speeds(self, a: Workload, a_gpus: int, b: Workload, b_gpus: int) -> tuple[float, float]:
        """Normalized speeds ``(speed of a, speed of b)`` when a and b share GPUs; never fails.

        Symmetric: ``pair_speeds(b, nb, a, na)`` is the same answer swapped.  Raises ValueError
        only for a non-positive batch size or GPU count (a caller's bug, not missing data).
        """
        hit: tuple[tuple[float, float], str] | None  # (a declaration only: no code)
        known = self._by_identity.get((id(a), a_gpus, id(b), b_gpus))
        if known is not None and known[0] is a and known[1] is b:
            hit = known[2]
            self._pair_counts[hit[1]] += 1
            return hit[0]
        hit = self._by_workload.get((a, a_gpus, b, b_gpus))
        if hit is None:
            ka, kb = self._key(a, a_gpus), self._key(b, b_gpus)
            swapped = kb < ka
            key = (kb, ka) if swapped else (ka, kb)
            cached = self._pair_cache.get(key)
            if cached is None:
                raw, step = self._pair_lookup(*key)
                clamped = (self._clamp(raw[0]), self._clamp(raw[1]))
                cached = self._pair_cache[key] = (clamped, step)
            (s1, s2), step = cached
            forward, backward = ((s2, s1), (s1, s2)) if swapped else ((s1, s2), (s2, s1))
            hit = self._by_workload[(a, a_gpus, b, b_gpus)] = (forward, step)
            self._by_workload[(b, b_gpus, a, a_gpus)] = (backward, step)
        self._by_identity[(id(a), a_gpus, id(b), b_gpus)] = (a, b, hit)
        self._pair_counts[hit[1]] += 1
        return hit[0]

    def measured_pair_speeds(self, a: Workload, a_gpus: int, b: Workload, b_gpus: int) -> tuple[float, float] | None:
        """The speeds of a pair this table holds (either orientation, clamped as every answer is); None for
        any other pair.  Not counted: a model answering from this one's measurements counts its own answers."""
        measured = self._exact.get((self._key(a, a_gpus), self._key(b, b_gpus)))
        return None if measured is None else (self._clamp(measured[0]), self._clamp(measured[1]))

    def measured_single(self, quantity: str, w: Workload, gpus: int) -> float | None:
        """``quantity`` ("memory", "util" or "mem_util") of a job configuration this table holds; None for any
        other.  Not counted, as :meth:`measured_pair_speeds`."""
        return self._single[quantity].get(self._key(w, gpus))

    def answered_by(self, quantity: str = "pair") -> dict[str, int]:
        """Lookups of ``quantity`` by the model that answered them: all by this one (its provenance's kind)."""
        return {self.provenance.get("kind", "tables"): sum(self.fallback_counts(quantity).values())}

    def _key(self, w: Workload, gpus: int) -> _JobKey:
        key = _job_key(w, gpus)  # checks the GPU count even where it is then ignored
        return (*key[:4], 1) if self.per_gpu else key

    def slowdowns(self, a: Workload, a_gpus: int, b: Workload, b_gpus: int) -> tuple[float, float]:
        """Slowdown factors ``xi = 1 / speed`` of a and b when sharing (>= 1 with the default ceiling)."""
        s1, s2 = self.pair_speeds(a, a_gpus, b, b_gpus)
        return 1.0 / s1, 1.0 / s2

    def _clamp(self, speed: float) -> float:
        if not math.isfinite(speed):  # pragma: no cover - every step yields finite numbers
            speed = self._typical
        return min(self.ceiling, max(self.floor, float(speed)))

    def _pair_lookup(self, a: _JobKey, b: _JobKey) -> tuple[tuple[float, float], str]:
        measured = self._exact.get((a, b))
        if measured is not None:
            return measured, "exact"
        prior = (self._prior(a, b), self._prior(b, a))
        group = self._groups.get((a[0], a[1], b[0], b[1]))
        if group is not None and (a[3], b[3]) in group.amps:
            # many queries clamp to one point (every GPU count beyond the measured ones): fit each once
            at = (a[0], a[1], b[0], b[1], _clamped(group, _features(a, b)))
            fitted = self._loess_cache.get(at)
            if fitted is None:
                fitted = self._loess_cache[at] = tuple(float(r) for r in _loess(group, np.array(at[4])))
            r1, r2 = fitted
            if a == b:  # identical jobs: identical speeds
                r1 = r2 = (r1 + r2) / 2
            return (prior[0] + float(r1), prior[1] + float(r2)), "interpolated"
        residual = self._model_pairs.get((a[0], b[0]))
        if residual is not None:
            if a == b:
                residual = ((residual[0] + residual[1]) / 2,) * 2
            return (prior[0] + residual[0], prior[1] + residual[1]), "model_pair"
        if a[0] in self._own_model or b[0] in self._own_model:
            return prior, "model_average"
        return (self._typical, self._typical), "default"

    # ----------------------------------------------------------------- single jobs
    def memory_mib(self, w: Workload, gpus: int) -> float:
        """GPU memory (MiB, per GPU) of ``w`` running alone on ``gpus`` GPUs; never fails."""
        return self._single_value("memory", self._key(w, gpus))

    def solo_util(self, w: Workload, gpus: int) -> float:
        """Mean GPU utilization (%) of ``w`` running alone on ``gpus`` GPUs; never fails."""
        return self._single_value("util", self._key(w, gpus))

    def solo_mem_util(self, w: Workload, gpus: int) -> float:
        """Mean GPU memory(-bandwidth) utilization (%) of ``w`` running alone on ``gpus`` GPUs; never fails."""
        return self._single_value("mem_util", self._key(w, gpus))

    def _single_value(self, quantity: str, key: _JobKey) -> float:
        cached = self._single_cache.get((quantity, key))
        if cached is None:
            cached = self._single_cache[(quantity, key)] = self._single_lookup(quantity, key)
        value, step = cached
        self._counts[quantity][step] += 1
        return value

    def _single_lookup(self, quantity: str, key: _JobKey) -> tuple[float, str]:
        measured = self._single[quantity].get(key)
        if measured is not None:
            return measured, "exact"
        rows = self._single_models[quantity].get((key[0], key[1]))
        if rows:
            _model, _dataset, bs, amp, gpus = key
            chosen = _prefer(rows, lambda r: r[1] == amp and r[2] == gpus, lambda r: r[1] == amp)
            if quantity == "memory":
                value = _along_batch(chosen, bs, log=False, extend=True)
                value = max(value, 0.5 * min(r[3] for r in chosen))
            else:
                value = min(100.0, max(0.0, _along_batch(chosen, bs, log=True, extend=False)))
            return value, "interpolated"
        model_mean = self._single_model_mean[quantity].get(key[0])
        if model_mean is not None:
            return model_mean, "model_average"
        return self._single_default[quantity], "default"

    # ----------------------------------------------------------------- bookkeeping
    def fallback_counts(self, quantity: str = "pair") -> dict[str, int]:
        """How many calls each fallback step answered: ``quantity`` is "pair", "memory", "util" or "mem_util"."""
        if quantity not in self._counts:
            raise ValueError(f"unknown quantity {quantity!r}; expected one of {', '.join(self._counts)}")
        return dict(self._counts[quantity])

    def reset_counts(self) -> None:
        """Zero the fallback counters (the caches stay)."""
        for counts in self._counts.values():
            for step in counts:
                counts[step] = 0

    def __repr__(self) -> str:
        return (
            f"ColocationModel(source={self.source!r}, oriented_pairs={len(self._exact)}, "
            f"floor={self.floor}, ceiling={self.ceiling})"
        )


def _accumulate(table: dict[Any, list[float]], key: Any, value: float) -> None:
    """Add ``value`` to the running [sum, count] of ``key``."""
    total = table.setdefault(key, [0.0, 0])
    total[0] += value
    total[1] += 1


def _prefer(
    rows: list[tuple[int, int, int, float]], *conditions: object
) -> list[tuple[int, int, int, float]]:
    """The rows meeting the first condition that any row meets; all rows if none does."""
    for condition in conditions:
        subset = [r for r in rows if condition(r)]  # type: ignore[operator]
        if subset:
            return subset
    return rows


def _along_batch(
    rows: Iterable[tuple[int, int, int, float]], batchsize: int, *, log: bool, extend: bool
) -> float:
    """Piecewise-linear value at ``batchsize`` through the rows' (batch size -> mean value) points.

    Inside the measured range: linear interpolation.  Outside: the edge value, or with
    ``extend`` the edge segment's slope continued (never decreasing with batch size).
    """
    by_batch: dict[int, list[float]] = defaultdict(list)
    for bs, _amp, _gpus, value in rows:
        by_batch[bs].append(value)
    batches = sorted(by_batch)
    xs = np.array([math.log2(b) if log else float(b) for b in batches])
    ys = np.array([float(np.mean(by_batch[b])) for b in batches])
    x = math.log2(batchsize) if log else float(batchsize)
    if len(xs) == 1:
        return float(ys[0])
    if xs[0] <= x <= xs[-1] or not extend:
        return float(np.interp(x, xs, ys))
    if x < xs[0]:
        slope = max(0.0, (ys[1] - ys[0]) / (xs[1] - xs[0]))
        return float(ys[0] + slope * (x - xs[0]))
    slope = max(0.0, (ys[-1] - ys[-2]) / (xs[-1] - xs[-2]))
    return float(ys[-1] + slope * (x - xs[-1]))
