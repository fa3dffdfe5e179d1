"""Whether a job that requires a topology domain would find room once some running jobs leave: what Kueue asks
before it preempts for a workload placed by Topology Aware Scheduling.

Kueue simulates a preemption with topology: it removes its candidates one at a time and takes them as victims only
once the workload's quota fits *and* its topology assignment succeeds without them (``workloadFits`` in
pkg/scheduler/preemption/preemption.go, which calls ``FindTopologyAssignmentsForWorkload``; Kueue v0.17, commit
ff69552).  The whole-node test of :func:`~simcluster.placement.room.fits_once_freed` answers for a job that may
spread; a job that *requires* a rack would pass it with victims on two racks and still find no rack.  Here the
answer is node-granular, as the topology-aware placements find room (:mod:`~simcluster.placement.topology_aware`):
the job's pods (:meth:`~simcluster.topology.request.TopologyRequest.pod_size`) on the nodes' free GPUs once the
victims' GPUs come back, and some domain of the required level holding them all; a request in slices is Kueue's
assignment itself (:func:`~simcluster.topology.kueue.assign`).  A job that only prefers a level, or asks for
none, keeps the whole-node test.

Two racks of two 8-GPU nodes, one 8-GPU job on each node; a job requiring a rack of 16 GPUs finds one only when
both victims share a rack, where the whole-node test is content with any two:

>>> from simcluster.cluster import Cluster
>>> from simcluster.job import Job
>>> from simcluster.topology.request import TopologyRequest, pool_tree
>>> vc = Cluster({"v": 4}, 8).vcs["v"]
>>> vc.topology_levels = ("rack",)
>>> for node, rack in zip(vc.nodes, (0, 0, 1, 1)):
...     node.domains = (rack,)
>>> running = [Job(index=i, job_id=f"r{i}", vc="v", gpu_num=8, submit_time=0, duration=9) for i in range(4)]
>>> for job, node in zip(running, vc.nodes):
...     job.allocation = ((node, node.allocate(job, 8)),)
>>> racked = Job(index=4, job_id="racked", vc="v", gpu_num=16, submit_time=0, duration=9)
>>> racked.topology = TopologyRequest("required", "rack")
>>> across, within = [running[0], running[2]], [running[0], running[1]]
>>> fits_in_topology_once_freed(racked, across, vc), fits_in_topology_once_freed(racked, within, vc)
(False, True)
>>> fits_once_freed(racked, across, vc)  # (the whole-node test: two idle nodes, wherever they are)
True
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from simcluster.cluster import Pool
from simcluster.placement.domain_free import tree_of_pool
from simcluster.placement.room import fits_once_freed
from simcluster.placement.topology_aware import free_counts
from simcluster.topology.kueue import Tree, assign

__all__ = ["fits_in_topology_once_freed", "needs_topology_room"]


def needs_topology_room(request: Any) -> bool:
    """Whether a topology request (``job.topology``) constrains where the job's pods may go beyond what the whole-
    node test sees: a required level, or slices (each slice in one domain).  A preferred level falls back, level by
    level, to anywhere (Kueue's assignment then spreads the pods), so it keeps the whole-node test.

    >>> from simcluster.topology.request import TopologyRequest
    >>> [needs_topology_room(r) for r in (None, TopologyRequest("preferred", "rack"),
    ...                                   TopologyRequest("required", "rack"), TopologyRequest("", "", 0, "rack", 2))]
    [False, False, True, True]
    """
    return request is not None and (request.mode == "required" or bool(request.slice_size))


def fits_in_topology_once_freed(job: Any, leaving: Iterable[Any], pool: Pool) -> bool:
    """Whether ``job`` (waiting) finds room in ``pool`` once the running jobs ``leaving`` have left, as the
    topology-aware placements would place it (module docstring): for a job that requires a level or comes in
    slices, some domain holding its pods; for any other, :func:`fits_once_freed`'s whole-node test.

    A job asking for fractions of a GPU keeps the whole-node test too (a topology-aware placement places whole
    GPUs).  Costs a few array operations over the pool's nodes (the free counts are read off its buckets)."""
    request = job.topology
    if not needs_topology_room(request) or job.gpu_milli < 1000:
        return fits_once_freed(job, leaving, pool)
    layout = _layout_of(pool)
    freed = [(layout.position[id(node)], len(ids)) for other in leaving for node, ids in other.allocation
             if node.up]  # (a node down frees nothing a job could use)
    if pool.free_gpus + sum(count for _, count in freed) < job.gpu_num:
        return False  # (too few GPUs anywhere: the commonest answer, before reading every node)
    free = free_counts(pool)
    for position, count in freed:
        free[position] += count
    pod = request.pod_size(job.gpu_num, pool.gpus_per_node)
    pods = job.gpu_num // pod
    per_node = free // pod
    if request.slice_size:  # (slices: Kueue's assignment itself, which finds room iff it places them)
        return assign(layout.tree, per_node, pods, **request.assignment) is not None
    level = layout.tree.level(request.level)
    if level == layout.leaf:  # (required: node — every pod on one node)
        return bool((per_node >= pods).any())
    return bool((np.bincount(layout.domain_of[level], weights=per_node) >= pods).any())


@dataclass(frozen=True)
class _Layout:
    """A pool's topology as the room test reads it: its tree, each node's position, and each node's domain at
    every level above the nodes (kept per pool: a pool's nodes and their domains never change)."""

    tree: Tree
    leaf: int
    position: dict[int, int]  # id(node) → its position in the pool
    domain_of: tuple[np.ndarray, ...]  # level → each node's domain there (levels above the nodes)

    @classmethod
    def of(cls, pool: Pool) -> _Layout:
        tree = tree_of_pool(pool, "the room test of a job that requires a topology")
        leaf = len(tree.levels) - 1
        above = [tree.parents[leaf]]  # each node's domain one level up, then the levels above that
        for k in range(leaf - 1, 0, -1):
            above.append(tree.parents[k][above[-1]])
        return cls(tree, leaf, {id(node): i for i, node in enumerate(pool.nodes)}, tuple(above[::-1]))


_LAYOUTS: weakref.WeakKeyDictionary[Pool, _Layout] = weakref.WeakKeyDictionary()


def _layout_of(pool: Pool) -> _Layout:
    layout = _LAYOUTS.get(pool)
    if layout is None:
        layout = _LAYOUTS[pool] = _Layout.of(pool)
    return layout
