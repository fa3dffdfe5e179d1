"""Finish-time fairness (Themis, NSDI'20, as Gavel §4.2 formulates it): three forms."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.optimize import LinearConstraint

from simcluster.config import SimConfig
from simcluster.policies.base import POLICIES
from simcluster.policies.gavel.allocation import Allocation, AllocationInput
from simcluster.policies.gavel.lp import (
    Program,
    isolated_allocation,
    isolated_throughput,
    run_highs,
    stacked,
    top_pairs,
)
from simcluster.policies.gavel.rounds import RoundPolicy

BISECTION_STEPS = 10
PAIRS_PER_JOB = 10


def blind(inp: AllocationInput) -> AllocationInput:
    """The same jobs seen by an agnostic policy: each job's mean throughput on every type it can use."""
    runs = inp.throughput > 0
    mean = inp.throughput.sum(axis=1) / np.maximum(runs.sum(axis=1), 1)
    return AllocationInput(inp.ids, runs * mean[:, None], inp.scale, inp.weight, inp.remaining, inp.age,
                           inp.capacity, inp.pairs, inp.pair_throughput, inp.rng)


def finish_time_fair(inp: AllocationInput, pairs: np.ndarray | None, central: bool = False,
                     done_isolated: np.ndarray | None = None) -> tuple[Allocation, float, int]:
    """Minimise max_i w_i·ρ_i, ρ_i = (age_i + R_i / θ_i(x)) / (D_i + R_i / X_i), by bisection.

    ρ is Themis' finish-time fairness: the job's finish time sharing the cluster (its age plus its
    remaining R_i iterations at the throughput θ_i(x) the allocation gives it) over its finish time
    on an isolated 1/n share of the cluster, whose throughput is X_i: the seconds D_i its progress so
    far would have taken there (``done_isolated``, accumulated by :class:`IsolatedClock`; 0 when
    not given) plus R_i / X_i.  w_i is the priority weight (a heavier job must reach a smaller ρ).
    For a fixed level r the condition is linear: θ_i(x) ≥ R_i / (r·E_i − age_i), E_i = (D_i + R_i/X_i)
    / w_i; each step is one feasibility LP (whose objective, Σ θ_i / X_i, picks a useful allocation
    among the feasible ones).  The isolated allocation itself reaches r₀ = max_i (age_i + R_i/X_i) /
    E_i, so the search runs between a lower bound (each job alone on its fastest type) and that.
    ``central``: no objective, a point inside the feasible set at the final level (what Gavel's ECOS
    returns for its min-max program).  Returns (allocation, r, LPs solved).
    """
    iso = isolated_throughput(inp)
    done = np.zeros(inp.n) if done_isolated is None else done_isolated
    prog = Program(inp, pairs, extra=0, central=central)
    scaled = sp.diags(1.0 / iso) @ prog.theta  # θ_i / X_i
    E = (done + inp.remaining / iso) / inp.weight  # finish time on the isolated share, per unit of weight
    best = np.maximum(inp.throughput.max(axis=1), 1e-12)
    lo = float(np.max((inp.age + inp.remaining / best) / E))
    hi = isolated_level = float(np.max((inp.age + inp.remaining / iso) / E))
    cost = np.zeros(prog.nvar) if central else -np.asarray(scaled.sum(axis=0)).ravel() / max(inp.n, 1)
    # every step solves the same rows, the last n under other lower bounds: the matrix is stacked once
    columns, lower, upper = stacked([*prog.base(), LinearConstraint(scaled, np.zeros(inp.n), np.inf)])
    found: np.ndarray | None = None
    solves = 0
    for step in range(BISECTION_STEPS + 1):
        rho = hi if step == 0 else 0.5 * (lo + hi)
        gap = rho * E - inp.age
        if np.any(gap <= 0):
            lo = rho
            continue
        need = inp.remaining / gap / iso
        lower = np.concatenate([lower[: len(lower) - inp.n], need * (1 - 1e-9)])
        x = run_highs(cost, columns, lower, upper, prog.bounds.lb, prog.bounds.ub, central)
        solves += 1
        if x is None:
            lo = rho
        else:
            found, hi = x, rho
        if step > 0 and hi - lo < 1e-3 * hi:
            break
    if found is None:  # numerically infeasible even at the isolated level: take the isolated allocation
        out = Allocation.empty(inp)
        out.single[:] = isolated_allocation(inp) * (inp.throughput > 0)
        return out, isolated_level, solves
    return prog.allocation(found), hi, solves


