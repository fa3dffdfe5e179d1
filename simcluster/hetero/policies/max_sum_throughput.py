"""Maximise total normalised throughput (Gavel §4.2 "maximize total throughput")."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from simcluster.hetero.policies.base import HETERO_POLICIES, Allocation, AllocationInput, HeteroPolicy
from simcluster.hetero.policies.lp import LPFailed, Program, isolated_throughput


@HETERO_POLICIES.register("max_sum_throughput_perf")
class MaxSumThroughputPerf(HeteroPolicy):
    """Maximise the sum of normalised throughputs (speed-ups over the isolated share); no fairness.

    maximise Σ_i w_i θ_i(x) / X_i (w = priority weight) subject to the base constraints, θ_i = Σ_j T[i,j] x[i,j] and X_i the job's throughput on its isolated 1/n share: the sum of speed-ups, so that fast and slow job types
    weigh alike.  No fairness: a job may get nothing while it waits."""

    def allocate(self, inp: AllocationInput) -> Allocation:
        prog = Program(inp, None, extra=0)
        scaled = sp.diags(inp.weight / isolated_throughput(inp)) @ prog.theta
        self.solves += 1
        x = prog.solve(-np.asarray(scaled.sum(axis=0)).ravel(), prog.base())
        if x is None:
            raise LPFailed("max_sum_throughput LP found no solution")
        return prog.allocation(x)
