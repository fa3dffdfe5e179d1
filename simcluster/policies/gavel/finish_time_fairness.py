"""Finish-time fairness (Themis, NSDI'20, as Gavel §4.2 formulates it): three forms."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import scipy.sparse as sp
from scipy.optimize import LinearConstraint

from simcluster.config import SimConfig
from simcluster.policies.base import POLICIES
from simcluster.policies.gavel.allocation import Allocation, AllocationInput
from simcluster.policies.gavel.lp import (
    DUST,
    Program,
    isolated_allocation,
    isolated_throughput,
    run_highs,
    stacked,
    top_pairs,
)
from simcluster.policies.gavel.rounds import RoundPolicy

BISECTION_STEPS = 10
VERDICT_MARGIN = 1e-6  # relative: HiGHS' feasibility tolerance is 1e-7, so it may admit what is this close
SUM_ROUNDING = 1e-10  # relative, far above the rounding of a float sum of some thousand shares
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

    Only the last feasible step's solution is kept, so on one GPU type without pairs (where feasibility is
    a sum: :func:`single_type_verdict`) a step whose verdict is certain is not solved, and the last feasible
    level is solved once at the end — the same LP the step would have solved.  Should HiGHS then disagree,
    the search is run again solving every step (not seen on the benchmark's three shapes, where every
    allocation took one LP; tests/test_gavel_scale7.py holds the verdicts to HiGHS').
    """
    iso = isolated_throughput(inp)
    done = np.zeros(inp.n) if done_isolated is None else done_isolated
    E = (done + inp.remaining / iso) / inp.weight  # finish time on the isolated share, per unit of weight
    best = np.maximum(inp.throughput.max(axis=1), 1e-12)
    lo = float(np.max((inp.age + inp.remaining / best) / E))
    hi = isolated_level = float(np.max((inp.age + inp.remaining / iso) / E))
    problem = FeasibilityProblem(inp, pairs, central, iso)
    verdict = None if central or problem.p or inp.m != 1 else single_type_verdict(inp, iso)
    found, level, solves = _bisect(problem, inp, E, lo, hi, verdict)
    if found is None and verdict is not None and level is not None:  # the verdicts were wrong: solve every step
        found, level, more = _bisect(problem, inp, E, lo, hi, None)
        solves += more
    if found is None:  # numerically infeasible even at the isolated level: take the isolated allocation
        out = Allocation.empty(inp)
        out.single[:] = isolated_allocation(inp) * (inp.throughput > 0)
        return out, isolated_level, solves
    return problem.allocation(found), float(level), solves  # type: ignore[arg-type]


def _bisect(problem: FeasibilityProblem, inp: AllocationInput, E: np.ndarray, lo: float, hi: float,
            verdict: Callable[[np.ndarray], bool | None] | None) -> tuple[np.ndarray | None, float | None, int]:
    """The bisection of :func:`finish_time_fair`: (the last feasible step's solution, its level ρ, LPs solved).
    A step ``verdict`` is sure of is not solved; if the last feasible one was such, it is solved at the end
    (solution None and level set when HiGHS then finds it infeasible)."""
    found: np.ndarray | None = None
    found_at: float | None = None
    unsolved: np.ndarray | None = None  # the lower bounds of the last feasible step, when it was not solved
    solves = 0
    for step in range(BISECTION_STEPS + 1):
        rho = hi if step == 0 else 0.5 * (lo + hi)
        gap = rho * E - inp.age
        if np.any(gap <= 0):
            lo = rho
            continue
        need = inp.remaining / gap / problem.iso * (1 - 1e-9)
        sure = verdict(need) if verdict is not None else None
        x = None
        if sure is None:
            x = problem.solve(need)
            solves += 1
        if x is None and not sure:
            lo = rho
        else:
            found, found_at, hi = x, rho, rho
            unsolved = need if x is None else None
        if step > 0 and hi - lo < 1e-3 * hi:
            break
    if found is None and unsolved is not None:
        found = problem.solve(unsolved)
        solves += 1
    return found, found_at, solves


def single_type_verdict(inp: AllocationInput, iso: np.ndarray,
                        margin: float = VERDICT_MARGIN) -> Callable[[np.ndarray], bool | None]:
    """Whether the feasibility LP of :func:`finish_time_fair` on one GPU type, no pairs, has a solution for lower
    bounds ``need`` on θ_i / X_i — None where it is infeasible by less than ``margin`` (relative), which HiGHS,
    with its tolerances, may call feasible, or feasible only by float rounding: only HiGHS can say what HiGHS says.

    On one type job i needs a time share a_i = need_i / (T_i / X_i), at most 1 (its time row), and the shares
    fill Σ s_i a_i of the c GPUs (its capacity row): feasible exactly when both hold.

    >>> inp = AllocationInput([0, 1], np.array([[2.0], [1.0]]), np.array([1.0, 2.0]), np.ones(2), np.ones(2),
    ...                       np.zeros(2), np.array([2.0]))
    >>> verdict = single_type_verdict(inp, np.array([1.0, 1.0]))  # shares need / T: [0.5, 0.5] fill 1.5 GPUs
    >>> verdict(np.array([1.0, 0.5])), verdict(np.array([1.0, 1.0])), verdict(np.array([2.0, 0.5 + 1e-9]))
    (True, False, None)
    """
    scaled = (1.0 / iso) * inp.throughput[:, 0]  # θ_i / X_i per unit of time share
    scale, capacity = inp.scale, float(inp.capacity[0])
    runs = scaled > 0

    def verdict(need: np.ndarray) -> bool | None:
        if not runs.all():
            return None  # a job that cannot run here: left to HiGHS (never on a VC's only type)
        share = need / scaled
        used = float(scale @ share)
        if float(share.max()) > 1 + margin or used > capacity * (1 + margin):
            return False
        # feasible in exact arithmetic (need ≤ its full time's worth, exactly; the sum past its rounding):
        # HiGHS' tolerances only ever admit more
        if (need <= scaled).all() and used <= capacity * (1 - SUM_ROUNDING):
            return True
        return None

    return verdict


