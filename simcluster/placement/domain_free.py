"""A pool's free GPUs per domain of its topology, kept up to date as GPUs are taken and freed.

Kueue's assignment (:mod:`simcluster.topology.kueue`) reads how many pods fit in every domain of every level.
Summing them from the nodes at each decision costs every node of the cluster; a large run takes tens of
thousands of decisions.  Here each level keeps, per domain, how many of its nodes have each free count (a
``domains × (GPUs per node + 1)`` array), updated from the pool's log of the nodes whose free count changed
(:meth:`~simcluster.cluster.Pool.watch_free`): a change costs its node's levels, and the pods of ``p`` GPUs
that fit in a level's domains are one product with ``f // p`` over the free counts ``f``.

The commonest decision, a job of one pod, then needs no assignment at all: Kueue puts it on the domain with the
fewest such pods at the requested level, then likewise level by level down to a node (both BestFit and
LeastFreeCapacity: every domain holding a pod fits it whole), and an unrequested one on the node with the fewest,
which the pool's free-count buckets name directly.  :func:`one_pod` is that path; tests hold it equal to
:func:`~simcluster.topology.kueue.assign` on random trees.

>>> from simcluster.cluster import Cluster
>>> from simcluster.job import Job
>>> vc = Cluster({"a": 4}, 8).vcs["a"]
>>> tree = pool_tree([(0,), (0,), (1,), (1,)], ("rack",))
>>> state = DomainFree(vc, tree)
>>> job = Job(index=0, job_id="j", vc="a", gpu_num=6, submit_time=0, duration=1)
>>> _ = vc.nodes[2].allocate(job, 6)
>>> state.pods_per_domain(0, 2).tolist()   # pods of 2 GPUs per rack: 4 + 4, then 1 + 4
[8, 5]
>>> state.one_pod(2, 0)                   # the rack with fewer, then its node with the fewest
2
"""

from __future__ import annotations

import numpy as np

from simcluster.cluster import Pool
from simcluster.topology.kueue import Tree
from simcluster.topology.request import pool_tree

__all__ = ["DomainFree", "pool_tree", "tree_of_pool"]

_NONE = np.iinfo(np.int64).max  # (masks domains without a pod out of an argmin)


def tree_of_pool(pool: Pool, who: str) -> Tree:
    """The topology tree over ``pool``'s nodes (its leaves, in the pool's order); on a cluster without a topology,
    its nodes side by side under one domain.  A pool only partly in the topology is an error naming ``who``.

    >>> from simcluster.cluster import Cluster
    >>> tree_of_pool(Cluster({"a": 3}, 8).vcs["a"], "placement x").sizes
    (1, 3)
    """
    nodes = pool.nodes
    outside = sum(node.domains is None for node in nodes)
    if 0 < outside < len(nodes):
        raise ValueError(f"{who}: {outside} of the {len(nodes)} nodes of {getattr(pool, 'name', '') or 'a pool'} "
                         "are not in the cluster's topology")
    if outside:
        return pool_tree([()] * len(nodes), ())
    return pool_tree([node.domains for node in nodes], pool.topology_levels)  # type: ignore[misc]


