"""Scheduling policies: order jobs, decide starts and preemptions.  One file each; Gavel's family in ``gavel/``."""

from simcluster.policies import (  # noqa: F401  (registers)
    fifo,
    gavel,
    lucid,
    qssf,
    sjf,
    sjf_sharing,
    srtf,
    srtf_ars,
    srtf_wrs,
    tiresias,
    tiresias_gittins,
)
from simcluster.policies.base import POLICIES, Policy, SchedulingContext

__all__ = ["POLICIES", "Policy", "SchedulingContext"]
