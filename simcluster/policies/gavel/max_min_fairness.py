"""Max-min fairness (Gavel OSDI'20 §4.2, Least Attained Service across GPU types): three forms."""

from __future__ import annotations

import numpy as np

from simcluster.policies.base import POLICIES
from simcluster.policies.gavel.allocation import Allocation, AllocationInput
from simcluster.policies.gavel.lp import max_min, proportional_throughput, top_pairs
from simcluster.policies.gavel.rounds import RoundPolicy

PAIRS_PER_JOB = 10  # candidate partners per job kept as LP variables in the packed form


@POLICIES.register("max_min_fairness")
class MaxMinFairness(RoundPolicy):
    """Max-min fairness, agnostic: equal (weighted) GPU time, every GPU type counted as equally fast.

    LP: maximise t subject to (s_i / w_i) · Σ_j x[i,j] ≥ t for every job i and the base constraints
    (simcluster.policies.gavel.lp): all throughputs are taken as 1, so each job gets an equal share
    of GPU-time (a job of s GPUs gets 1/s of the time of a 1-GPU job), divided by priority weight.
    Ties are broken towards more total allocation (ε · mean of the fairness terms).  The LP does not
    care on which type a job's time is; each job's share is spread over the types it can use in
    proportion to their sizes.  GPU types are filled in random order each round, as Gavel does for
    agnostic policies.
    """

    solves_lps = True  # reads --lp-solution
    reads_remaining = False

    aware = False

    def allocate(self, inp: AllocationInput) -> Allocation:
        ones = (inp.throughput > 0).astype(float)
        coef = ones * (inp.scale / inp.weight)[:, None]
        self.solves += 1
        allocation, _ = max_min(inp, coef, central=self.options.central)
        # the LP is indifferent to which type a job's time is on; spread it in proportion to the types'
        # sizes (what Gavel's interior-point solver returns) instead of an arbitrary vertex
        share = allocation.single.sum(axis=1, keepdims=True)
        spread = ones * inp.capacity[None, :]
        allocation.single = share * spread / np.maximum(spread.sum(axis=1, keepdims=True), 1e-12)
        return allocation


@POLICIES.register("max_min_fairness_perf")
class MaxMinFairnessPerf(RoundPolicy):
    """Max-min fairness, aware: maximise the least normalised effective throughput (Gavel's LAS).

    LP: maximise t subject to (s_i / w_i) · Σ_j T[i,j] x[i,j] / X_i ≥ t for every job i and the base
    constraints.  X_i is job i's throughput with its time spread over the GPU types in proportion to
    their sizes (``lp.proportional_throughput``, Gavel's normaliser), whatever its scale factor, so
    that jobs of equal throughputs get equal GPU time (s_i × time), as in ``max_min_fairness``; t is
    then "speed-up over a proportional share" and the LP raises the least of them (Gavel eq. 2, with
    its scale-factor weighting s_i).  Jobs that run comparatively better on a type get more of it.
    (Up to issue 15 the normaliser also held each job's agnostic fair time share, ∝ 1/s_i under load:
    that squared the scale factor and gave a 4-GPU job a quarter of the GPU time Gavel gives it.)
    """

    solves_lps = True  # reads --lp-solution
    reads_remaining = False

    def allocate(self, inp: AllocationInput) -> Allocation:
        coef = inp.throughput * (inp.scale / (inp.weight * proportional_throughput(inp)))[:, None]
        self.solves += 1
        allocation, _ = max_min(inp, coef, central=self.options.central)
        return allocation


@POLICIES.register("max_min_fairness_packed")
class MaxMinFairnessPacked(RoundPolicy):
    """Max-min fairness with space sharing: variables for jobs alone and for pairs sharing GPUs.

    Variables x[i,j] (job alone on type j) and y[p,j] (pair p = {a, b} of equal scale factor on s
    GPUs of type j, each job at its paired throughput from the table; zero-throughput pairs cannot
    share).  A pair takes s GPUs once in the capacity row and counts against both jobs' time
    budgets.  Maximise t subject to (s_i / w_i) · (Σ_j T[i,j] x[i,j] + Σ_{p∋i} Σ_j T_p[i,j] y[p,j]) / X_i
    ≥ t (same normaliser X_i as ``max_min_fairness_perf``).  Multi-GPU jobs pair only with jobs of
    the same scale factor, which is what Gavel's own packed LP fails to handle.  To keep the LP small,
    each job keeps its best candidate partners (by combined normalised throughput > 1; 10, fewer when
    many jobs are active: ``lp.top_pairs``).
    """

    solves_lps = True  # reads --lp-solution
    reads_remaining = False

    packing = True

    def allocate(self, inp: AllocationInput) -> Allocation:
        factor = inp.scale / (inp.weight * proportional_throughput(inp))
        coef = inp.throughput * factor[:, None]
        subset = top_pairs(inp, PAIRS_PER_JOB)
        pair_coef = inp.pair_throughput * factor[inp.pairs][:, None, :] if len(inp.pairs) else inp.pair_throughput
        self.solves += 1
        allocation, _ = max_min(inp, coef, subset, np.asarray(pair_coef), central=self.options.central)
        return allocation
