"""What a synthetic trace's jobs are drawn from: their sizes (GPUs), durations and arrivals.

Each is a short text, the same in ``lucid-sim trace synth --sizes …``, in ``SynthSpec(sizes=…)`` and inside a
sweep's ``synth:…`` spec, so that one spelling names one distribution everywhere:

- sizes: ``venus`` (Venus' GPU counts, 1 to 160), ``pow2:MAX[,decay=D]`` (1, 2, 4 … MAX GPUs, each power
  ``D`` times rarer than the one below), ``SIZE:WEIGHT,SIZE:WEIGHT,…`` (weights normalised) or
  ``trace:PATH`` (the GPU counts of any job log, in their proportions);
- durations: ``venus`` (log-normal 5.7/2.43 s, cut to [1, 1,300,000]),
  ``lognormal:mu=M,sigma=S[,max=X][,grow=G]`` (``grow``: the log-duration added per doubling of GPUs, so
  that large jobs run longer) or ``trace:PATH`` (the durations of a job log);
- arrivals: ``diurnal`` (Venus' daily cycle), ``poisson`` (exponential gaps) or ``bursts:size=K`` (groups
  of K jobs submitted at one instant, the groups a Poisson stream).

>>> values, weights = parse_sizes("pow2:8").table()
>>> values.tolist(), weights.round(3).tolist()
([1, 2, 4, 8], [0.533, 0.267, 0.133, 0.067])
>>> parse_durations("lognormal:mu=5,sigma=1,grow=0.5")
Durations(text='lognormal:mu=5,sigma=1,grow=0.5', mu=5.0, sigma=1.0, max=1300000, grow=0.5, path=None)
>>> parse_arrivals("bursts:size=4")
Arrivals(text='bursts:size=4', kind='bursts', burst=4)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from simcluster.paths import resolve_data
from simcluster.traces.sizing import MAX_GPUS
from simcluster.traces.times import MAX_SECONDS

GPU_COUNTS = {1: 0.565, 2: 0.063, 3: 0.002, 4: 0.069, 6: 0.002, 8: 0.194, 16: 0.022, 24: 0.009,
              32: 0.040, 64: 0.003, 128: 0.017, 160: 0.001}
LOG_DURATION_MEAN, LOG_DURATION_STD, MAX_DURATION = 5.7, 2.43, 1_300_000
# share of submissions in each hour of the day
DIURNAL = [34, 32, 28, 25, 13, 11, 11, 11, 16, 29, 45, 54, 54, 54, 70, 73, 70, 69, 56, 55, 54, 60, 43, 33]
LARGEST_POW2 = 1 << (MAX_GPUS.bit_length() - 1)  # the largest power of two a cluster may hold
MAX_BURST = 1_000_000

SIZE_FORMS = "venus, pow2:MAX[,decay=D], SIZE:WEIGHT,SIZE:WEIGHT,… or trace:PATH"
DURATION_FORMS = "venus, lognormal:mu=M,sigma=S[,max=X][,grow=G] or trace:PATH"
ARRIVAL_FORMS = "diurnal, poisson or bursts:size=K"


@dataclass(frozen=True)
class Sizes:
    """GPUs per job: the sizes and their weights, or the job log they are read from when drawn."""

    text: str
    values: tuple[int, ...] = ()
    weights: tuple[float, ...] = ()
    path: str | None = None  # trace:PATH: values and weights are the log's, read by table()

    @property
    def is_venus(self) -> bool:
        return self.text == "venus"

    def table(self) -> tuple[np.ndarray, np.ndarray]:
        """The sizes and their probabilities (a trace's: its GPU counts in their proportions)."""
        if self.path is None:
            return np.array(self.values), normalise(self.weights)
        counts = trace_frame("sizes", self.path)["gpu_num"].value_counts().sort_index()
        return counts.index.to_numpy(dtype=np.int64), normalise(counts.to_numpy())


@dataclass(frozen=True)
class Durations:
    """Seconds per job: a log-normal (its median growing with the job's GPUs), or a job log's durations."""

    text: str
    mu: float = LOG_DURATION_MEAN
    sigma: float = LOG_DURATION_STD
    max: int = MAX_DURATION
    grow: float = 0.0
    path: str | None = None

    def draw(self, rng: np.random.Generator, gpu: np.ndarray) -> np.ndarray:
        """One whole number of seconds, at least 1, for each job of ``gpu`` GPUs."""
        if self.path is not None:
            seen = trace_frame("durations", self.path)["duration"].to_numpy(dtype=float)
            return np.maximum(rng.choice(seen, size=len(gpu)), 1.0)  # a 0-second job would never run
        # a scalar mean when nothing grows: the very draws of the generator's first version
        mean = self.mu if self.grow == 0 else self.mu + self.grow * np.log2(gpu)
        return np.clip(np.rint(rng.lognormal(mean, self.sigma, len(gpu))), 1, self.max)


@dataclass(frozen=True)
class Arrivals:
    """When jobs are submitted: their instants' order in [0, 1), stretched to whole seconds of a span."""

    text: str
    kind: str  # diurnal | poisson | bursts
    burst: int = 1

    def pattern(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """Sorted positions in [0, 1), one per job; a burst's jobs share one."""
        if self.kind == "bursts":
            instants = np.sort(rng.random(-(-n // self.burst)))
            return np.repeat(instants, self.burst)[:n]
        return np.sort(rng.random(n))  # n uniform points: a Poisson stream given its count

    def times(self, pattern: np.ndarray, span: float) -> np.ndarray:
        """Submit times (whole seconds from the first day's start) when the pattern fills ``span`` seconds."""
        stretched = pattern * span
        return diurnal_times(stretched) if self.kind == "diurnal" else np.floor(stretched)


def parse_sizes(text: str) -> Sizes:
    """``venus``, ``pow2:MAX[,decay=D]``, ``SIZE:WEIGHT,…`` or ``trace:PATH`` (see the module)."""
    text = _text("sizes", text)
    kind, _, rest = text.partition(":")
    if text == "venus":
        return Sizes(text, tuple(GPU_COUNTS), tuple(GPU_COUNTS.values()))
    if kind == "trace":
        return Sizes(text, path=_existing("sizes", text, rest))
    if kind == "pow2":
        return _pow2(text, rest)
    if ":" not in text:
        raise ValueError(f"sizes must be {SIZE_FORMS}, got {text!r}")
    return _weights(text)


def parse_durations(text: str) -> Durations:
    """``venus``, ``lognormal:mu=M,sigma=S[,max=X][,grow=G]`` or ``trace:PATH`` (see the module)."""
    text = _text("durations", text)
    kind, _, rest = text.partition(":")
    if text == "venus":
        return Durations(text)
    if kind == "trace":
        return Durations(text, path=_existing("durations", text, rest))
    if kind != "lognormal":
        raise ValueError(f"durations must be {DURATION_FORMS}, got {text!r}")
    given = _params("durations", text, rest, ("mu", "sigma", "max", "grow"), required=("mu", "sigma"))
    mu = _number("durations", text, "mu", given["mu"], low=-20.0, high=math.log(MAX_SECONDS))
    sigma = _number("durations", text, "sigma", given["sigma"], low=0.0, high=10.0)
    cap = _number("durations", text, "max", given.get("max", str(MAX_DURATION)), low=1, high=MAX_SECONDS - 1,
                  whole=True)
    grow = _number("durations", text, "grow", given.get("grow", "0"), low=-2.0, high=2.0)
    return Durations(text, mu, sigma, int(cap), grow)


def parse_arrivals(text: str) -> Arrivals:
    """``diurnal``, ``poisson`` or ``bursts:size=K`` (see the module)."""
    text = _text("arrivals", text)
    kind, _, rest = text.partition(":")
    if text in ("diurnal", "poisson"):
        return Arrivals(text, text)
    if kind != "bursts":
        raise ValueError(f"arrivals must be {ARRIVAL_FORMS}, got {text!r}")
    given = _params("arrivals", text, rest, ("size",), required=("size",))
    size = _number("arrivals", text, "size", given["size"], low=1, high=MAX_BURST, whole=True)
    return Arrivals(text, "bursts", int(size))


def trace_frame(name: str, path: str) -> pd.DataFrame:
    """The jobs of the job log at ``path`` (a Venus folder, a Philly, ITP or any CSV log simcluster reads)."""
    from simcluster.traces import TraceError, load_trace
    from simcluster.traces.joblog import JobLog

    try:
        trace = load_trace(path, sized=False)
    except (TraceError, ValueError) as exc:
        raise ValueError(f"{name} 'trace:{path}': {exc}") from None
    if not isinstance(trace, JobLog) or len(trace.frame) == 0:
        raise ValueError(f"{name} 'trace:{path}': needs a job log with jobs (GPU counts and durations in "
                         f"seconds), got a {trace.format} trace of {len(trace.frame)} jobs")
    return trace.frame


def diurnal_times(uniform: np.ndarray) -> np.ndarray:
    """Warp uniform times so each day's submissions follow the hourly profile."""
    day, within = np.divmod(uniform, 86400.0)
    cdf = np.concatenate([[0.0], np.cumsum(DIURNAL) / sum(DIURNAL)])
    hours = np.interp(within / 86400.0, cdf, np.arange(25) * 3600.0)
    return np.floor(day * 86400.0 + hours)


def normalise(weights: Any) -> np.ndarray:
    w = np.asarray(weights, dtype=float)
    return w / w.sum()


def _pow2(text: str, rest: str) -> Sizes:
    largest, _, tail = rest.partition(",")
    top = _number("sizes", text, "the largest size", largest, low=1, high=LARGEST_POW2, whole=True)
    if int(top) & (int(top) - 1):
        raise ValueError(f"sizes {text!r}: the largest size must be a power of two, got {largest}")
    given = _params("sizes", text, tail, ("decay",))
    decay = _number("sizes", text, "decay", given.get("decay", "2"), low=0.01, high=1000.0)
    values = tuple(1 << k for k in range(int(top).bit_length()))
    return Sizes(text, values, tuple(decay ** -k for k in range(len(values))))


def _weights(text: str) -> Sizes:
    sizes: dict[int, float] = {}
    for item in text.split(","):
        size, colon, weight = item.partition(":")
        if not colon:
            raise ValueError(f"sizes {text!r}: each item must be SIZE:WEIGHT, got {item!r}")
        gpus = int(_number("sizes", text, "a size", size, low=1, high=MAX_GPUS, whole=True))
        if gpus in sizes:
            raise ValueError(f"sizes {text!r}: the size {gpus} is given twice")
        sizes[gpus] = _number("sizes", text, f"the weight of {gpus}", weight, low=0.0)
    if sum(sizes.values()) <= 0:
        raise ValueError(f"sizes {text!r}: the weights must not all be zero")
    ordered = sorted(sizes)
    return Sizes(text, tuple(ordered), tuple(sizes[g] for g in ordered))


def _text(name: str, text: Any) -> str:
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"{name} must be a non-empty text, got {text!r}")
    return text.strip()


def _existing(name: str, text: str, path: str) -> str:
    if not path:
        raise ValueError(f"{name} {text!r}: trace: needs a path")
    if not resolve_data(path).exists():
        raise ValueError(f"{name} {text!r}: {path}: no such file or directory (nor in the shared data)")
    return path


def _params(name: str, text: str, rest: str, allowed: tuple[str, ...],
            required: tuple[str, ...] = ()) -> dict[str, str]:
    """``key=value,key=value`` → a dict, refusing unknown, repeated and missing keys."""
    given: dict[str, str] = {}
    for item in filter(None, rest.split(",")):
        key, equals, value = item.partition("=")
        if not equals or key not in allowed:
            choices = ", ".join(k + "=…" for k in allowed)
            raise ValueError(f"{name} {text!r}: {item!r} is not one of {choices}")
        if key in given:
            raise ValueError(f"{name} {text!r}: {key} is given twice")
        given[key] = value
    missing = [k for k in required if k not in given]
    if missing:
        raise ValueError(f"{name} {text!r}: missing {', '.join(k + '=…' for k in missing)}")
    return given


def _number(name: str, text: str, what: str, raw: str, low: float | None = None, high: float | None = None,
            whole: bool = False) -> float:
    """``raw`` as a finite number within [low, high] (whole when ``whole``), else a message naming it."""
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"{name} {text!r}: {what} must be a number, got {raw!r}") from None
    if not math.isfinite(value):
        raise ValueError(f"{name} {text!r}: {what} must be finite, got {raw!r}")
    if whole and value != int(value):
        raise ValueError(f"{name} {text!r}: {what} must be a whole number, got {raw!r}")
    if (low is not None and value < low) or (high is not None and value > high):
        bounds = f"from {_shown(low)} to {_shown(high)}" if high is not None else f"at least {_shown(low)}"
        raise ValueError(f"{name} {text!r}: {what} must be {bounds}, got {raw!r}")
    return value


def _shown(bound: float | None) -> str:
    return f"{int(bound):,}" if bound is not None and float(bound).is_integer() else f"{bound:g}"
