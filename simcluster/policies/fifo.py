from __future__ import annotations

from simcluster.cluster import VirtualCluster
from simcluster.policies.base import POLICIES, Policy, SchedulingContext, start_in_order_until_blocked


@POLICIES.register("fifo")
class Fifo(Policy):
    """First come, first served, with head-of-line blocking.

    Jobs queue in submit order (ties: trace order).  When the head cannot be
    placed, no job behind it starts — the Helios/Lucid semantics.
    """

    def schedule(self, vc: VirtualCluster, ctx: SchedulingContext) -> None:
        start_in_order_until_blocked(vc, ctx)
