"""Finish-time fairness (Themis, NSDI'20, as Gavel §4.2 formulates it): three forms."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.optimize import LinearConstraint

from simcluster.hetero.policies.base import HETERO_POLICIES, Allocation, AllocationInput, HeteroPolicy
from simcluster.hetero.policies.lp import Program, isolated_throughput, top_pairs

BISECTION_STEPS = 10
PAIRS_PER_JOB = 10


def blind(inp: AllocationInput) -> AllocationInput:
    """The same jobs seen by an agnostic policy: each job's mean throughput on every type it can use."""
    runs = inp.throughput > 0
    mean = inp.throughput.sum(axis=1) / np.maximum(runs.sum(axis=1), 1)
    return AllocationInput(inp.ids, runs * mean[:, None], inp.scale, inp.weight, inp.remaining, inp.age,
                           inp.capacity, inp.pairs, inp.pair_throughput, inp.rng)


def finish_time_fair(inp: AllocationInput, pairs: np.ndarray | None) -> tuple[Allocation, float, int]:
    """Minimise max_i w_i·ρ_i, ρ_i = (age_i + R_i / θ_i(x)) / (age_i + R_i / X_i), by bisection.

    X_i is job i's throughput on its isolated 1/n share and w_i its priority weight (a heavier job must
    reach a smaller ρ).  For a fixed level r the condition is linear: θ_i(x) ≥ R_i / (r·E_i/w_i − age_i),
    E_i = age_i + R_i / X_i; each step is one feasibility LP (whose objective, Σ θ_i / X_i, picks a
    useful allocation among the feasible ones).  r = max_i w_i is always feasible (the isolated
    allocation gives every ρ_i = 1), so the search runs between a lower bound (each job alone on its
    fastest type) and that.  Returns (allocation, r, LPs solved).
    """
    iso = isolated_throughput(inp)
    prog = Program(inp, pairs, extra=0)
    scaled = sp.diags(1.0 / iso) @ prog.theta  # θ_i / X_i
    E = (inp.age + inp.remaining / iso) / inp.weight  # finish time on the isolated share, per unit of weight
    best = np.maximum(inp.throughput.max(axis=1), 1e-12)
    lo, hi = float(np.max((inp.age + inp.remaining / best) / E)), float(inp.weight.max())
    cost = -np.asarray(scaled.sum(axis=0)).ravel() / max(inp.n, 1)
    base = prog.base()
    found: np.ndarray | None = None
    solves = 0
    for step in range(BISECTION_STEPS + 1):
        rho = hi if step == 0 else 0.5 * (lo + hi)
        gap = rho * E - inp.age
        if np.any(gap <= 0):
            lo = rho
            continue
        need = inp.remaining / gap / iso
        x = prog.solve(cost, [*base, LinearConstraint(scaled, need * (1 - 1e-9), np.inf)])
        solves += 1
        if x is None:
            lo = rho
        else:
            found, hi = x, rho
        if step > 0 and hi - lo < 1e-3 * hi:
            break
    if found is None:  # numerically infeasible even at ρ = 1: fall back to the isolated allocation
        from simcluster.hetero.policies.lp import isolated_allocation
        out = Allocation.empty(inp)
        out.single[:] = isolated_allocation(inp) * (inp.throughput > 0)
        return out, float(inp.weight.max()), solves
    return prog.allocation(found), hi, solves


@HETERO_POLICIES.register("finish_time_fairness")
class FinishTimeFairness(HeteroPolicy):
    """Finish-time fairness (Themis), agnostic: minimise the largest ρ, GPU types taken as equal.

    ρ = (finish time sharing the cluster) ÷ (finish time on an isolated 1/n share), every GPU type treated as equally fast (the job's mean
    throughput).  Bisection on ρ, one feasibility LP per step (see ``finish_time_fair``)."""

    aware = False

    def allocate(self, inp: AllocationInput) -> Allocation:
        allocation, _, solves = finish_time_fair(blind(inp), None)
        self.solves += solves
        return allocation


@HETERO_POLICIES.register("finish_time_fairness_perf")
class FinishTimeFairnessPerf(HeteroPolicy):
    """Finish-time fairness (Themis), aware: minimise the largest ρ with true per-type throughputs.

    minimise max_i ρ_i,
    ρ_i = (age_i + R_i/θ_i(x)) / (age_i + R_i/X_i); bisection on ρ with feasibility LPs θ_i(x) ≥
    R_i / (ρ·E_i − age_i) (Gavel's formulation is the same ratio, solved as a convex program)."""

    def allocate(self, inp: AllocationInput) -> Allocation:
        allocation, _, solves = finish_time_fair(inp, None)
        self.solves += solves
        return allocation


@HETERO_POLICIES.register("finish_time_fairness_packed")
class FinishTimeFairnessPacked(HeteroPolicy):
    """Finish-time fairness with space sharing: ``finish_time_fairness_perf`` plus pairs sharing GPUs.

    Pairs of equal-scale jobs sharing GPUs are extra variables (θ_i counts paired throughput; a pair takes its GPUs once);
    up to 10 best partners per job (``lp.top_pairs``)."""

    packing = True

    def allocate(self, inp: AllocationInput) -> Allocation:
        allocation, _, solves = finish_time_fair(inp, top_pairs(inp, PAIRS_PER_JOB))
        self.solves += solves
        return allocation
