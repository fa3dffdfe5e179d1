"""Minimise the makespan of the active jobs (Gavel §4.2 "minimize total duration"): three forms."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.optimize import LinearConstraint

from simcluster.policies.base import POLICIES
from simcluster.policies.gavel.allocation import Allocation, AllocationInput
from simcluster.policies.gavel.finish_time_fairness import blind
from simcluster.policies.gavel.lp import LPFailed, Program, tie_break, top_pairs
from simcluster.policies.gavel.rounds import RoundPolicy

PAIRS_PER_JOB = 10


def min_makespan(inp: AllocationInput, pairs: np.ndarray | None, central: bool = False) -> tuple[Allocation, float]:
    """minimise T subject to θ_i(x) · T ≥ R_i for all i and the base constraints.

    With z = 1/T this is one LP, not a bisection: maximise z s.t. θ_i(x) ≥ R_i · z.  Rows are scaled
    by each job's best solo throughput and z by the longest minimum duration D = max_i R_i / max_j T,
    so all coefficients are near 1: maximise u s.t. (D_i / D) u ≤ Σ_j (T[i,j] / T_i^max) x[i,j] + …,
    makespan = D / u.  Ties: ε · mean normalised throughput (none when ``central``).  Returns
    (allocation, makespan in s).
    """
    prog = Program(inp, pairs, extra=1, central=central)
    best = np.maximum(inp.throughput.max(axis=1), 1e-12)
    D_i = inp.remaining / best
    D = float(D_i.max())
    scaled = sp.diags(1.0 / best) @ prog.theta
    u_col = sp.csr_matrix((D_i / D, (np.arange(prog.n), np.full(prog.n, prog.nvar - 1))), shape=(prog.n, prog.nvar))
    cost = -tie_break(central) * np.asarray(scaled.sum(axis=0)).ravel() / max(prog.n, 1)
    cost[-1] = -1.0
    x = prog.solve(cost, [*prog.base(), LinearConstraint(u_col - scaled, -np.inf, np.zeros(prog.n))])
    if x is None or x[-1] <= 0:
        raise LPFailed("min_total_duration LP found no solution")
    return prog.allocation(x), D / float(x[-1])


BISECTION_RANGE = (100.0, 1e6)  # seconds: Gavel's first bracket for the makespan
BISECTION_SLACK = 1.05  # Gavel stops once the bracket is within 5 %


def bisect_makespan(inp: AllocationInput, pairs: np.ndarray | None, central: bool = True
                    ) -> tuple[Allocation, float, int]:
    """Gavel's search: bisection on T over feasibility problems θ_i(x) ≥ R_i / T (no objective),
    from [100 s, 10⁶ s] until the bracket is within 5 %, the bracket moving up tenfold while nothing
    in it is feasible.  The allocation is the feasible point found at the last feasible T — with
    ``central``, a point inside that set, as Gavel's ECOS returns: every job is merely on time for a
    makespan up to 5 % above the least, none is favoured.  Returns (allocation, T, problems solved).
    """
    prog = Program(inp, pairs, extra=0, central=central)
    best = np.maximum(inp.throughput.max(axis=1), 1e-12)
    scaled = sp.diags(1.0 / best) @ prog.theta  # rows near 1, the same feasible set
    base, zero = prog.base(), np.zeros(prog.nvar)
    lo, hi = BISECTION_RANGE
    found, solves = None, 0
    while found is None:
        if hi > 1e15:
            raise LPFailed("min_total_duration: no feasible makespan found")
        top = hi
        while BISECTION_SLACK * lo < hi:
            T = 0.5 * (lo + hi)
            x = prog.solve(zero, [*base, LinearConstraint(scaled, inp.remaining / best / T, np.inf)])
            solves += 1
            if x is None:
                lo = T
            else:
                found, hi = (x, T), T
        lo, hi = top, top * 10
    x, T = found
    return prog.allocation(x), T, solves


def makespan_allocation(policy: RoundPolicy, inp: AllocationInput, pairs: np.ndarray | None) -> Allocation:
    if policy.options.makespan_search == "bisection":
        allocation, _, solves = bisect_makespan(inp, pairs, policy.options.central)
        policy.solves += solves
        return allocation
    policy.solves += 1
    return min_makespan(inp, pairs, policy.options.central)[0]


@POLICIES.register("min_total_duration")
class MinTotalDuration(RoundPolicy):
    """Makespan, agnostic: minimise when the last active job finishes, GPU types taken as equal.

    Every GPU type is taken as equally fast for a job (its mean throughput; Gavel takes its V100
    throughput).  One LP in z = 1/makespan (``min_makespan``) or Gavel's bisection."""

    solves_lps = True  # reads --lp-solution
    reads = RoundPolicy.reads | {"makespan_search"}

    aware = False

    def allocate(self, inp: AllocationInput) -> Allocation:
        return makespan_allocation(self, blind(inp), None)


@POLICIES.register("min_total_duration_perf")
class MinTotalDurationPerf(RoundPolicy):
    """Makespan, aware: minimise when the last active job finishes, with true per-type throughputs.

    minimise T s.t. Σ_j T[i,j] x[i,j] · T ≥ R_i for every job, as one LP in z = 1/T, or by Gavel's
    bisection on T (``--makespan-search bisection``, :func:`bisect_makespan`)."""

    solves_lps = True  # reads --lp-solution
    reads = RoundPolicy.reads | {"makespan_search"}

    def allocate(self, inp: AllocationInput) -> Allocation:
        return makespan_allocation(self, inp, None)


@POLICIES.register("min_total_duration_packed")
class MinTotalDurationPacked(RoundPolicy):
    """Makespan with space sharing: ``min_total_duration_perf`` plus pairs sharing GPUs.

    Pairs of equal-scale jobs sharing GPUs are extra variables; up to 10 best partners per
    job (``lp.top_pairs``)."""

    solves_lps = True  # reads --lp-solution
    reads = RoundPolicy.reads | {"makespan_search"}

    packing = True

    def allocate(self, inp: AllocationInput) -> Allocation:
        return makespan_allocation(self, inp, top_pairs(inp, PAIRS_PER_JOB))
