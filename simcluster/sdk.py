"""Everything a scheduling policy or a placement needs, in one import.

A policy orders jobs and decides which to start or preempt; a placement maps one job to GPUs.  Both
are short classes written against this module, and the built-in ones are written against it too.  An
elastic policy (``elastic = True``) also resizes running jobs: :class:`IntervalPolicy` is the base of those
that decide every job's GPUs each interval, :func:`apply_allocations` carries such a decision out.

>>> from simcluster.sdk import Policy, register_policy, start_in_order_until_blocked
>>> class LargestFirst(Policy):
...     '''The job asking for the most GPUs first (ties: submit order).'''
...     def pending_key(self, job):
...         return (-job.gpu_num, job.submit_time)
...     schedule = staticmethod(start_in_order_until_blocked)
"""

from __future__ import annotations

from simcluster.job import JobState
from simcluster.placement.base import PLACEMENTS, Placement, Plan, fill_in_order, holds_exactly, lowest_node
from simcluster.policies.allocations import apply_allocations, layout_of, nodes_of, plan_of_nodes
from simcluster.policies.base import POLICIES, Policy, SchedulingContext, start_in_order_until_blocked
from simcluster.policies.interval import IntervalPolicy
from simcluster.policies.quota import gpu_share, queue_streams, walk_changes_nothing, walk_quota, walk_ranked
from simcluster.policies.running_columns import RunningColumns
from simcluster.policies.running_order import Minus, RunningOrder
from simcluster.queue import submit_order
from simcluster.settings.fields import setting
from simcluster.views import ClusterView, JobView, NodeView, PoolView, QueueView, VCView

register_policy = POLICIES.register
register_placement = PLACEMENTS.register

__all__ = [
    "ClusterView",
    "IntervalPolicy",
    "JobState",
    "JobView",
    "Minus",
    "NodeView",
    "Placement",
    "Plan",
    "Policy",
    "PoolView",
    "QueueView",
    "RunningColumns",
    "RunningOrder",
    "SchedulingContext",
    "VCView",
    "apply_allocations",
    "fill_in_order",
    "gpu_share",
    "holds_exactly",
    "layout_of",
    "lowest_node",
    "nodes_of",
    "plan_of_nodes",
    "queue_streams",
    "register_placement",
    "register_policy",
    "setting",
    "start_in_order_until_blocked",
    "submit_order",
    "walk_changes_nothing",
    "walk_quota",
    "walk_ranked",
]
