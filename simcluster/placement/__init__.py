"""Placements: map one job to GPUs of its VC.  One file each, registered by name."""

from simcluster.placement import consolidate, consolidate_first, random_nodes, tiresias_relaxed  # noqa: F401
from simcluster.placement.base import PLACEMENTS, Placement, Plan, make_placement

__all__ = ["PLACEMENTS", "Placement", "Plan", "make_placement"]
