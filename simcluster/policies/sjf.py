from __future__ import annotations

from simcluster.job import Job
from simcluster.policies.base import POLICIES, Policy, start_in_order_until_blocked


@POLICIES.register("sjf")
class ShortestJobFirst(Policy):
    """Shortest job first (true duration, non-preemptive); stops at the first job that cannot be placed."""

    vc_independent = True

    def pending_key(self, job: Job) -> float:
        return job.duration

    schedule = staticmethod(start_in_order_until_blocked)  # (a call less per scheduling pass)