class FeasibilityProblem:
    """The rows every step of :func:`finish_time_fair` solves (base constraints, then θ_i / X_i ≥ the step's
    lower bound), built once and only when a step is solved; without pairs its matrix is laid out column-wise
    straight from the arrays, entry for entry what stacking the sparse rows gives (tests/test_gavel_scale7.py)."""

    def __init__(self, inp: AllocationInput, pairs: np.ndarray | None, central: bool, iso: np.ndarray) -> None:
        self.inp, self.pairs, self.central, self.iso = inp, pairs, central, iso
        self.p = 0 if pairs is None else len(pairs)
        self._built: tuple | None = None
        self._program: Program | None = None

    def solve(self, need: np.ndarray) -> np.ndarray | None:
        cost, columns, lower, upper, col_lower, col_upper = self._built or self._build()
        lower[len(lower) - self.inp.n:] = need
        return run_highs(cost, columns, lower, upper, col_lower, col_upper, self.central)

    def allocation(self, x: np.ndarray) -> Allocation:
        if self._program is not None:
            return self._program.allocation(x)
        x = np.clip(x, 0.0, 1.0)  # as Program.allocation does, with no pairs
        if self.central:
            x[x < DUST] = 0.0
        return Allocation(x.reshape(self.inp.n, self.inp.m), np.zeros((len(self.inp.pairs), self.inp.m)))

    def _build(self) -> tuple:
        inp = self.inp
        if self.p:
            prog = self._program = Program(inp, self.pairs, extra=0, central=self.central)
            scaled = sp.diags(1.0 / self.iso) @ prog.theta  # θ_i / X_i
            cost = np.zeros(prog.nvar) if self.central else -np.asarray(scaled.sum(axis=0)).ravel() / max(inp.n, 1)
            columns, lower, upper = stacked([*prog.base(), LinearConstraint(scaled, np.zeros(inp.n), np.inf)])
            self._built = (cost, columns, lower.copy(), upper, prog.bounds.lb, prog.bounds.ub)
        else:
            self._built = single_columns(inp, self.iso, self.central)
        return self._built


def single_columns(inp: AllocationInput, iso: np.ndarray, central: bool) -> tuple:
    """(cost, columns, row lower, row upper, column lower, column upper) of the feasibility LP without pairs,
    column x[i, j] holding 1 in time row i, s_i in capacity row n + j and T[i, j] / X_i in row n + m + i (left
    out where 0, as the sparse product that made it leaves it out).

    >>> inp = AllocationInput([0], np.array([[2.0, 0.0]]), np.ones(1), np.ones(1), np.ones(1), np.zeros(1),
    ...                       np.ones(2))
    >>> cost, (start, index, value), *_ = single_columns(inp, np.array([0.5]), central=False)
    >>> cost.tolist(), start.tolist(), index.tolist(), value.tolist()
    ([-4.0, -0.0], [0, 3, 5], [0, 1, 3, 0, 2], [1.0, 1.0, 4.0, 1.0, 1.0])
    """
    n, m = inp.n, inp.m
    scaled = ((1.0 / iso)[:, None] * inp.throughput).ravel()
    rows = np.column_stack((np.repeat(np.arange(n), m), n + np.tile(np.arange(m), n),
                            n + m + np.repeat(np.arange(n), m)))
    values = np.column_stack((np.ones(n * m), np.repeat(inp.scale, m), scaled))
    keep = np.ones((n * m, 3), bool)
    keep[:, 2] = scaled != 0
    counts = keep.sum(axis=1)
    start = np.concatenate(([0], np.cumsum(counts))).astype(np.int32)
    index = rows[keep].astype(np.int32)
    value = values[keep]
    cost = np.zeros(n * m) if central else -scaled / max(n, 1)
    lower = np.concatenate((np.full(n + m, -np.inf), np.zeros(n)))
    upper = np.concatenate((np.ones(n), inp.capacity, np.full(n, np.inf)))
    col_upper = np.where(inp.throughput.ravel() > 0, 1.0, 0.0)
    return cost, (start, index, value), lower, upper, np.zeros(n * m), col_upper


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
        # by job (its slot, a small int): isolated seconds so far, and remaining work and isolated throughput at
        # the last call (seen: whether it was in one); arrays, so that a call reads the active jobs' rows at once
        self.seconds, self.remaining, self.iso = np.zeros(0), np.zeros(0), np.ones(0)
        self.seen = np.zeros(0, bool)

    def update(self, inp: AllocationInput, iso: np.ndarray) -> np.ndarray:
        ids = np.asarray(inp.ids, dtype=np.int64)
        if len(ids) and ids.max() >= len(self.seen):
            self._grow(2 * int(ids.max()) + 16)
        done = self.seconds[ids]
        seen = self.seen[ids]
        was = ids[seen]
        done[seen] += np.maximum(self.remaining[was] - inp.remaining[seen], 0.0) / self.iso[was]
        self.seconds[ids], self.remaining[ids], self.iso[ids], self.seen[ids] = done, inp.remaining, iso, True
        return done

    def _grow(self, size: int) -> None:
        def grown(a: np.ndarray, fill: float | bool) -> np.ndarray:
            out = np.full(size, fill, dtype=a.dtype)
            out[: len(a)] = a
            return out

        self.seconds, self.remaining = grown(self.seconds, 0.0), grown(self.remaining, 0.0)
        self.iso, self.seen = grown(self.iso, 1.0), grown(self.seen, False)


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
