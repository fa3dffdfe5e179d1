"""A cluster's topology: its nodes and the domains above them (racks, NVLink domains, switch blocks).

Levels are named from the top down, ``("block", "rack")`` or Lingjun's ``("DSW", "PSW", "ASW")``; below the
lowest named level lies the node itself, the level :data:`NODE`.  A domain is named by its path from the
top: Lingjun's ASW ``S14`` under PSW ``P10`` under DSW ``G6`` is ``G6/P10/S14``, and the ``S14`` under
``P12`` is another switch, because real files reuse a switch's label under different parents.

Everything is held in integer arrays, one per level: node index → domain index, and domain index → its
parent's index at the level above.  Building one for 131,072 nodes costs a few sorts of integer arrays, and
a query costs the nodes it is given or returns, never a walk over the cluster (a placement asks many).

>>> topology = Topology.from_labels(("block", "rack"), ["n0", "n1", "n2", "n3"],
...                                 [["b0", "b0", "b0", "b1"], ["r0", "r0", "r1", "r0"]])
>>> topology
<Topology of 4 nodes: 2 block, 3 rack>
>>> topology.domains("rack"), topology.nodes_in("rack", 0).tolist()
(['b0/r0', 'b0/r1', 'b1/r0'], [0, 1])
>>> topology.spanned_level([0, 1]), topology.spanned_level([0, 2]), topology.spanned_level([2, 3])
('node', 'rack', 'block')
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from itertools import compress

import numpy as np

from simcluster.errors import TraceError
from simcluster.topology.arrays import (
    MAX_NODES,
    NODE,
    TopologyError,
    check_level,
    check_levels,
    frozen,
    labelled_domains,
    node_index,
    runs,
)


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Topology:
    """Nodes and the domains above them, level by level from the top down; read-only arrays throughout.

    ``membership[k][i]`` is node ``i``'s domain at ``levels[k]``, ``domain_names[k]`` those domains' path
    names and ``parents[k][d]`` domain ``d``'s parent at the level above (-1 at the top, where several
    domains may stand side by side).  ``block_sizes`` are Slurm's BlockSizes (nodes), kept for a placement
    by blocks; ``source`` names the file, for messages.  Build one with :meth:`from_labels` or a loader.
    """

    levels: tuple[str, ...]
    node_names: tuple[str, ...]
    membership: tuple[np.ndarray, ...]
    domain_names: tuple[tuple[str, ...], ...]
    parents: tuple[np.ndarray, ...]
    source: str = ""
    block_sizes: tuple[int, ...] = ()
    # per level, the nodes sorted by domain and where each domain's run starts (then the same for the
    # domains below each domain): nodes_in and children are two slices, whatever the cluster's size
    _members: tuple[tuple[np.ndarray, np.ndarray], ...] = field(init=False)
    _kids: tuple[tuple[np.ndarray, np.ndarray], ...] = field(init=False)
    _node_index: dict[str, int] = field(init=False)

    def __post_init__(self) -> None:
        levels, names = tuple(self.levels), tuple(self.node_names)
        check_levels(levels)
        if not len(self.membership) == len(self.domain_names) == len(self.parents) == len(levels):
            raise TopologyError(f"{len(levels)} levels need as many membership, name and parent arrays")
        if not 1 <= len(names) <= MAX_NODES:
            raise TopologyError(f"a topology has 1 to {MAX_NODES:,} nodes, not {len(names):,}")
        membership = tuple(frozen(codes) for codes in self.membership)
        parents = tuple(frozen(up) for up in self.parents)
        domain_names = tuple(tuple(level_names) for level_names in self.domain_names)
        for k, level in enumerate(levels):
            check_level(level, membership[k], domain_names[k], parents[k], len(names),
                        membership[k - 1] if k else None, len(domain_names[k - 1]) if k else 0)
        if any(not isinstance(size, int) or size <= 0 for size in self.block_sizes):
            raise TopologyError(f"block sizes are positive node counts, got {self.block_sizes!r}")
        counts = [len(level_names) for level_names in domain_names]
        settled = {"levels": levels, "node_names": names, "membership": membership,
                   "domain_names": domain_names, "parents": parents, "block_sizes": tuple(self.block_sizes),
                   "_node_index": node_index(names),
                   "_members": tuple(runs(codes, count) for codes, count in zip(membership, counts)),
                   "_kids": tuple(runs(up, count) for up, count in zip(parents[1:], counts))}
        for attribute, value in settled.items():
            object.__setattr__(self, attribute, value)

    @classmethod
    def from_labels(cls, levels: Sequence[str], node_names: Sequence[str],
                    labels: Sequence[Sequence[str | None]], *, source: str = "",
                    block_sizes: tuple[int, ...] = ()) -> Topology:
        """The topology whose node ``i`` is named ``node_names[i]`` and lies, at ``levels[k]``, in the
        domain labelled ``labels[k][i]`` under its domain at the level above: the domain's name is the path
        of labels from the top.  A label ``None`` (not at the top) continues the domain above down one
        level, under the same name: a tree whose leaves lie at different depths, as Slurm's may.  Domains
        are numbered in the order their first node comes.

        >>> Topology.from_labels(("PSW", "ASW"), ["a", "b", "c"],
        ...                      [["P1", "P2", "P2"], ["S1", "S1", None]]).domains("ASW")
        ['P1/S1', 'P2/S1', 'P2']
        >>> Topology.from_labels(("rack",), ["a", "b"], [["r0", " "]])
        Traceback (most recent call last):
        ...
        simcluster.topology.arrays.TopologyError: node 'b' has no rack: every node needs one
        """
        levels, names = tuple(levels), tuple(node_names)
        membership, domain_names, parents = labelled_domains(levels, names, labels)
        return cls(levels, names, tuple(membership), tuple(domain_names), tuple(parents), source=source,
                   block_sizes=block_sizes)

    @property
    def all_levels(self) -> tuple[str, ...]:
        """The named levels from the top down, then :data:`NODE`."""
        return (*self.levels, NODE)

    @property
    def node_count(self) -> int:
        return len(self.node_names)

    def level_index(self, level: str) -> int:
        """``level``'s place from the top (0); :data:`NODE` is ``len(levels)``.

        >>> Topology.from_labels(("rack",), ["a"], [["r0"]]).level_index("block")
        Traceback (most recent call last):
        ...
        simcluster.topology.arrays.TopologyError: no level 'block' in this topology; its levels are 'rack',
        'node'
        """
        if level == NODE:
            return len(self.levels)
        if level in self.levels:
            return self.levels.index(level)
        known = ", ".join(repr(name) for name in self.all_levels)
        raise TopologyError(f"no level {level!r} in this topology; its levels are {known}", level=level)

    def domains(self, level: str) -> list[str]:
        """The path names of ``level``'s domains, by index (at :data:`NODE`: the node names)."""
        k = self.level_index(level)
        return list(self.domain_names[k] if k < len(self.levels) else self.node_names)

    def domain_index(self, level: str, name: str) -> int:
        """The index of the domain named ``name`` (its path from the top) at ``level``."""
        k = self.level_index(level)
        if k == len(self.levels):
            return self.node_index(name)
        try:
            return self.domain_names[k].index(name)
        except ValueError:
            raise TopologyError(f"no {level} named {name!r} (a domain is named by its path from the top, "
                                f"e.g. {self.domain_names[k][0]!r})", level=level) from None

    def node_index(self, name: str) -> int:
        try:
            return self._node_index[name]
        except KeyError:
            raise TopologyError(f"no node named {name!r}") from None

    def domain_array(self, level: str) -> np.ndarray:
        """Node index → domain index at ``level``, read-only (at :data:`NODE`: each node its own)."""
        k = self.level_index(level)
        return self.membership[k] if k < len(self.levels) else frozen(np.arange(self.node_count))

    def domain_of(self, node: int, level: str) -> int:
        """Node ``node``'s domain index at ``level`` (at :data:`NODE`: the node itself)."""
        k, node = self.level_index(level), self._checked_node(node)
        return node if k == len(self.levels) else int(self.membership[k][node])

    def _checked_node(self, node: int) -> int:
        if not 0 <= node < self.node_count:
            raise TopologyError(f"no node {node}: the nodes are 0..{self.node_count - 1}")
        return int(node)

    def sizes(self, level: str) -> np.ndarray:
        """The number of nodes in each of ``level``'s domains."""
        k = self.level_index(level)
        if k == len(self.levels):
            return np.ones(self.node_count, dtype=np.intp)
        return np.diff(self._members[k][1])

    def nodes_in(self, level: str, domain: int) -> np.ndarray:
        """The indices of the nodes in ``domain`` of ``level``, ascending (a read-only view)."""
        k = self.level_index(level)
        if k == len(self.levels):
            return frozen([self._checked_node(domain)])
        order, starts = self._members[k]
        return order[starts[domain]:starts[domain + 1]]

    def children(self, level: str, domain: int) -> np.ndarray:
        """What lies right below ``domain`` of ``level``: domain indices of the next level down, or node
        indices below the lowest named level."""
        k = self.level_index(level)
        if k == len(self.levels):
            raise TopologyError("a node has no children: it is the lowest level", level=level)
        if k == len(self.levels) - 1:
            return self.nodes_in(level, domain)
        order, starts = self._kids[k]
        return order[starts[domain]:starts[domain + 1]]

    def spanned_level(self, nodes: Sequence[int] | np.ndarray) -> str | None:
        """The highest level at which ``nodes`` lie in more than one domain: :data:`NODE` when they are
        several nodes within one domain of the lowest named level, None for one node (or none)."""
        nodes = np.asarray(nodes, dtype=np.intp).ravel()
        if nodes.size == 0 or (nodes == nodes[0]).all():
            return None
        for level, codes in zip(self.levels, self.membership):
            found = codes[nodes]
            if (found != found[0]).any():
                return level
        return NODE

    def subset(self, nodes: Sequence[int] | np.ndarray) -> Topology:
        """The topology of ``nodes`` alone, in that order; domains left empty are dropped, the others keep
        their order and names."""
        nodes = np.asarray(nodes, dtype=np.intp).ravel()
        if nodes.size == 0 or nodes.min() < 0 or nodes.max() >= self.node_count:
            raise TopologyError(f"a subset names 1 or more of the {self.node_count:,} nodes by index")
        if np.unique(nodes).size != nodes.size:
            raise TopologyError("a subset names each node once")
        membership, domain_names, parents = [], [], []
        renumbered_above = None
        for codes, level_names, up in zip(self.membership, self.domain_names, self.parents):
            kept = np.zeros(len(level_names), dtype=bool)
            kept[codes[nodes]] = True
            renumbered = np.cumsum(kept) - 1
            membership.append(renumbered[codes[nodes]])
            domain_names.append(tuple(compress(level_names, kept)))
            parents.append(up[kept] if renumbered_above is None else renumbered_above[up[kept]])
            renumbered_above = renumbered
        return Topology(self.levels, tuple(self.node_names[i] for i in nodes.tolist()), tuple(membership),
                        tuple(domain_names), tuple(parents), self.source, self.block_sizes)

    def reordered(self, order: Sequence[int] | np.ndarray) -> Topology:
        """The same topology with its nodes in ``order`` (a permutation of all of them)."""
        order = np.asarray(order, dtype=np.intp).ravel()
        if order.size != self.node_count:
            raise TopologyError(f"an order lists all {self.node_count:,} nodes, not {order.size:,}")
        return self.subset(order)

    def for_cluster(self, node_names: Sequence[str]) -> tuple[Topology, str]:
        """This topology matched to a cluster's nodes, and a one-line note saying how, for the run's notes.

        Rows match nodes by name where every one of the cluster's node names is in the file (rows of other
        nodes are left out), else by order: row ``i`` is the cluster's ``i``-th node, and the counts must
        be equal.  Either way the topology's node ``i`` is the cluster's, under the cluster's name.

        >>> topology = Topology.from_labels(("rack",), ["a", "b", "c"], [["r0", "r1", "r1"]],
        ...                                 source="topo.csv")
        >>> matched, note = topology.for_cluster(["c", "a"])
        >>> matched.node_names, matched.domains("rack")
        (('c', 'a'), ['r0', 'r1'])
        >>> print(note)
        topology topo.csv: the cluster's 2 nodes matched by name (1 row not in the cluster left out)
        >>> print(topology.for_cluster(["vc0/n0", "vc0/n1", "vc0/n2"])[1])
        topology topo.csv: rows matched the cluster's 3 nodes by order (its node names, e.g. 'vc0/n0', are
        not in the file)
        """
        names = [str(name) for name in node_names]
        where = self.source or "the topology"
        if not names or len(set(names)) != len(names):
            raise TopologyError("a cluster names each of its nodes once, and has at least one")
        missing = next((name for name in names if name not in self._node_index), None)
        if missing is None:
            order = np.fromiter(map(self._node_index.__getitem__, names), dtype=np.intp, count=len(names))
            left = self.node_count - len(names)
            extra = f" ({left:,} row{'s' * (left != 1)} not in the cluster left out)" if left else ""
            matched = self if not left and (order == np.arange(len(order))).all() else self.subset(order)
            return matched, f"topology {where}: the cluster's {len(names):,} nodes matched by name{extra}"
        if len(names) != self.node_count:
            raise TraceError(where, f"has {self.node_count:,} nodes but the cluster has {len(names):,}, and "
                             f"not every cluster node is in it by name (e.g. {missing!r}): rows match the "
                             "cluster's nodes by name, or else by order when the counts are equal")
        note = (f"topology {where}: rows matched the cluster's {len(names):,} nodes by order (its node "
                f"names, e.g. {missing!r}, are not in the file)")
        return replace(self, node_names=tuple(names)), note

    def describe(self) -> str:
        """One line: the node count and the domains at each level."""
        counts = ", ".join(f"{len(names):,} {level}" for level, names in zip(self.levels, self.domain_names,
                                                                            strict=True))
        return f"{self.node_count:,} nodes: {counts}"

    def __reduce__(self) -> tuple[type[Topology], tuple]:
        # rebuilt through the constructor (to a sweep's worker, say): its arrays come back read-only
        return Topology, (self.levels, self.node_names, self.membership, self.domain_names, self.parents,
                          self.source, self.block_sizes)

    def __repr__(self) -> str:
        origin = f" from {self.source}" if self.source else ""
        return f"<Topology of {self.describe()}{origin}>"


def cluster_nodes(topology: Topology) -> list[str]:
    """The nodes of a cluster that the topology defines (one VC whose nodes are the file's rows), in row
    order: a cluster built from them matches the topology by name.

    >>> cluster_nodes(Topology.from_labels(("rack",), ["a", "b"], [["r0", "r0"]]))
    ['a', 'b']
    """
    return list(topology.node_names)