class DomainFree:
    """Per level of ``tree`` (whose leaves are ``pool``'s nodes, in its order), how many nodes of each domain
    have each free count; and each node's free GPUs (0 while down).  Read it after :meth:`sync`."""

    def __init__(self, pool: Pool, tree: Tree) -> None:
        self.pool, self.tree = pool, tree
        self.leaf = len(tree.levels) - 1
        width = pool.gpus_per_node + 1
        self.width = width
        self.free = np.zeros(len(pool.nodes), dtype=np.int64)
        for count, mask in enumerate(pool.buckets):
            for position in _bits(mask):
                self.free[position] = count
        # each node's domain at each level above it, top-down, and the levels' node-count tables
        above = [tree.parents[self.leaf]]
        for k in range(self.leaf - 1, 0, -1):
            above.append(tree.parents[k][above[-1]])
        self.domain_of: list[np.ndarray] = above[::-1]
        self._domains_of_node = list(zip(*(d.tolist() for d in self.domain_of), strict=True))
        self.counts = [np.bincount(d * width + self.free, minlength=tree.sizes[k] * width)
                       .reshape(tree.sizes[k], width) for k, d in enumerate(self.domain_of)]
        # a named level's domains are numbered by parent (pool_tree), so a domain's children are one range
        self.child_start = [np.searchsorted(tree.parents[k + 1], np.arange(tree.sizes[k] + 1))
                            for k in range(self.leaf - 1)]
        self.child_start = [s.tolist() for s in self.child_start]
        order = np.argsort(tree.parents[self.leaf], kind="stable")  # the nodes of each lowest domain, in order
        bounds = np.searchsorted(tree.parents[self.leaf][order], np.arange(tree.sizes[self.leaf - 1] + 1))
        self.nodes_of = [order[bounds[d]:bounds[d + 1]] for d in range(tree.sizes[self.leaf - 1])]
        self.weights = [np.arange(width) // max(p, 1) for p in range(width)]  # pods of p in each free count
        self.changes = pool.watch_free()
        self._drift = 4 * len(pool.nodes)

    def sync(self) -> None:
        """Take in the nodes whose free count changed since the last call."""
        changes = self.changes
        if not changes:
            return
        nodes, free, counts = self.pool.nodes, self.free, self.counts
        for position in set(changes):
            after = nodes[position].bucket or 0  # (None: down, no free GPU)
            before = int(free[position])
            if after == before:
                continue
            free[position] = after
            for k, domain in enumerate(self._domains_of_node[position]):
                table = counts[k]
                table[domain, before] -= 1
                table[domain, after] += 1
        changes.clear()

    def pods_per_domain(self, level: int, pod: int, first: int = 0, stop: int | None = None) -> np.ndarray:
        """Pods of ``pod`` GPUs that fit in each domain ``first`` … ``stop - 1`` of ``level`` (a named level)."""
        self.sync()
        return self.counts[level][first:stop] @ self.weights[pod]

    def node_pods(self, pod: int) -> np.ndarray:
        """Pods of ``pod`` GPUs that fit on each node (Kueue's free slots per host)."""
        self.sync()
        return self.free // pod

    def level_pods(self, pod: int) -> list[np.ndarray]:
        """Pods of ``pod`` GPUs that fit in each domain of each level, top-down, the nodes' last: what Kueue's
        assignment sums from the nodes (:func:`~simcluster.topology.kueue.assign`'s ``level_pods``)."""
        self.sync()
        weights = self.weights[pod]
        return [table @ weights for table in self.counts] + [self.free // pod]

    def spread(self, pod: int, pods: int, least_free: bool) -> dict[int, int] | None:
        """Where Kueue puts ``pods`` pods of ``pod`` GPUs that may go anywhere (node position → pods), or None:
        on the node with the fewest such pods free that holds them all, else over the nodes in Kueue's order
        (fewest pods first for LeastFreeCapacity, most first for BestFit; then the lower index) until one holds
        the rest, which BestFit gives to the node, of those left, with the fewest pods that holds it.  Read off
        the pool's free-count buckets: a node at a time, never every node."""
        groups = self._pod_groups(pod)
        for held in range(pods, len(groups)):
            if groups[held]:
                return {_lowest(groups[held]): pods}
        taken: dict[int, int] = {}
        left = pods
        for held in (range(1, len(groups)) if least_free else range(len(groups) - 1, 0, -1)):
            mask = groups[held]
            while mask:
                position = _lowest(mask)
                mask &= mask - 1
                if held < left:
                    taken[position] = held
                    left -= held
                    continue
                if not least_free:  # the tightest node left that holds the rest: a smaller group, else this node
                    tighter = next((g for g in range(left, held) if groups[g]), None)
                    if tighter is not None:
                        position = _lowest(groups[tighter])
                taken[position] = left
                return taken
        return None

    def _pod_groups(self, pod: int) -> list[int]:
        """Per count ``s`` of pods of ``pod`` GPUs, the mask of the nodes that hold exactly ``s`` (0: none)."""
        buckets = self.pool.buckets
        groups = [0] * (len(buckets) // pod + 1)
        for count, mask in enumerate(buckets):
            groups[count // pod] |= mask
        groups[0] = 0
        return groups

    def one_pod(self, pod: int, level: int) -> int | None:
        """Where Kueue puts a job of one pod of ``pod`` GPUs that requires or prefers ``level`` (an index of the
        tree's levels): the node's position in the pool, or None when no node has room.  At ``level`` the domain
        with the fewest such pods that holds one, then so on down; ties go to the lower index, as in
        :func:`~simcluster.topology.kueue.assign`."""
        if level >= self.leaf:
            return self.best_node(pod)
        self.sync()
        pods = self.counts[level] @ self.weights[pod]
        domain = _fewest(pods)
        if domain is None:
            return None
        for k in range(level + 1, self.leaf):
            first, stop = self.child_start[k - 1][domain], self.child_start[k - 1][domain + 1]
            domain = first + _fewest(self.counts[k][first:stop] @ self.weights[pod])  # type: ignore[operator]
        nodes = self.nodes_of[domain]
        return int(nodes[_fewest(self.free[nodes] // pod)])  # type: ignore[index]

    def best_node(self, pod: int) -> int | None:
        """The node an unrequested pod of ``pod`` GPUs goes to: the fewest such pods free, then the lowest
        index; read off the pool's buckets (nodes with free counts of the same pods, lowest bit first)."""
        if len(self.changes) > self._drift:  # (read nowhere else now: keep the log short)
            self.sync()
        return next((_lowest(mask) for mask in self._pod_groups(pod) if mask), None)


def _fewest(pods: np.ndarray) -> int | None:
    """The index of the smallest non-zero entry (the first of equals), or None if all are zero."""
    where = int(np.where(pods > 0, pods, _NONE).argmin()) if len(pods) else 0
    return where if len(pods) and pods[where] > 0 else None


def _lowest(mask: int) -> int:
    return (mask & -mask).bit_length() - 1


def _bits(mask: int) -> list[int]:
    positions = []
    while mask:
        low = mask & -mask
        positions.append(low.bit_length() - 1)
        mask ^= low
    return positions
