"""Scheduling policies: order jobs, decide starts and preemptions.  One file each; Gavel's family in ``gavel/``."""

# isort: off
from simcluster.policies import fifo  # noqa: F401  (first: `lucid-sim policies` lists in registration order)
# isort: on
from simcluster.policies import (  # noqa: F401  (registers)
    easy_backfill,
    fifo_backfill,
    lucid,
    qssf,
    sjf,
    sjf_sharing,
    slurm,
    srtf,
    srtf_ars,
    srtf_wrs,
    tiresias,
    tiresias_gittins,
)
from simcluster.policies.base import POLICIES, Policy, SchedulingContext

# Gavel's family (gavel/) brings scipy and HiGHS: imported when one of its policies is first used.
GAVEL_POLICIES = (
    "gavel_fifo", "fifo_perf", "fifo_packed", "finish_time_fairness", "finish_time_fairness_perf",
    "finish_time_fairness_packed", "gandiva", "isolated", "max_min_fairness", "max_min_fairness_perf",
    "max_min_fairness_packed", "max_sum_throughput_perf", "min_total_duration", "min_total_duration_perf",
    "min_total_duration_packed",
)
POLICIES.register_lazy("simcluster.policies.gavel", *GAVEL_POLICIES)

__all__ = ["POLICIES", "Policy", "SchedulingContext"]
