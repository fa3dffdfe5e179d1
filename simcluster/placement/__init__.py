"""Placements: map one job to GPUs of its VC.  One file each, registered by name."""

from simcluster.placement import (  # noqa: F401
    consolidate,
    consolidate_first,
    fastest_free,
    random_nodes,
    share_rules,
    slurm_topology,
    tiresias_relaxed,
    topology_aware,
)
from simcluster.placement.base import PLACEMENTS, Placement, Plan
from simcluster.placement.fractions import fraction_plan

__all__ = ["PLACEMENTS", "Placement", "Plan", "fraction_plan"]
