"""One description of a cluster for every source: a trace's VC config, ``--cluster``, a node list.

A :class:`ClusterSpec` is rows of (VC, GPU type, nodes, GPUs per node, GPU memory), in node order;
:class:`~simcluster.cluster.Cluster` builds the nodes from it.  The sources:

* a VC config (``vc,num``: nodes per VC, of ``--gpus-per-node`` GPUs of the untyped type ``gpu``),
  with an optional ``gpu_type`` column (and ``memory_mib``): a VC may then list several rows, one
  per type (:func:`vc_types`);
* ``--cluster v100:4,p100:4,k80:4`` — GPU counts per type (``TYPE:COUNT[:MEMORY_MIB]``, separated by
  ``,`` or ``+``), each type's GPUs on nodes of ``--gpus-per-node`` (the last node may hold fewer),
  all in one VC named ``cluster`` (:func:`parse_cluster`);
* a node-list CSV (``sn,cpu_milli,memory_mib,gpu,model``, the Alibaba openb form): one row per node,
  its GPU count and model, one VC (:func:`load_node_list`).

A VC config may carry a ``spot`` column (how many of the row's nodes are spot nodes: its last ones), a node list a
``spot`` column per node (true/false, 1/0): the spot nodes of :mod:`simcluster.features.spot`, as ``--spot-nodes``
names them (:meth:`ClusterSpec.spot_positions`).

GPU memory comes from :data:`GPU_MEMORY_MIB` unless given.

>>> spec = parse_cluster("v100:12,k80:4:12288", gpus_per_node=8)
>>> [(g.gpu_type, g.nodes, g.gpus_per_node) for g in spec.groups], spec.describe()
([('v100', 1, 8), ('v100', 1, 4), ('k80', 1, 4)], 'v100:12, k80:4')
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from simcluster.errors import TraceError
from simcluster.side_files import read_side_csv

if TYPE_CHECKING:
    from simcluster.topology.costs import ClusterTopology

DEFAULT_GPU_TYPE = "gpu"  # the type of every GPU of a trace or cluster that names none
ONE_VC = "cluster"  # the VC of a cluster given as --cluster or a node list
GPU_MEMORY_MIB: dict[str, int] = {
    "k80": 12 * 1024, "p100": 16 * 1024, "v100": 16 * 1024, "t4": 16 * 1024, "a10": 24 * 1024,
    "v100m16": 16 * 1024, "v100m32": 32 * 1024, "a100": 40 * 1024, "rtx3090": 24 * 1024, "h100": 80 * 1024,
    "h200": 141 * 1024,
    # Alibaba's in-house G2 and G3 are not documented; 16 GiB is our assumption (see docs/heterogeneous.md)
    "g2": 16 * 1024, "g3": 16 * 1024,
}
DEFAULT_MEMORY_MIB = 16 * 1024
_ITEM = re.compile(r"^\s*([A-Za-z][\w.-]*)\s*:\s*(\d+)\s*(?::\s*(\d+)\s*)?$")


@dataclass(frozen=True)
class NodeGroup:
    """``nodes`` nodes of ``gpus_per_node`` GPUs of one type in one VC."""

    vc: str
    gpu_type: str
    nodes: int
    gpus_per_node: int
    memory_mib: float = 0.0  # per GPU; 0: not known
    spot: int = 0  # how many of its nodes are spot nodes (its last ones): a spot column


@dataclass(frozen=True)
class ClusterSpec:
    """The cluster's nodes as rows, in node order; ``type_order`` orders the GPU types (default: as met);
    ``topology`` the domains above its nodes, matched to them by name, and what spanning them costs
    (:class:`~simcluster.topology.costs.ClusterTopology`; None: interchangeable nodes)."""

    groups: tuple[NodeGroup, ...]
    source: str = ""
    type_order: tuple[str, ...] = ()
    topology: ClusterTopology | None = None

    @property
    def vcs(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(g.vc for g in self.groups))

    @property
    def gpu_types(self) -> tuple[str, ...]:
        met = tuple(dict.fromkeys(g.gpu_type for g in self.groups))
        return tuple(t for t in self.type_order if t in met) + tuple(t for t in met if t not in self.type_order)

    @property
    def typed(self) -> bool:
        """Whether any GPU has a type of its own (not the untyped ``gpu`` of traces without types)."""
        return any(g.gpu_type != DEFAULT_GPU_TYPE for g in self.groups)

    def groups_of(self, vc: str) -> list[tuple[str, int, int, float]]:
        """``vc``'s rows as (GPU type, nodes, GPUs per node, memory), nodes of a type together in type order."""
        rank = {t: i for i, t in enumerate(self.gpu_types)}
        rows = [g for g in self.groups if g.vc == vc]
        rows.sort(key=lambda g: rank[g.gpu_type])  # stable: node order within a type is kept
        return [(g.gpu_type, g.nodes, g.gpus_per_node, g.memory_mib) for g in rows]

    @property
    def level_costs(self) -> tuple[float, ...]:
        """What spanning each level of its topology costs, top-down, then the node level
        (:mod:`simcluster.topology.costs`); () without a topology (spanning nodes costs ``--spread-penalty``)."""
        return self.topology.costs if self.topology is not None else ()

    @property
    def node_gpus(self) -> dict[str, int]:
        """Every node's GPUs by its name as the engine gives it (``vc0/n3``: its VC and its position there, a VC's
        nodes of a type together in type order), in the engine's node order.

        >>> groups = (NodeGroup("a", "v100", 1, 8), NodeGroup("b", "v100", 1, 8), NodeGroup("a", "k80", 2, 4))
        >>> ClusterSpec(groups, type_order=("k80",)).node_gpus  # (a's k80 nodes first: its type order)
        {'a/n0': 4, 'a/n1': 4, 'a/n2': 8, 'b/n0': 8}
        """
        found: dict[str, int] = {}
        for vc in self.vcs:
            index = 0
            for _type, count, per_node, _memory in self.groups_of(vc):
                for _ in range(count):
                    found[f"{vc}/n{index}"] = per_node
                    index += 1
        return found

    @property
    def node_names(self) -> list[str]:
        """Every node's name, in the engine's node order (:attr:`node_gpus`).

        >>> ClusterSpec.uniform({"a": 2, "b": 1}).node_names
        ['a/n0', 'a/n1', 'b/n0']
        """
        return list(self.node_gpus)

    @property
    def vc_nodes(self) -> dict[str, int]:
        nodes: dict[str, int] = {}
        for g in self.groups:
            nodes[g.vc] = nodes.get(g.vc, 0) + g.nodes
        return nodes

    @property
    def total_gpus(self) -> int:
        return sum(g.nodes * g.gpus_per_node for g in self.groups)

    def type_gpus(self, vc: str | None = None) -> dict[str, int]:
        """GPUs per type (of one VC, or of the whole cluster), in type order."""
        gpus = dict.fromkeys(self.gpu_types, 0)
        for g in self.groups:
            if vc is None or g.vc == vc:
                gpus[g.gpu_type] += g.nodes * g.gpus_per_node
        return {t: n for t, n in gpus.items() if n}

    def describe(self) -> str:
        text = ", ".join(f"{t}:{n}" for t, n in self.type_gpus().items())
        return text if len(self.vcs) == 1 else f"{text} in {len(self.vcs)} VCs"

    def as_dict(self) -> dict[str, dict[str, float]]:
        """GPUs and memory per type, for ``summary.json``."""
        memory = {g.gpu_type: g.memory_mib for g in self.groups}
        return {t: {"gpus": n, "memory_mib": memory[t]} for t, n in self.type_gpus().items()}

    @classmethod
    def uniform(cls, vc_nodes: Mapping[str, int], gpus_per_node: int = 8, source: str = "") -> ClusterSpec:
        """Untyped nodes of ``gpus_per_node`` GPUs, ``vc_nodes[vc]`` per VC."""
        return cls(tuple(NodeGroup(vc, DEFAULT_GPU_TYPE, n, gpus_per_node) for vc, n in vc_nodes.items()), source)

    @property
    def has_spot(self) -> bool:
        """Whether a spot column named any node spot."""
        return any(g.spot for g in self.groups)

    def spot_positions(self) -> dict[str, list[int]]:
        """The spot nodes a spot column names, per VC, by their positions in the VC (``vc/nK``: K, the engine's
        node order); VCs without any are left out.

        >>> groups = (NodeGroup("a", "v100", 2, 8, spot=1), NodeGroup("a", "k80", 3, 4, spot=2))
        >>> ClusterSpec(groups, type_order=("k80",)).spot_positions()  # (a's k80 nodes first: n1, n2 of n0-n2)
        {'a': [1, 2, 4]}
        """
        found: dict[str, list[int]] = {}
        rank = {t: i for i, t in enumerate(self.gpu_types)}
        for vc in self.vcs:
            index = 0
            for g in sorted((g for g in self.groups if g.vc == vc), key=lambda g: rank[g.gpu_type]):  # (groups_of)
                if g.spot:
                    found.setdefault(vc, []).extend(range(index + g.nodes - g.spot, index + g.nodes))
                index += g.nodes
        return found

    def without(self, borrowed: Mapping[str, int]) -> ClusterSpec:
        """The cluster once ``borrowed[vc]`` nodes are taken out of each VC (its last nodes; spot ones first within
        a row)."""
        left = dict(borrowed)
        groups = []
        for g in reversed(self.groups):
            take = min(left.get(g.vc, 0), g.nodes)
            left[g.vc] = left.get(g.vc, 0) - take
            if g.nodes > take:
                groups.append(replace(g, nodes=g.nodes - take, spot=max(0, g.spot - take)))
        return replace(self, groups=tuple(reversed(groups)))

    def only(self, vcs: Iterable[str]) -> ClusterSpec:
        keep = set(vcs)
        return replace(self, groups=tuple(g for g in self.groups if g.vc in keep))

    def with_vcs(self, added: Iterable[NodeGroup]) -> ClusterSpec:
        return replace(self, groups=self.groups + tuple(added))


