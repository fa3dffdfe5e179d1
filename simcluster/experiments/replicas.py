"""Replicas: the same experiment on perturbed copies of a fixed trace, and what their spread says.

One trace gives one number per policy; whether a difference would survive another week of arrivals
is a question about the numbers other, equally likely traces would give.  A replica is such a trace,
made from the one we have by a named perturbation (``--perturb``), drawn from a generator seeded by
(``--seed``, replica index) alone, so every policy sees the very same replicas (common random
numbers) and a sweep gives the same figures on every run and backend:

* ``bootstrap`` — resample the trace's days with replacement, each drawn day keeping all its jobs and
  their times of day (a block bootstrap, blocks of ``block`` seconds, 1 day by default); or, with
  ``by=user``, resample its users, each drawn user keeping all their jobs.  A day drawn twice appears
  twice, its jobs' ids suffixed ``#2``.
* ``jitter`` — shift each arrival by a normal amount of standard deviation ``arrival`` seconds
  (60 by default) and scale each duration by a log-normal factor of median 1 and shape ``sigma``
  (0.1 by default): how much the figures move when the trace's measurements are a little off.
* ``seeds`` — the trace as it is, the run's seed (and a synthetic trace's) drawn per replica: the
  spread of a stochastic policy or generator.

Options follow the name: ``bootstrap:by=user``, ``bootstrap:block=3600``, ``jitter:arrival=300,sigma=0.2``.

Each figure's replicas give its mean, standard deviation and a 95 % percentile interval (the 2.5th
to 97.5th percentile of the replica values); two configurations run on the same replicas give the
paired difference per replica, whose interval says whether one is faster: only when it excludes 0.
docs/uncertainty.md gives the method's assumptions and sources.

>>> import pandas as pd
>>> frame = pd.DataFrame({"job_id": ["a", "b", "c"], "user": ["u", "u", "v"], "vc": "x", "gpu_num": 1,
...                       "submit_time": [100, 90000, 180000], "duration": [10, 20, 30]})
>>> copy = resample_days(frame, np.random.default_rng(0), 86400.0)
>>> copy["job_id"].tolist(), copy["submit_time"].tolist()
(['c', 'b', 'b#2'], [7200, 90000, 176400])
>>> spread = interval(np.arange(1, 101))
>>> spread.mean, round(spread.low, 3), round(spread.high, 3), spread.n
(50.5, 3.475, 97.525, 100)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd

from simcluster.config import SimConfig
from simcluster.limits import MAX_BLOCKS, LimitError, number, shown
from simcluster.traces.base import Trace

PERTURBATIONS = ("bootstrap", "jitter", "seeds")
LEVEL = 0.95
DAY = 86400.0
FEWEST = 20  # fewer replicas than this: the 95 % interval's ends rest on one or two values each


class PerturbationError(ValueError):
    """A ``--perturb`` that names no perturbation, or an option it does not take."""


@dataclass(frozen=True)
class Perturbation:
    """A named perturbation and its options (see the module's docstring)."""

    kind: str
    by: str = "day"  # bootstrap: day or user
    block: float = DAY  # bootstrap by day: seconds per block
    arrival: float = 60.0  # jitter: standard deviation of the arrival shift, seconds
    sigma: float = 0.1  # jitter: shape of the log-normal duration factor

    def describe(self) -> str:
        if self.kind == "bootstrap":
            return ("bootstrap of users" if self.by == "user"
                    else f"bootstrap of {'days' if self.block == DAY else f'{self.block:g}-second blocks'}")
        if self.kind == "jitter":
            return f"jitter (arrivals ± N(0, {self.arrival:g} s), durations × LogNormal(0, {self.sigma:g}))"
        return "seeds"


_OPTIONS: dict[str, dict[str, type]] = {"bootstrap": {"by": str, "block": float},
                                        "jitter": {"arrival": float, "sigma": float}, "seeds": {}}
# the range of each number (docs/uncertainty.md): a block of a minute to the bound of a trace's times; arrivals
# moved by up to that bound; durations scaled by LogNormal(0, σ ≤ 3), whose 99.9th percentile is 10,000×
_RANGES = {"block": (60.0, 1e9), "arrival": (0.0, 1e9), "sigma": (0.0, 3.0)}


def parse_perturbation(text: str) -> Perturbation:
    """``NAME[:key=value,…]`` → a :class:`Perturbation`.

    >>> parse_perturbation("jitter:sigma=0.2")
    Perturbation(kind='jitter', by='day', block=86400.0, arrival=60.0, sigma=0.2)
    """
    name, _, rest = text.strip().partition(":")
    if name not in PERTURBATIONS:
        raise PerturbationError(f"--perturb must be one of {', '.join(PERTURBATIONS)} (options after a colon, e.g. "
                                f"bootstrap:by=user, jitter:sigma=0.2), got {shown(text)}")
    values: dict[str, Any] = {}
    for item in filter(None, (p.strip() for p in rest.split(","))):
        key, sep, value = item.partition("=")
        kind = _OPTIONS[name].get(key.strip())
        if not sep or kind is None:
            takes = ", ".join(_OPTIONS[name]) or "no options"
            raise PerturbationError(f"--perturb {shown(text)}: {name} takes {takes}; got {shown(item)}")
        if kind is str:
            values[key.strip()] = value.strip()
            continue
        low, high = _RANGES[key.strip()]
        try:
            values[key.strip()] = number(value, f"--perturb {shown(text)}: {key.strip()}", low=low, high=high)
        except LimitError as exc:
            raise PerturbationError(str(exc)) from None
    found = Perturbation(name, **values)
    if found.by not in ("day", "user"):
        raise PerturbationError(f"--perturb {shown(text)}: by must be day or user")
    return found


def replica_rng(seed: int, replica: int) -> np.random.Generator:
    """The generator of replica ``replica`` under ``--seed seed``: the same for every policy and process."""
    return np.random.default_rng([seed, replica])


def replica_seed(seed: int, replica: int) -> int:
    """The run seed of a ``seeds`` replica (a synthetic trace's too): distinct per replica, fixed by ``seed``."""
    return int(np.random.SeedSequence([seed, replica]).generate_state(1)[0] % 2**31)


def replica_config(config: SimConfig, perturbation: Perturbation, replica: int) -> SimConfig:
    """The settings a replica runs with: ``seeds`` draws the run's seed; the others keep it."""
    if perturbation.kind != "seeds":
        return config
    return replace(config, seed=replica_seed(config.seed, replica))


def perturb_trace(trace: Trace, perturbation: Perturbation, replica: int,
                  seed: int) -> Trace:
    """Replica ``replica`` of ``trace`` (the trace itself for ``seeds``)."""
    if perturbation.kind == "seeds":
        return trace
    rng = replica_rng(seed, replica)
    frame = trace.frame
    if perturbation.kind == "bootstrap":
        if perturbation.by == "user":
            if "user" not in frame or frame["user"].nunique() < 2:
                raise PerturbationError(f"{trace.source}: bootstrap:by=user needs a user column with several users")
            frame = resample_users(frame, rng)
        else:
            frame = resample_days(frame, rng, perturbation.block)
    else:
        frame = jitter(frame, rng, perturbation.arrival, perturbation.sigma,
                       "total_steps" if trace.heterogeneous else "duration")
    return replace(trace, frame=frame.reset_index(drop=True))  # type: ignore[type-var]  # (every loader's is a dataclass)


def resample_days(frame: pd.DataFrame, rng: np.random.Generator, block: float) -> pd.DataFrame:
    """The blocks (days) of the trace drawn with replacement: the k-th drawn block fills slot k, its jobs
    keeping their offsets within it.  As many blocks as the trace spans, empty ones included."""
    submit = frame["submit_time"].to_numpy(dtype=float)
    start = np.floor(submit.min() / block) * block
    blocks = (submit.max() - start) // block + 1
    if blocks > MAX_BLOCKS:
        raise PerturbationError(f"the trace spans {blocks:,.0f} blocks of {block:g} s, more than the limit of "
                                f"{MAX_BLOCKS:,} a replica draws: give a longer block (bootstrap:block=SECONDS)")
    day = ((submit - start) // block).astype(np.int64)
    days = int(day.max()) + 1
    drawn = rng.integers(days, size=days)
    copies: dict[int, int] = {}
    pieces = []
    for slot, source in enumerate(drawn.tolist()):
        rows = frame[day == source]
        if rows.empty:
            continue
        copies[source] = copies.get(source, 0) + 1
        rows = rows.copy()
        shifted = rows["submit_time"] + (slot - source) * block
        rows["submit_time"] = shifted.astype(frame["submit_time"].dtype)
        if copies[source] > 1:
            rows["job_id"] = rows["job_id"].astype(str) + f"#{copies[source]}"
        pieces.append(rows)
    if not pieces:  # every draw an empty block: keep one job, so a replica always runs
        pieces.append(frame.iloc[:1])
    return pd.concat(pieces).sort_values("submit_time", kind="stable")


def resample_users(frame: pd.DataFrame, rng: np.random.Generator) -> pd.DataFrame:
    """The trace's users drawn with replacement, each drawn user with all their jobs (a second copy renamed
    ``user#2``, its jobs ``id#2``)."""
    users = pd.unique(frame["user"])
    drawn = rng.integers(len(users), size=len(users))
    copies: dict[int, int] = {}
    pieces = []
    for index in drawn.tolist():
        copies[index] = copies.get(index, 0) + 1
        rows = frame[frame["user"] == users[index]].copy()
        if copies[index] > 1:
            rows["user"] = f"{users[index]}#{copies[index]}"
            rows["job_id"] = rows["job_id"].astype(str) + f"#{copies[index]}"
        pieces.append(rows)
    return pd.concat(pieces).sort_values("submit_time", kind="stable")


def jitter(frame: pd.DataFrame, rng: np.random.Generator, arrival: float, sigma: float,
           length: str = "duration") -> pd.DataFrame:
    """Arrivals shifted by N(0, ``arrival``) seconds (never before the trace's first), lengths (``length``:
    seconds or iterations) scaled by LogNormal(0, ``sigma``), both kept whole where they were."""
    out = frame.copy()
    submit = frame["submit_time"].to_numpy(dtype=float)
    moved = np.maximum(submit + rng.normal(0.0, arrival, len(frame)), submit.min())
    work = frame[length].to_numpy(dtype=float) * rng.lognormal(0.0, sigma, len(frame))
    whole_times = pd.api.types.is_integer_dtype(frame["submit_time"])
    out["submit_time"] = np.floor(moved).astype(np.int64) if whole_times else moved
    if pd.api.types.is_integer_dtype(frame[length]):
        out[length] = np.maximum(np.rint(work), np.minimum(frame[length].to_numpy(), 1)).astype(np.int64)
    else:
        out[length] = np.maximum(work, 1.0)
    return out.sort_values("submit_time", kind="stable")


# --- statistics ------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Interval:
    """A figure over replicas: mean, standard deviation, the 95 % percentile interval, how many replicas."""

    mean: float
    sd: float
    low: float
    high: float
    n: int

    def excludes_zero(self) -> bool:
        return self.n >= 2 and (self.low > 0 or self.high < 0)


def interval(values: Sequence[float] | np.ndarray, level: float = LEVEL) -> Interval:
    """The replicas' mean, sd (n − 1) and percentile interval (NaN values left out)."""
    finite = np.asarray(values, dtype=float)
    finite = finite[np.isfinite(finite)]
    if not len(finite):
        return Interval(np.nan, np.nan, np.nan, np.nan, 0)
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(finite, [tail, 100 - tail])
    sd = float(finite.std(ddof=1)) if len(finite) > 1 else 0.0
    return Interval(float(finite.mean()), sd, float(low), float(high), len(finite))


def paired(first: Mapping[Any, float], second: Mapping[Any, float], level: float = LEVEL) -> Interval:
    """The interval of ``first − second`` over the replicas both have (paired by replica)."""
    shared = [k for k in first if k in second]
    return interval([first[k] - second[k] for k in shared], level)


def verdict(first: str, second: str, difference: Interval, figure: str = "avg JCT") -> str:
    """What the paired difference (``first − second`` of a time figure) lets one say.

    >>> verdict("srtf", "fifo", Interval(-120.0, 40.0, -200.0, -50.0, 20))
    'srtf is faster than fifo: avg JCT lower by 120 s (95 % interval 50 to 200 s lower; 20 paired replicas)'
    >>> verdict("srtf", "fifo", Interval(-20.0, 40.0, -90.0, 30.0, 20))
    'srtf and fifo: no difference in avg JCT can be told (mean -20 s, 95 % interval -90 to 30 s includes 0; 20 paired replicas)'
    """
    if difference.n < 2:
        return f"{first} and {second}: fewer than 2 paired replicas, no interval"
    replicas = f"{difference.n} paired replicas" + (f", fewer than {FEWEST}: a rough interval"
                                                    if difference.n < FEWEST else "")
    if difference.excludes_zero():
        faster, slower = (first, second) if difference.mean < 0 else (second, first)
        low, high = sorted((abs(difference.low), abs(difference.high)))
        return (f"{faster} is faster than {slower}: {figure} lower by {abs(difference.mean):,.0f} s (95 % interval "
                f"{low:,.0f} to {high:,.0f} s lower; {replicas})")
    return (f"{first} and {second}: no difference in {figure} can be told (mean {difference.mean:,.0f} s, 95 % "
            f"interval {difference.low:,.0f} to {difference.high:,.0f} s includes 0; {replicas})")


def compare(groups: Mapping[str, Mapping[Any, float]], figure: str = "avg JCT",
            pairs: Sequence[tuple[str, str]] | None = None) -> list[tuple[str, str, Interval, str]]:
    """Paired differences between groups (label → replica → figure) that share replicas: every pair in the
    order given, or ``pairs``."""
    labels = list(groups)
    wanted = pairs if pairs is not None else [(a, b) for i, a in enumerate(labels) for b in labels[i + 1:]]
    found = []
    for a, b in wanted:
        difference = paired(groups[a], groups[b])
        if difference.n:
            found.append((a, b, difference, verdict(a, b, difference, figure)))
    return found


# --- a sweep's replicas, summed up -----------------------------------------------------------------------------

SUMMED = ("avg_jct", "p99_jct", "avg_queue", "makespan", "gpu_utilization")
ETTR = ("ettr_mean", "ettr_gpu_weighted")  # summed too where runs have them (a reliability option)
_RELIABILITY = ("ettr_mean", "ettr_gpu_weighted", "interruptions")  # runs.csv's (runs.RELIABILITY_FIGURES)
_NOT_CONFIGURATION = {"run_id", "replica", "status", "error", "notes", "sim_cpu_seconds", "load_cpu_seconds",
                      "wall_seconds"}


@dataclass
class ReplicaSummary:
    """Per configuration (label), each figure's interval over its replicas; and the paired differences of avg JCT."""

    intervals: dict[str, dict[str, Interval]]
    differences: list[tuple[str, str, Interval, str]]
    perturbation: str

    def frame(self) -> pd.DataFrame:
        """One row per configuration and figure: mean, sd, low, high, n."""
        rows = [{"configuration": label, "figure": name, **vars(found)}
                for label, figures in self.intervals.items() for name, found in figures.items()]
        return pd.DataFrame(rows, columns=["configuration", "figure", "mean", "sd", "low", "high", "n"])

    def differences_frame(self) -> pd.DataFrame:
        rows = [{"first": a, "second": b, "figure": "avg_jct", **vars(d), "verdict": text}
                for a, b, d, text in self.differences]
        return pd.DataFrame(rows, columns=["first", "second", "figure", "mean", "sd", "low", "high", "n", "verdict"])


def summarize_rows(rows: Sequence[Mapping[str, Any]], figures: Sequence[str] = SUMMED) -> ReplicaSummary | None:
    """The replica summary of a sweep's rows (runs.csv), None when none of them is a replica.  Runs are one
    configuration when every parameter but the replica (and, under ``seeds``, the seed) is equal.  Rows with
    ETTR figures (runs given a reliability option) have theirs summed too (:data:`ETTR`)."""
    rows = [r for r in rows if r.get("replica") is not None and r.get("status", "ok") == "ok"
            and not (isinstance(r.get("replica"), float) and np.isnan(r["replica"]))]
    if not rows:
        return None
    if any(np.isfinite(_number(r.get("ettr_mean"))) for r in rows):
        figures = [*figures, *(name for name in ETTR if name not in figures)]
    ignored = _NOT_CONFIGURATION | set(figures) | set(_RELIABILITY) | {"jobs", "p50_jct", "p99_queue", "preemptions", "restarts",
                                                   "shared_gpu_fraction", "jain_users", "rho_mean", "rho_p99",
                                                   "rho_above_1", "unfinished_jobs"}
    if all(str(r.get("perturb", "")).startswith("seeds") for r in rows):
        ignored.add("seed")
    keys = [k for k in rows[0] if k not in ignored]
    varying = [k for k in keys if len({str(r.get(k)) for r in rows}) > 1]
    shown = [k for k in varying if k != "policy"]
    groups: dict[str, dict[Any, Mapping[str, Any]]] = {}
    for r in rows:
        label = " ".join([str(r.get("policy"))] + [f"{k}={r.get(k)}" for k in shown])
        groups.setdefault(label, {})[int(r["replica"])] = r
    intervals = {label: {name: interval([_number(r.get(name)) for r in runs.values()]) for name in figures}
                 for label, runs in groups.items()}
    by_replica = {label: {i: _number(r.get("avg_jct")) for i, r in runs.items()} for label, runs in groups.items()}
    return ReplicaSummary(intervals, compare(by_replica), str(rows[0].get("perturb")))


def _number(value: Any) -> float:
    return np.nan if value is None or value == "" else float(value)
