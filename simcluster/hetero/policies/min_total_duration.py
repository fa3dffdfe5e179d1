"""Minimise the makespan of the active jobs (Gavel §4.2 "minimize total duration"): three forms."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.optimize import LinearConstraint

from simcluster.hetero.policies.base import HETERO_POLICIES, Allocation, AllocationInput, HeteroPolicy
from simcluster.hetero.policies.finish_time_fairness import blind
from simcluster.hetero.policies.lp import TIE_BREAK, LPFailed, Program, top_pairs

PAIRS_PER_JOB = 10


def min_makespan(inp: AllocationInput, pairs: np.ndarray | None) -> tuple[Allocation, float]:
    """minimise T subject to θ_i(x) · T ≥ R_i for all i and the base constraints.

    With z = 1/T this is one LP, not a bisection: maximise z s.t. θ_i(x) ≥ R_i · z.  Rows are scaled
    by each job's best solo throughput and z by the longest minimum duration D = max_i R_i / max_j T,
    so all coefficients are near 1: maximise u s.t. (D_i / D) u ≤ Σ_j (T[i,j] / T_i^max) x[i,j] + …,
    makespan = D / u.  Ties: ε · mean normalised throughput.  Returns (allocation, makespan in s).
    """
    prog = Program(inp, pairs, extra=1)
    best = np.maximum(inp.throughput.max(axis=1), 1e-12)
    D_i = inp.remaining / best
    D = float(D_i.max())
    scaled = sp.diags(1.0 / best) @ prog.theta
    u_col = sp.csr_matrix((D_i / D, (np.arange(prog.n), np.full(prog.n, prog.nvar - 1))), shape=(prog.n, prog.nvar))
    cost = -TIE_BREAK * np.asarray(scaled.sum(axis=0)).ravel() / max(prog.n, 1)
    cost[-1] = -1.0
    x = prog.solve(cost, [*prog.base(), LinearConstraint(u_col - scaled, -np.inf, np.zeros(prog.n))])
    if x is None or x[-1] <= 0:
        raise LPFailed("min_total_duration LP found no solution")
    return prog.allocation(x), D / float(x[-1])


@HETERO_POLICIES.register("min_total_duration")
class MinTotalDuration(HeteroPolicy):
    """Makespan, agnostic: minimise when the last active job finishes, GPU types taken as equal.

    Every GPU type is taken as equally fast for a job (its mean throughput).  One LP in z = 1/makespan (``min_makespan``)."""

    aware = False

    def allocate(self, inp: AllocationInput) -> Allocation:
        self.solves += 1
        return min_makespan(blind(inp), None)[0]


@HETERO_POLICIES.register("min_total_duration_perf")
class MinTotalDurationPerf(HeteroPolicy):
    """Makespan, aware: minimise when the last active job finishes, with true per-type throughputs.

    minimise T s.t. Σ_j T[i,j] x[i,j] · T ≥ R_i for every job, as one LP in z = 1/T (Gavel bisects on T)."""

    def allocate(self, inp: AllocationInput) -> Allocation:
        self.solves += 1
        return min_makespan(inp, None)[0]


@HETERO_POLICIES.register("min_total_duration_packed")
class MinTotalDurationPacked(HeteroPolicy):
    """Makespan with space sharing: ``min_total_duration_perf`` plus pairs sharing GPUs.

    Pairs of equal-scale jobs sharing GPUs are extra variables; up to 10 best partners per
    job (``lp.top_pairs``)."""

    packing = True

    def allocate(self, inp: AllocationInput) -> Allocation:
        self.solves += 1
        return min_makespan(inp, top_pairs(inp, PAIRS_PER_JOB))[0]