def parse_cluster(text: str, gpus_per_node: int = 8) -> ClusterSpec:
    """``--cluster``: ``"v100:4,p100:4,k80:4"`` (``+`` also separates, so that a sweep's ``--set
    cluster=v100:4+k80:4`` stays one value; ``TYPE:COUNT:MEMORY_MIB`` sets the memory), or a node-list
    CSV path — one VC."""
    if text.endswith(".csv") or Path(text).is_file():
        return load_node_list(text)
    if gpus_per_node <= 0:
        raise ValueError(f"--gpus-per-node must be positive, got {gpus_per_node}")
    groups: list[NodeGroup] = []
    seen: set[str] = set()
    for part in re.split(r"[,+]", text):
        match = _ITEM.match(part)
        if not match:
            raise ValueError(f"--cluster: expected TYPE:COUNT[:MEMORY_MIB] items separated by commas, got {part!r} "
                             f"in {text!r}")
        name, count = match[1].lower(), int(match[2])
        if name in seen:
            raise ValueError(f"--cluster: GPU type {name!r} is listed twice in {text!r}")
        if count <= 0:
            raise ValueError(f"--cluster: GPU count of {name!r} must be positive, got {count}")
        seen.add(name)
        memory = float(match[3]) if match[3] else float(GPU_MEMORY_MIB.get(name, DEFAULT_MEMORY_MIB))
        full, rest = divmod(count, gpus_per_node)
        if full:
            groups.append(NodeGroup(ONE_VC, name, full, gpus_per_node, memory))
        if rest:
            groups.append(NodeGroup(ONE_VC, name, 1, rest, memory))
    return ClusterSpec(tuple(groups), text)


