"""Gavel's heterogeneity-aware policies (OSDI'20) and their round mechanism, one file per family.

Each is a :class:`~simcluster.policies.gavel.rounds.RoundPolicy` registered by Gavel's name in the
one policy registry (Gavel's ``fifo`` as ``gavel_fifo``), and runs on any cluster and trace: each VC
gets its own allocation.
"""

from simcluster.policies.gavel import (  # noqa: F401  (registers)
    fifo,
    finish_time_fairness,
    gandiva,
    isolated,
    max_min_fairness,
    max_sum_throughput,
    min_total_duration,
)
from simcluster.policies.gavel.allocation import Allocation, AllocationInput, PolicyOptions
from simcluster.policies.gavel.rounds import RoundPolicy

__all__ = ["Allocation", "AllocationInput", "PolicyOptions", "RoundPolicy"]
