"""Kueue's topology-aware placements (Topology Aware Scheduling, KEP-2724): a job's pods on the hosts of a
cluster's topology, by Kueue's own algorithms (:mod:`simcluster.topology.kueue`).

A job is pods of :func:`~simcluster.topology.request.pod_gpus` GPUs, each pod on one node; its request
(``job.topology``: ``--topology-request required:rack``, or none) says which level they must or should share.
``tas-best-fit`` (Kueue's BestFit: the fullest domains that fit, the tightest last), ``tas-least-free``
(LeastFreeCapacity: the emptiest first), ``tas-balanced`` (BalancedPlacement for preferred requests: as even a
spread as the fewest domains allow) and ``kueue-tas`` (Kueue's default profile: BestFit where a level is
requested, LeastFreeCapacity where none is).  On a cluster without a topology (no ``--topology``) they place over
the nodes side by side, one domain.
"""

from __future__ import annotations

import random
from typing import ClassVar

import numpy as np

from simcluster.cluster import Node, Pool
from simcluster.job import Job
from simcluster.placement.base import PLACEMENTS, Placement, Plan
from simcluster.topology.kueue import Tree, assign, kueue_tas
from simcluster.topology.request import pod_gpus, pool_tree


class TopologyAware(Placement):
    """A placement that reads the cluster's topology and each job's topology request (``topology_aware``)."""

    topology_aware: ClassVar[bool] = True
    algorithm: ClassVar[str] = "best-fit"  # or least-free, balanced; kueue: Kueue's default profile

    def __init__(self, rng: random.Random | None = None) -> None:
        super().__init__(rng)
        self._trees: dict[int, tuple[Tree, list[Node]]] = {}  # a pool's tree, by the pool (its nodes never change)

    def place(self, job: Job, vc: Pool) -> Plan | None:
        if job.gpu_num > vc.free_gpus:
            return None
        tree, nodes = self._tree_of(vc)
        request = job.topology
        pod = request.pod_size(job.gpu_num, vc.gpus_per_node) if request else pod_gpus(job.gpu_num, vc.gpus_per_node)
        pods = job.gpu_num // pod
        free = free_counts(vc) // pod
        level = request.level_given if request else {}
        if self.algorithm == "kueue":
            chosen = kueue_tas(tree, free, pods, **level)
        else:
            chosen = assign(tree, free, pods, algorithm=self.algorithm, **level)
        if chosen is None:
            return None
        return [(nodes[leaf], count * pod) for leaf, count in sorted(chosen.items()) if count]

    def _tree_of(self, vc: Pool) -> tuple[Tree, list[Node]]:
        known = self._trees.get(id(vc))
        if known is None:
            nodes = list(vc.nodes)
            outside = sum(node.domains is None for node in nodes)
            if 0 < outside < len(nodes):
                raise ValueError(f"placement {self.name}: {outside} of the {len(nodes)} nodes of {vc.name or 'a pool'} "
                                 "are not in the cluster's topology")
            if outside:  # a cluster without a topology: its nodes, side by side, as Kueue sees a flat one
                known = self._trees[id(vc)] = (pool_tree([()] * len(nodes), ()), nodes)
            else:
                domains = [node.domains for node in nodes]
                known = self._trees[id(vc)] = (pool_tree(domains, vc.topology_levels), nodes)  # type: ignore
        return known


def free_counts(pool: Pool) -> np.ndarray:
    """Each node's free GPUs, in the pool's order, read off its free-count buckets (a bit per node in each: a few
    array operations per count, where asking every node costs a Python call each; a node down is in none).

    >>> from simcluster.cluster import Cluster
    >>> vc = Cluster({"a": 3}, 8).vcs["a"]
    >>> job = Job(index=0, job_id="j", vc="a", gpu_num=3, submit_time=0, duration=1)
    >>> _ = vc.nodes[1].allocate(job, 3)
    >>> free_counts(vc).tolist()
    [8, 5, 8]
    """
    count = len(pool.nodes)
    size = (count + 7) // 8
    free = np.zeros(count, dtype=np.int64)
    for k, mask in enumerate(pool.buckets):
        if k and mask:
            bits = np.unpackbits(np.frombuffer(mask.to_bytes(size, "little"), np.uint8), count=count,
                                 bitorder="little")
            free[bits.view(bool)] = k
    return free


@PLACEMENTS.register("tas-best-fit")
class TasBestFit(TopologyAware):
    """Kueue's BestFit: the domains with the most free room that fit the job, the tightest one last."""

    name = "tas-best-fit"
    algorithm = "best-fit"


@PLACEMENTS.register("tas-least-free")
class TasLeastFree(TopologyAware):
    """Kueue's LeastFreeCapacity: the domains with the least free room first."""

    name = "tas-least-free"
    algorithm = "least-free"


@PLACEMENTS.register("tas-balanced")
class TasBalanced(TopologyAware):
    """Kueue's BalancedPlacement (a preferred request spread evenly over the fewest domains; else BestFit)."""

    name = "tas-balanced"
    algorithm = "balanced"


@PLACEMENTS.register("kueue-tas")
class KueueTas(TopologyAware):
    """Kueue's default profile: BestFit for a required or preferred level, LeastFreeCapacity for none."""

    name = "kueue-tas"
    algorithm = "kueue"