def load_node_list(path: str | Path) -> ClusterSpec:
    """An openb-style node list (``sn,...,gpu,model``): nodes with ``gpu`` GPUs of ``model`` each, one VC;
    GPU types in alphabetical order, nodes in the file's order.  An optional ``spot`` column says which nodes are
    spot nodes (:func:`spot_flag`)."""
    raw = read_side_csv(path, "node-list file", ("gpu", "model"))
    spots = raw["spot"] if "spot" in raw.columns else [""] * len(raw)
    groups: list[NodeGroup] = []
    for row, (gpus, model, spot_cell) in enumerate(zip(raw["gpu"], raw["model"], spots)):
        if not gpus.strip().isdigit():
            raise TraceError(path, f"GPU count must be a non-negative integer, got {gpus!r}", line=row + 2, field="gpu")
        spot = spot_flag(spot_cell, path, row + 2)
        if int(gpus) == 0:
            continue
        if not model.strip():
            raise TraceError(path, "empty GPU model", line=row + 2, field="model")
        name, count = model.strip().lower(), int(gpus)
        last = groups[-1] if groups else None
        # (a row's spot nodes are its last ones: an on-demand node after spot ones begins a row of its own)
        if last is not None and (last.gpu_type, last.gpus_per_node) == (name, count) and (spot or not last.spot):
            groups[-1] = replace(last, nodes=last.nodes + 1, spot=last.spot + spot)
        else:
            groups.append(NodeGroup(ONE_VC, name, 1, count, float(GPU_MEMORY_MIB.get(name, DEFAULT_MEMORY_MIB)),
                                    int(spot)))
    if not groups:
        raise TraceError(path, "no node with GPUs")
    return ClusterSpec(tuple(groups), str(path), tuple(sorted({g.gpu_type for g in groups})))


