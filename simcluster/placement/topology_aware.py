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
from typing import Any, ClassVar

import numpy as np

from simcluster.cluster import Pool
from simcluster.job import Job
from simcluster.placement.base import PLACEMENTS, Placement, Plan
from simcluster.placement.domain_free import DomainFree, tree_of_pool
from simcluster.topology.kueue import assign, kueue_tas
from simcluster.topology.request import pod_gpus


class TopologyAware(Placement):
    """A placement that reads the cluster's topology and each job's topology request (``topology_aware``).

    Each pool's free GPUs per domain are kept up to date as they change (:class:`DomainFree`), so a decision
    costs the domains it looks at: a job of one pod walks one level's domains and one domain's children per
    level below; a larger one with a level reads the levels' domains and the chosen domains' children
    (:meth:`DomainFree.place_pods`, BalancedPlacement included); a job that asks for more pods than the pool
    holds is refused off the pool's free-count buckets; only jobs in slices are Kueue's assignment over every
    node's free pods.
    """

    topology_aware: ClassVar[bool] = True
    replaces_failed_nodes: ClassVar[bool] = True  # Kueue's failed-node replacement (engine.failures)
    algorithm: ClassVar[str] = "best-fit"  # or least-free, balanced; kueue: Kueue's default profile

    def __init__(self, rng: random.Random | None = None) -> None:
        super().__init__(rng)
        self._states: dict[int, DomainFree] = {}  # a pool's tallies, by the pool (its nodes never change)
        self._routes: dict[tuple, tuple[int, int, str, int]] = {}  # by pool, request and GPUs (_route)

    def place(self, job: Job, vc: Pool) -> Plan | None:
        if job.gpu_num > vc.free_gpus:
            return None
        state = self._state_of(vc)
        request = job.topology
        route = self._routes.get((id(vc), request, job.gpu_num)) or self._route(job, vc, state)
        pod, pods, kind, level = route
        if kind == "one pod":  # every algorithm takes the domain with the fewest such pods free, level by level
            position = state.one_pod(pod, level)
            return None if position is None else [(vc.nodes[position], job.gpu_num)]
        if pods > 1 and state.total_pods(pod) < pods:  # (no room anywhere, whatever the request)
            return None
        if kind == "anywhere":  # (Kueue's default profile: LeastFreeCapacity), node by node off the buckets
            chosen = state.spread(pod, pods, self.algorithm in ("least-free", "kueue"))
        elif kind == "level":  # a level, no slices: off the tallies
            algorithm = "best-fit" if self.algorithm == "kueue" else self.algorithm
            chosen = state.place_pods(pod, pods, request.mode, level, algorithm)  # type: ignore[union-attr]
        else:  # slices: Kueue's assignment over every domain
            sums = state.level_pods(pod)
            given: dict[str, Any] = request.assignment  # type: ignore[union-attr]
            if self.algorithm == "kueue":
                chosen = kueue_tas(state.tree, sums[-1], pods, level_pods=sums, **given)
            else:
                chosen = assign(state.tree, sums[-1], pods, algorithm=self.algorithm, level_pods=sums, **given)
        if chosen is None:
            return None
        return [(vc.nodes[leaf], count * pod) for leaf, count in sorted(chosen.items()) if count]

    def _route(self, job: Job, vc: Pool, state: DomainFree) -> tuple[int, int, str, int]:
        """How a job of its GPUs and request is placed in ``vc``, worked out once per kind of job: its pod size,
        pods, which path (one pod, anywhere, a level, slices) and the index of its level in the tree."""
        request = job.topology
        pod = request.pod_size(job.gpu_num, vc.gpus_per_node) if request else pod_gpus(job.gpu_num, vc.gpus_per_node)
        pods = job.gpu_num // pod
        level = state.tree.level(request.level) if request and request.mode else state.leaf
        if pods == 1 and not (self.algorithm == "balanced" and request and request.mode == "preferred"):
            kind = "one pod"
        elif request is None or not request.assignment:
            kind = "anywhere"
        else:
            kind = "slices" if request.slice_size else "level"
        route = self._routes[(id(vc), request, job.gpu_num)] = (pod, pods, kind, level)
        return route

    def room_class(self, job: Job, vc: Pool) -> tuple:
        """Jobs among which finding no room is monotone in their GPUs (:class:`Placement`): those of one pod
        (room iff a node has their GPUs free), those that require one level in pods of one size (iff a domain
        there holds their pods), and those that may spread, in pods of one size (iff the pool holds them)."""
        request = job.topology
        pod = request.pod_size(job.gpu_num, vc.gpus_per_node) if request else pod_gpus(job.gpu_num, vc.gpus_per_node)
        if job.gpu_num <= pod:
            return ("one pod",)
        slices = (request.slice_level, request.slice_size) if request is not None else ("", 0)
        if request is not None and request.mode == "required":
            return ("required", request.level, pod, *slices)
        return ("anywhere", pod, *slices)

    def _state_of(self, vc: Pool) -> DomainFree:
        known = self._states.get(id(vc))
        if known is None:
            known = self._states[id(vc)] = DomainFree(vc, tree_of_pool(vc, f"placement {self.name}"))
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
