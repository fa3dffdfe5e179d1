"""Scheduling policies: order jobs, decide starts and preemptions.  One file each."""

from simcluster.policies import fifo, qssf, sjf, srtf, tiresias, tiresias_gittins  # noqa: F401  (registers)
from simcluster.policies.base import POLICIES, Policy, SchedulingContext

__all__ = ["POLICIES", "Policy", "SchedulingContext"]
