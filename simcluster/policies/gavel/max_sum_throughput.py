"""Maximise total throughput (Gavel OSDI'20 §4, "maximize total throughput")."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from simcluster.policies.base import POLICIES
from simcluster.policies.gavel.allocation import Allocation, AllocationInput
from simcluster.policies.gavel.lp import LPFailed, Program
from simcluster.policies.gavel.rounds import RoundPolicy


@POLICIES.register("max_sum_throughput_perf")
class MaxSumThroughputPerf(RoundPolicy):
    """Maximise the total effective throughput Σ_i θ_i(x) in iterations/s (the paper's objective); no fairness.

    maximise Σ_i w_i θ_i(x), θ_i = Σ_j T[i,j] x[i,j], subject to the base constraints (w = priority
    weight, 1 in Gavel's traces: then exactly the paper's Σ_m throughput(m, X) and Gavel's code).  Raw
    iterations/s are summed, so job types with many cheap iterations weigh more than those with few
    costly ones, as in the paper; a job may get nothing while it waits.  (Up to issue 15 we summed
    speed-ups over the isolated share instead, which the paper does not.)"""

    solves_lps = True  # reads --lp-solution
    reads_remaining = False

    def allocate(self, inp: AllocationInput) -> Allocation:
        prog = Program(inp, None, extra=0, central=self.options.central)
        total = sp.diags(inp.weight) @ prog.theta
        self.solves += 1
        x = prog.solve(-np.asarray(total.sum(axis=0)).ravel(), prog.base())
        if x is None:
            raise LPFailed("max_sum_throughput LP found no solution")
        return prog.allocation(x)