def spot_flag(text: Any, path: str | Path, line: int) -> bool:
    """A node list's ``spot`` cell: true/false or 1/0 (any case; empty: not spot); a :class:`TraceError` naming
    the file, line and field otherwise.

    >>> spot_flag("True", "nodes.csv", 2), spot_flag("0", "nodes.csv", 3), spot_flag("", "nodes.csv", 4)
    (True, False, False)
    >>> spot_flag("maybe", "nodes.csv", 5)
    Traceback (most recent call last):
    ...
    simcluster.errors.TraceError: nodes.csv, line 5, field 'spot': spot must be true/false or 1/0, got 'maybe'
    """
    given = str(text).strip().lower()
    if given not in ("", "true", "false", "1", "0"):
        raise TraceError(path, f"spot must be true/false or 1/0, got {str(text)!r}", line=line, field="spot")
    return given in ("true", "1")


def spot_nodes_cell(text: Any, nodes: int, path: str | Path, line: int) -> int:
    """A VC config's ``spot`` cell: how many of the row's ``nodes`` are spot nodes (a whole number, at most
    ``nodes``; empty: none); a :class:`TraceError` naming the file, line and field otherwise.

    >>> spot_nodes_cell("2", 4, "vcs.csv", 2), spot_nodes_cell("", 4, "vcs.csv", 3)
    (2, 0)
    >>> spot_nodes_cell("5", 4, "vcs.csv", 4)
    Traceback (most recent call last):
    ...
    simcluster.errors.TraceError: vcs.csv, line 4, field 'spot': spot nodes must be a whole number from 0 to the row's 4 nodes, got '5'
    """
    given = str(text).strip()
    if not given:
        return 0
    if not re.fullmatch(r"\d+", given) or int(given) > nodes:
        raise TraceError(path, f"spot nodes must be a whole number from 0 to the row's {nodes} nodes, got "
                         f"{str(text)!r}", line=line, field="spot")
    return int(given)


def vc_types(raw: Any, names: Any, count: str, path: str | Path, gpus_per_node: int = 8) -> ClusterSpec:
    """The rows of a VC config with a ``gpu_type`` column (``vc,num,gpu_type[,memory_mib]``; a VC may list one
    row per type) as a spec.  ``raw`` is the config as read, ``names`` its VC column and ``count`` its node
    count column, both already checked by :func:`~simcluster.traces.sizing.read_vc_config`; this reads the types
    (and a ``spot`` column: :func:`spot_nodes_cell`)."""
    memory = raw["memory_mib"] if "memory_mib" in raw.columns else [""] * len(raw)
    spots = raw["spot"] if "spot" in raw.columns else [""] * len(raw)
    groups, seen = [], set()
    for row, (vc, num, gpu_type, mib, spot) in enumerate(zip(names, raw[count], raw["gpu_type"], memory, spots)):
        vc, num, gpu_type, mib = str(vc).strip(), str(num).strip(), str(gpu_type).strip().lower(), str(mib).strip()
        if not vc and not num:
            continue
        if not re.fullmatch(r"[A-Za-z][\w.-]*", gpu_type):
            raise TraceError(path, f"GPU type must be a name such as v100, got {gpu_type!r}", line=row + 2,
                             field="gpu_type")
        if (vc, gpu_type) in seen:
            raise TraceError(path, f"VC {vc!r} lists GPU type {gpu_type!r} twice", line=row + 2, field="gpu_type")
        if mib and not re.fullmatch(r"\d+(\.\d*)?", mib):
            raise TraceError(path, f"memory must be a number of MiB, got {mib!r}", line=row + 2, field="memory_mib")
        seen.add((vc, gpu_type))
        groups.append(NodeGroup(vc, gpu_type, int(num), gpus_per_node,
                                float(mib) if mib else float(GPU_MEMORY_MIB.get(gpu_type, 0)),
                                spot_nodes_cell(spot, int(num), path, row + 2)))
    return ClusterSpec(tuple(groups), str(path))
