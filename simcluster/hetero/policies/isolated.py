"""Gavel's isolated baseline: every job gets an equal 1/n slice of the cluster."""

from __future__ import annotations

from simcluster.hetero.policies.base import HETERO_POLICIES, Allocation, AllocationInput, HeteroPolicy
from simcluster.hetero.policies.lp import isolated_allocation


@HETERO_POLICIES.register("isolated")
class Isolated(HeteroPolicy):
    """Isolated baseline: each of the n active jobs gets 1/n of every GPU type (Gavel's ``isolated``).

    Each job gets 1/n of every GPU type's time, divided by its scale factor, scaled so that no job is given more than 100 % of the time (Gavel's ``isolated``; no LP).  The
    reference point of finish-time fairness (ρ = 1)."""

    aware = False

    def allocate(self, inp: AllocationInput) -> Allocation:
        out = Allocation.empty(inp)
        out.single[:] = isolated_allocation(inp) * (inp.throughput > 0)
        return out
