"""Gavel's isolated baseline: every job gets an equal 1/n slice of the cluster."""

from __future__ import annotations

from simcluster.policies.base import POLICIES
from simcluster.policies.gavel.allocation import Allocation, AllocationInput
from simcluster.policies.gavel.lp import isolated_allocation
from simcluster.policies.gavel.rounds import RoundPolicy


@POLICIES.register("isolated")
class Isolated(RoundPolicy):
    """Isolated baseline: each of the n active jobs gets 1/n of every GPU type (Gavel's ``isolated``).

    Each job gets 1/n of every GPU type's time, divided by its scale factor, scaled so that no job is given more than 100 % of the time (Gavel's ``isolated``; no LP).  The
    reference point of finish-time fairness (ρ = 1)."""

    aware = False
    reads_remaining = False

    def allocate(self, inp: AllocationInput) -> Allocation:
        out = Allocation.empty(inp)
        out.single[:] = isolated_allocation(inp) * (inp.throughput > 0)
        return out
