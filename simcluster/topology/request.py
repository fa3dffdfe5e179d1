"""Where a job may be placed in a cluster's topology (Kueue's model): its pods, and a level they must or
should share.

A job is ``pods`` pods of ``pod_gpus`` GPUs each, each pod on one node (by default the whole job on one node where
it fits, else pods as large as a node allows: ``gcd(GPUs, GPUs per node)``).  ``required:rack``: every pod inside
one rack, or the job waits; ``preferred:rack``: in one rack where one has room, else in as few domains as the
levels above allow (Kueue falls back level by level); no request: anywhere, the placement's own way.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from simcluster.settings.fields import ConfigError
from simcluster.topology.arrays import NODE
from simcluster.topology.kueue import Tree

MODES = ("required", "preferred")


@dataclass(frozen=True, slots=True)
class TopologyRequest:
    """``mode`` (required, preferred; "" for none), the level it names (a level of the cluster's topology, or
    ``node``), the job's GPUs per pod (0: :func:`pod_gpus`'s default), and its slices: ``slice_size`` pods in one
    domain of ``slice_level`` each ("" and 0: none).

    >>> TopologyRequest.parse("preferred:rack", ("block", "rack"))
    TopologyRequest(mode='preferred', level='rack', pod_gpus=0, slice_level='', slice_size=0)
    >>> TopologyRequest("required", "block", 8, "rack", 2).assignment
    {'required': 'block', 'slice_level': 'rack', 'slice_size': 2}
    """

    mode: str
    level: str
    pod_gpus: int = 0
    slice_level: str = ""
    slice_size: int = 0

    def pod_size(self, gpus: int, gpus_per_node: int) -> int:
        """The GPUs of each of a job's pods: its own where the trace gives them, else :func:`pod_gpus`."""
        return self.pod_gpus or pod_gpus(gpus, gpus_per_node)

    @property
    def assignment(self) -> dict[str, str | int]:
        """The keyword arguments of Kueue's assignment (:func:`~simcluster.topology.kueue.assign`): ``{mode:
        level}`` where a level is requested, and the slices where there are some."""
        given: dict[str, str | int] = {self.mode: self.level} if self.mode else {}
        if self.slice_size:
            given.update(slice_level=self.slice_level, slice_size=self.slice_size)
        return given

    @classmethod
    def parse(cls, text: str, levels: Sequence[str], where: str = "--topology-request") -> TopologyRequest:
        """``required:LEVEL`` or ``preferred:LEVEL``, ``LEVEL`` one of ``levels`` or ``node``; a
        :class:`ConfigError` names what is wrong."""
        mode, sep, level = (part.strip() for part in str(text).partition(":"))
        if not sep or mode not in MODES:
            raise ConfigError(f"{where}: expected required:LEVEL or preferred:LEVEL, got {text!r}")
        known = (*levels, NODE)
        if level not in known:
            raise ConfigError(f"{where}: no level {level!r} in the topology (its levels: {', '.join(known)})")
        return cls(mode, level)


def pod_gpus(gpus: int, gpus_per_node: int) -> int:
    """GPUs per pod of a job of ``gpus`` GPUs on nodes of ``gpus_per_node``: the whole job where it fits on one
    node, else the largest pod that divides both (whole nodes where the job is a multiple of them).

    >>> pod_gpus(4, 8), pod_gpus(16, 8), pod_gpus(12, 8)
    (4, 8, 4)
    """
    return gpus if gpus <= gpus_per_node else math.gcd(gpus, gpus_per_node)


def pool_tree(domains: Sequence[tuple[int, ...]], levels: Sequence[str]) -> Tree:
    """The topology tree over a pool's nodes (``domains``: each node's domain at each level, top-down), its
    leaves the nodes in the pool's order: the tree Kueue's assignment walks (:mod:`~simcluster.topology.kueue`).

    >>> tree = pool_tree([(0, 0), (0, 1), (0, 1)], ("block", "rack"))
    >>> tree.levels, tree.sizes
    (('block', 'rack', 'node'), (1, 2, 3))
    >>> pool_tree([(), ()], ()).levels  # (a cluster without a topology: one domain)
    ('cluster', 'node')
    """
    if not levels:  # no topology: the nodes side by side under one domain
        return Tree(("cluster", NODE), (np.array([-1]), np.zeros(len(domains), dtype=np.int64)))
    table = np.asarray(domains, dtype=np.int64).reshape(len(domains), len(levels))
    parents, above = [], np.zeros(len(domains), dtype=np.int64)  # each node's local domain at the level above
    for k in range(len(levels)):
        # a domain is its path: (the domain above, its own) — so the same domain id under two parents cannot merge
        keys, local = np.unique(np.stack([above, table[:, k]], axis=1), axis=0, return_inverse=True)
        parents.append(keys[:, 0] if k else np.full(len(keys), -1, dtype=np.int64))
        above = local.reshape(-1)
    parents.append(above)  # the nodes' parents at the lowest named level
    return Tree((*levels, NODE), tuple(parents))
