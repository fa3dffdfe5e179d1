"""Scheduling policies: order jobs, decide starts and preemptions.  One file each; Gavel's family in ``gavel/``.

Every built-in is registered by name here and its module imported when the name is first used: the names
are known at once (``lucid-sim policies`` lists them in this order), nothing is imported that a run does not
need (Gavel's family brings scipy and HiGHS), and a built-in module may import :mod:`simcluster.sdk`, as a
plug-in does, without an import cycle.
"""

from simcluster.policies.base import POLICIES, Policy, SchedulingContext

BUILT_IN = (  # module → the names it registers
    ("fifo", ("fifo",)),
    ("lucid", ("lucid",)),
    ("qssf", ("qssf",)),
    ("sjf", ("sjf",)),
    ("sjf_sharing", ("sjf-ffs", "sjf-bsbf")),
    ("srtf", ("srtf",)),
    ("srtf_ars", ("srtf-ars",)),
    ("srtf_wrs", ("srtf-wrs",)),
    ("tiresias", ("tiresias",)),
    ("tiresias_gittins", ("tiresias-gittins",)),
    ("fifo_backfill", ("fifo-backfill",)),
    ("easy_backfill", ("easy-backfill",)),
    ("slurm", ("slurm",)),
    ("kueue", ("kueue",)),
    ("pollux", ("pollux",)),
    ("optimus", ("optimus",)),
    ("tiresias_pollux", ("tiresias-pollux",)),
    ("elasticflow", ("elasticflow", "edf")),
)
GAVEL_POLICIES = (
    "gavel_fifo", "fifo_perf", "fifo_packed", "finish_time_fairness", "finish_time_fairness_perf",
    "finish_time_fairness_packed", "gandiva", "isolated", "max_min_fairness", "max_min_fairness_perf",
    "max_min_fairness_packed", "max_sum_throughput_perf", "min_total_duration", "min_total_duration_perf",
    "min_total_duration_packed",
)
for _module, _names in BUILT_IN:
    POLICIES.register_lazy(f"simcluster.policies.{_module}", *_names)
POLICIES.register_lazy("simcluster.policies.gavel", *GAVEL_POLICIES)

__all__ = ["GAVEL_POLICIES", "POLICIES", "Policy", "SchedulingContext"]
