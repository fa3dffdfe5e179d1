"""Failure models from parameters: each node fails at a rate (per node, or per GPU × its GPUs), after
exponential or Weibull times, and is repaired after a fixed or drawn time.  Seeded and deterministic.

A model gives a cluster's :class:`Outages`: every node's ``(down_at, up_at, class)`` over a horizon, as one
stream in time order (what an engine consumes with one process) or per node.  Nothing is done per node that
never fails: with exponential times the cluster's failures are drawn as one superposed Poisson process of rate
``nodes × rate`` and each lands on a node drawn uniformly; one that lands on a node already down is dropped
(thinning: a node fails only while it is up, and memorylessness makes this exact).  With Weibull times
(shape ≠ 1: not memoryless) each node is a renewal process of its own; the first failures of all nodes are
drawn in one vectorised step, and only the nodes whose first failure falls within the horizon go on.
A node's time to failure counts from its last repair; by default (``start="stationary"``) the clock at time 0
is that of a fleet long in service (the first time is the renewal process's forward recurrence time), so
that a Weibull fleet does not all fail at once at the start; ``start="new"`` starts every node new.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Literal, NamedTuple, Protocol

import numpy as np

from simcluster.limits import LimitError, number

MAX_NODES = 10_000_000
MAX_HORIZON_S = 100 * 365 * 86_400.0
MAX_OUTAGES = 50_000_000  # outages materialised at once (by_node); a stream is lazy and has no bound
# below shape 0.1 the gaps' coefficient of variation passes 400, so a fleet's faults over any horizon swing from
# none to several times their mean (Γ(1 + 1/k) overflows below 1/171); LANL's fit 0.7-0.8 (Schroeder & Gibson 2006)
MIN_SHAPE, MAX_SHAPE = 0.1, 100.0
MAX_SIGMA = 20.0  # σ of a log-normal repair's logarithm: its mean, e^(σ²/2) × the median, stays finite
_BATCH = 1024


class Outage(NamedTuple):
    """Node ``node`` is down from ``down_at`` to ``up_at`` (seconds) for a fault of class ``cls``."""

    node: int
    down_at: float
    up_at: float
    cls: str


class Repair:
    """A repair time: fixed, log-normal (median and σ of its logarithm) or drawn from recorded times."""

    def __init__(self, kind: Literal["fixed", "lognormal", "empirical"], seconds: float = 0.0, sigma: float = 0.0,
                 samples: Sequence[float] = ()) -> None:
        if kind == "fixed":
            seconds = number(seconds, "repair time (s)", low=0, high=MAX_HORIZON_S)
        elif kind == "lognormal":
            seconds = number(seconds, "log-normal repair median (s)", above=0, high=MAX_HORIZON_S)
            sigma = number(sigma, "log-normal repair sigma", low=0, high=MAX_SIGMA)
        elif kind == "empirical":
            samples = tuple(number(s, "empirical repair time (s)", low=0, high=MAX_HORIZON_S) for s in samples)
            if not samples:
                raise LimitError("an empirical repair needs at least one recorded repair time")
        else:
            raise LimitError(f"repair must be fixed, lognormal or empirical, got {kind!r}")
        self.kind, self.seconds, self.sigma = kind, float(seconds), float(sigma)
        self.samples = np.asarray(samples, dtype=float)

    @classmethod
    def fixed(cls, seconds: float) -> Repair:
        return cls("fixed", seconds)

    @classmethod
    def lognormal(cls, median_s: float, sigma: float) -> Repair:
        return cls("lognormal", median_s, sigma)

    @classmethod
    def empirical(cls, samples: Sequence[float]) -> Repair:
        return cls("empirical", samples=samples)

    def draw(self, rng: np.random.Generator) -> float:
        if self.kind == "fixed":
            return self.seconds
        if self.kind == "lognormal":
            return float(self.seconds * math.exp(self.sigma * rng.standard_normal()))
        return float(self.samples[rng.integers(len(self.samples))])

    @property
    def mean(self) -> float:
        if self.kind == "fixed":
            return self.seconds
        if self.kind == "lognormal":
            return self.seconds * math.exp(self.sigma ** 2 / 2)
        return float(self.samples.mean())

    def __repr__(self) -> str:
        if self.kind == "fixed":
            return f"Repair.fixed({self.seconds:g})"
        if self.kind == "lognormal":
            return f"Repair.lognormal({self.seconds:g}, {self.sigma:g})"
        return f"Repair.empirical(<{len(self.samples)} times>)"


@dataclass(frozen=True)
class FaultClass:
    """Faults of one class: ``rate`` per second per node (or per GPU, as the model's ``per`` says)."""

    name: str
    rate: float
    repair: Repair


class Outages:
    """A cluster's outages over ``[0, horizon_s)``: :meth:`stream` in time order, :meth:`node` per node.
    A node's outages never overlap.  Iterating again gives the same outages (the stream restarts from its
    seed)."""

    def __init__(self, nodes: int, horizon_s: float) -> None:
        self.nodes = int(number(nodes, "nodes", low=1, high=MAX_NODES, whole=True))
        self.horizon_s = number(horizon_s, "horizon (s)", above=0, high=MAX_HORIZON_S)
        self._by_node: dict[int, list[Outage]] | None = None

    def stream(self) -> Iterator[Outage]:
        raise NotImplementedError

    def __iter__(self) -> Iterator[Outage]:
        return self.stream()

    def by_node(self) -> dict[int, list[Outage]]:
        """Every failing node's outages (materialised once; nodes that never fail are absent)."""
        if self._by_node is None:
            found: dict[int, list[Outage]] = {}
            for count, outage in enumerate(self.stream()):
                if count >= MAX_OUTAGES:
                    raise LimitError(f"more than {MAX_OUTAGES:,} outages within the horizon: consume stream() "
                                     "instead, or shorten the horizon")
                found.setdefault(outage.node, []).append(outage)
            self._by_node = found
        return self._by_node

    def node(self, index: int) -> Iterator[Outage]:
        """Node ``index``'s outages in time order (a generator)."""
        yield from self.by_node().get(index, ())


class FailureModel(Protocol):
    """What an engine asks of a failure model (a :class:`RateModel`, a :class:`~simcluster.faults.LogReplay`)."""

    def outages(self, nodes: int, gpus_per_node: int, horizon_s: float, seed: int) -> Outages: ...


@dataclass(frozen=True)
class RateModel:
    """Nodes fail at the classes' total rate (per node, or per GPU × GPUs per node: ``per``); each failure's
    class is drawn in proportion to the rates and its repair from that class.  ``shape`` is the Weibull shape
    of the times between failures (1: exponential; < 1: failures cluster in time, > 1: wear-out); their mean
    is 1 / rate whatever the shape.  With ``per="gpu"`` and a shape ≠ 1 a node's times are Weibull of mean
    1 / (GPUs × rate): the long-run rate is right, the superposition of its GPUs' processes is not modelled.
    A total rate of 0 is a model without failures."""

    classes: tuple[FaultClass, ...]
    per: Literal["node", "gpu"] = "node"
    shape: float = 1.0
    start: Literal["stationary", "new"] = "stationary"

    def __post_init__(self) -> None:
        if not self.classes:
            raise LimitError("a failure model needs at least one fault class")
        for c in self.classes:
            number(c.rate, f"the failure rate of class {c.name!r} (per second)", low=0, high=1.0)
        if self.per not in ("node", "gpu"):
            raise LimitError(f"per must be node or gpu, got {self.per!r}")
        number(self.shape, "the Weibull shape", low=MIN_SHAPE, high=MAX_SHAPE)
        if self.start not in ("stationary", "new"):
            raise LimitError(f"start must be stationary or new, got {self.start!r}")

    @classmethod
    def from_mtbf(cls, mtbf_s: float, repair: float | Repair, *, per: Literal["node", "gpu"] = "node",
                  shape: float = 1.0, name: str = "failure") -> RateModel:
        """One class: a mean time between failures of ``mtbf_s`` per node (or GPU), ``repair`` seconds (or a
        :class:`Repair`)."""
        mtbf = number(mtbf_s, "the mean time between failures (s)", above=0)
        fix = repair if isinstance(repair, Repair) else Repair.fixed(repair)
        return cls((FaultClass(name, 1.0 / mtbf, fix),), per=per, shape=shape)

    def node_rate(self, gpus_per_node: int = 1) -> float:
        """Failures per second of one node (while up)."""
        total = sum(c.rate for c in self.classes)
        return total * (gpus_per_node if self.per == "gpu" else 1)

    def outages(self, nodes: int, gpus_per_node: int, horizon_s: float, seed: int) -> Outages:
        return _RateOutages(self, nodes, gpus_per_node, horizon_s, seed)


class _RateOutages(Outages):
    def __init__(self, model: RateModel, nodes: int, gpus_per_node: int, horizon_s: float, seed: int) -> None:
        super().__init__(nodes, horizon_s)
        self.model, self.seed = model, seed
        self.gpus_per_node = int(number(gpus_per_node, "GPUs per node", low=1, high=1_000_000, whole=True))
        self.rate = model.node_rate(self.gpus_per_node)
        rates = np.array([c.rate for c in model.classes])
        self._cumulative = np.cumsum(rates / rates.sum()) if rates.sum() > 0 else rates
        self.expected = self.rate * self.nodes * self.horizon_s  # about (less the time nodes are down)

    def _generators(self) -> tuple[np.random.Generator, np.random.Generator]:
        times, repairs = np.random.SeedSequence([int(self.seed) % (1 << 64), 0xFA17]).spawn(2)
        return np.random.default_rng(times), np.random.default_rng(repairs)

    def _pick(self, u: float, rng: np.random.Generator) -> tuple[str, float]:
        c = self.model.classes[min(int(np.searchsorted(self._cumulative, u, side="right")), len(self.model.classes) - 1)]
        return c.name, c.repair.draw(rng)

    def stream(self) -> Iterator[Outage]:
        if self.rate <= 0:
            return iter(())
        if self.model.shape == 1.0:
            return self._poisson()
        return self._renewal()

    def _poisson(self) -> Iterator[Outage]:
        times, repairs = self._generators()
        mean_gap = 1.0 / (self.rate * self.nodes)
        down_until: dict[int, float] = {}
        recovering: list[tuple[float, int]] = []
        t = 0.0
        while True:
            gaps = times.exponential(mean_gap, _BATCH)
            picks = times.integers(0, self.nodes, _BATCH)
            kinds = times.random(_BATCH)
            for gap, node, u in zip(gaps.tolist(), picks.tolist(), kinds.tolist(), strict=True):
                t += gap
                if t >= self.horizon_s:
                    return
                while recovering and recovering[0][0] <= t:
                    up, done = heapq.heappop(recovering)
                    if down_until.get(done) == up:
                        del down_until[done]
                if node in down_until:  # thinning: a node fails only while it is up
                    continue
                cls, repair = self._pick(u, repairs)
                down_until[node] = t + repair
                heapq.heappush(recovering, (t + repair, node))
                yield Outage(node, t, t + repair, cls)

    def _renewal(self) -> Iterator[Outage]:
        times, repairs = self._generators()
        k = self.model.shape
        scale = 1.0 / (self.rate * math.gamma(1.0 + 1.0 / k))
        if self.model.start == "new":
            first = scale * times.exponential(1.0, self.nodes) ** (1.0 / k)
        else:  # forward recurrence time: uniform within a length-biased interval, s·Gamma(1 + 1/k)^(1/k)
            first = times.random(self.nodes) * scale * times.gamma(1.0 + 1.0 / k, 1.0, self.nodes) ** (1.0 / k)
        failing = np.flatnonzero(first < self.horizon_s)
        heap = list(zip(first[failing].tolist(), failing.tolist(), strict=True))
        heapq.heapify(heap)
        while heap:
            t, node = heapq.heappop(heap)
            cls, repair = self._pick(float(times.random()), repairs)
            yield Outage(node, t, t + repair, cls)
            following = t + repair + scale * float(times.exponential()) ** (1.0 / k)
            if following < self.horizon_s:
                heapq.heappush(heap, (following, node))
