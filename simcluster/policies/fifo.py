from __future__ import annotations

from simcluster.policies.base import POLICIES, Policy, start_in_order_until_blocked


@POLICIES.register("fifo")
class Fifo(Policy):
    """First come, first served, with head-of-line blocking.

    Jobs queue in submit order (ties: trace order).  When the head cannot be
    placed, no job behind it starts — the Helios/Lucid semantics.
    """

    vc_independent = True
    schedule = staticmethod(start_in_order_until_blocked)  # (a call less per scheduling pass)
