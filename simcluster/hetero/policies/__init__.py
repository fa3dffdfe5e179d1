"""Gavel's allocation policies for heterogeneous clusters, one file per family, registered by name."""

from simcluster.hetero.policies import (  # noqa: F401  (registers)
    fifo,
    finish_time_fairness,
    gandiva,
    isolated,
    max_min_fairness,
    max_sum_throughput,
    min_total_duration,
)
from simcluster.hetero.policies.base import (
    HETERO_POLICIES,
    Allocation,
    AllocationInput,
    HeteroPolicy,
    PolicyOptions,
)

__all__ = ["HETERO_POLICIES", "Allocation", "AllocationInput", "HeteroPolicy", "PolicyOptions"]
