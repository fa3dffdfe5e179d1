"""What one of Gavel's policies sees and returns when it allocates.

A policy turns the active jobs of a VC into an *allocation*: for every job (and, for ``*_packed``
and gandiva, for every candidate pair of jobs sharing GPUs) the fraction of time it should spend on
each GPU type.  The round mechanism (:mod:`simcluster.policies.gavel.rounds`) then realises it round
by round.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass
class AllocationInput:
    """The active jobs as arrays (row i = job ``ids[i]``, in arrival order)."""

    ids: list[int]  # the jobs' slots in their VC's round state (arrival order)
    throughput: np.ndarray  # (n, m) iterations/s alone; 0 = cannot run there
    scale: np.ndarray  # (n,) GPUs each job occupies (fractional for openb pods sharing by fraction)
    weight: np.ndarray  # (n,) priority weights (higher = more)
    remaining: np.ndarray  # (n,) iterations left
    age: np.ndarray  # (n,) seconds since arrival
    capacity: np.ndarray  # (m,) GPUs of each type
    pairs: np.ndarray = field(default_factory=lambda: np.zeros((0, 2), dtype=np.int64))  # (p, 2) rows into ids
    pair_throughput: np.ndarray = field(default_factory=lambda: np.zeros((0, 0, 2)))  # (p, m, 2)
    rng: np.random.Generator = field(default_factory=lambda: np.random.default_rng(0))

    @property
    def n(self) -> int:
        return len(self.ids)

    @property
    def m(self) -> int:
        return len(self.capacity)


@dataclass(frozen=True)
class PolicyOptions:
    """Choices a policy makes where the paper leaves room (``--lp-solution``, ``--makespan-search``,
    ``--gandiva-pairing``); Gavel's simulator's are ``central``, ``bisection`` and ``gavel``."""

    lp_solution: str = "vertex"  # "vertex": simplex + tie-break; "central": interior point, no tie-break
    makespan_search: str = "exact"  # "exact": one LP in 1/makespan; "bisection": Gavel's 5 % bisection
    gandiva_pairing: str = "helpful"  # "helpful": only pairs that help; "gavel": Gavel's random pairs

    @classmethod
    def from_config(cls, config: Any) -> PolicyOptions:
        return cls(config.lp_solution, config.makespan_search, config.gandiva_pairing)

    @property
    def central(self) -> bool:
        return self.lp_solution == "central"


@dataclass
class Allocation:
    single: np.ndarray  # (n, m) time fractions
    pair: np.ndarray  # (p, m) time fractions of the candidate pairs (AllocationInput.pairs)

    @classmethod
    def empty(cls, inp: AllocationInput) -> Allocation:
        return cls(np.zeros((inp.n, inp.m)), np.zeros((len(inp.pairs), inp.m)))