class IsolatedClock:
    """For each job, the seconds its progress so far would have taken on its isolated share: at every
    allocation, the iterations done since the last one ÷ the isolated throughput it had then (Themis'
    isolated finish time, accumulated as Gavel does while the share changes with the job count).

    >>> clock = IsolatedClock()
    >>> p = AllocationInput([7], np.ones((1, 1)), np.ones(1), np.ones(1), np.array([100.0]), np.zeros(1),
    ...                     np.ones(1))
    >>> clock.update(p, np.array([2.0])).tolist()
    [0.0]
    >>> p.remaining = np.array([60.0])
    >>> clock.update(p, np.array([1.0])).tolist()  # 40 iterations at 2 it/s
    [20.0]
    """

    def __init__(self) -> None:
        self.seconds: dict[int, float] = {}
        self.last: dict[int, tuple[float, float]] = {}  # job -> (remaining, isolated throughput) at the last call

    def update(self, inp: AllocationInput, iso: np.ndarray) -> np.ndarray:
        done = np.array([self.seconds.get(job, 0.0) for job in inp.ids])
        for i, job in enumerate(inp.ids):
            last = self.last.get(job)
            if last is not None:
                done[i] += max(last[0] - float(inp.remaining[i]), 0.0) / last[1]
        self.seconds = dict(zip(inp.ids, done.tolist()))
        self.last = {job: (float(r), float(x)) for job, r, x in zip(inp.ids, inp.remaining, iso)}
        return done


class _FinishTimeFairnessBase(RoundPolicy):
    """Holds each job's isolated clock across allocations (see :class:`IsolatedClock`)."""

    solves_lps = True  # reads --lp-solution

    def __init__(self, config: SimConfig | None = None) -> None:
        super().__init__(config)
        self.clock = IsolatedClock()

    def solve_for(self, view: AllocationInput, pairs: np.ndarray | None) -> Allocation:
        done = self.clock.update(view, isolated_throughput(view))
        allocation, _, solves = finish_time_fair(view, pairs, self.options.central, done)
        self.solves += solves
        return allocation


@POLICIES.register("finish_time_fairness")
class FinishTimeFairness(_FinishTimeFairnessBase):
    """Finish-time fairness (Themis), agnostic: minimise the largest ρ, GPU types taken as equal.

    ρ = (finish time sharing the cluster) ÷ (finish time on an isolated 1/n share), every GPU type treated as equally fast (the job's mean
    throughput).  Bisection on ρ, one feasibility LP per step (see ``finish_time_fair``)."""

    aware = False

    def allocate(self, inp: AllocationInput) -> Allocation:
        return self.solve_for(blind(inp), None)


@POLICIES.register("finish_time_fairness_perf")
class FinishTimeFairnessPerf(_FinishTimeFairnessBase):
    """Finish-time fairness (Themis), aware: minimise the largest ρ with true per-type throughputs.

    minimise max_i ρ_i, ρ_i = (age_i + R_i/θ_i(x)) / (D_i + R_i/X_i) (D_i: the isolated time of its
    progress so far); bisection on ρ with feasibility LPs θ_i(x) ≥ R_i / (ρ·E_i − age_i) (Gavel's
    formulation is the same ratio, solved as a convex program).  Up to issue 15 the denominator held
    the job's age instead of D_i, which lowered ρ for jobs that had waited."""

    def allocate(self, inp: AllocationInput) -> Allocation:
        return self.solve_for(inp, None)


@POLICIES.register("finish_time_fairness_packed")
class FinishTimeFairnessPacked(_FinishTimeFairnessBase):
    """Finish-time fairness with space sharing: ``finish_time_fairness_perf`` plus pairs sharing GPUs.

    Pairs of equal-scale jobs sharing GPUs are extra variables (θ_i counts paired throughput; a pair takes its GPUs once);
    up to 10 best partners per job (``lp.top_pairs``)."""

    packing = True

    def allocate(self, inp: AllocationInput) -> Allocation:
        return self.solve_for(inp, top_pairs(inp, PAIRS_PER_JOB))
