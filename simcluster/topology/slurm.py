"""Slurm's topology.conf as a :class:`~simcluster.topology.model.Topology`, in either of its forms.

The tree form (topology/tree): ``SwitchName=s0 Nodes=tux[0-3]`` hangs nodes under a leaf switch and
``SwitchName=s2 Switches=s[0-1]`` switches under a higher one.  The levels are the switch tree's depths, named
``switch1`` (the top switches) to ``switchK`` (the leaf switches), K the depth of the deepest leaf.  Where a
leaf lies higher than others (an unbalanced tree, or a switch listing nodes besides switches), its nodes'
domain goes on down unchanged, under the same name, to ``switchK``.  Several top switches (a forest, which
Slurm allows: a job then never spans two trees) are several domains at ``switch1``; no top is invented, as
a topology's top level may hold several domains anyway.  A switch with no node below it is no domain.

The block form (topology/block): ``BlockName=b1 Nodes=node[01-18]`` lines make the level ``block``, and
``BlockSizes=18,36`` (node counts, each a power-of-two multiple of the first, the planning base block size) is
kept in :attr:`~simcluster.topology.model.Topology.block_sizes`, which a run's pools carry to ``slurm-block``
(:mod:`~simcluster.placement.slurm_topology`).  Without BlockSizes, as in Slurm: the first block's node count
times 1, 2, 4, 8 and 16, up to the first that covers every block.  A block with fewer nodes than the planning
base block size is refused, as Slurm refuses it.

As in Slurm, key names are case-insensitive, ``#`` starts a comment, a line ending in ``\\`` goes on in the
next, node and switch lists are hostlist expressions (:mod:`~simcluster.topology.hostlist`) and
``LinkSpeed`` is read but unused.  topology/ring and Slurm's topology.yaml are not read.

>>> topology = parse_slurm_topology('''
... SwitchName=s0 Nodes=dev[0-5]
... SwitchName=s1 Nodes=dev[6-11]
... SwitchName=s2 Nodes=dev[12-17]
... SwitchName=s3 Switches=s[0-2]
... ''')
>>> topology.levels, topology.domains("switch2"), topology.spanned_level([0, 6])
(('switch1', 'switch2'), ['s3/s0', 's3/s1', 's3/s2'], 'switch2')
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from simcluster.errors import TraceError
from simcluster.topology.arrays import MAX_NODES, TopologyError
from simcluster.topology.hostlist import HostlistError, expand_hostlist
from simcluster.topology.model import Topology

MAX_SWITCH_NAME = 64  # Slurm's own limit on a SwitchName
KEYS = {  # what each kind of line may hold (by lower-case key), its first key first
    "switchname": ("SwitchName", "Switches", "Nodes", "LinkSpeed"),
    "blockname": ("BlockName", "Nodes"),
    "blocksizes": ("BlockSizes",),
}


@dataclass(slots=True)
class _Line:
    """One Key=Value line: its number, values by lower-case key, and keys as written (for messages)."""

    number: int
    values: dict[str, str]
    spelled: dict[str, str]

    @property
    def kind(self) -> str:
        return next(iter(self.values))


@dataclass(slots=True)
class _Domain:
    """A switch or block as its line defines it."""

    line: _Line
    children: list[str] = field(default_factory=list)
    nodes: list[str] = field(default_factory=list)


def parse_slurm_topology(text: str, source: str = "topology.conf") -> Topology:
    """The topology that the topology.conf ``text`` describes; ``source`` names it in errors, which name
    the line and key at fault as well.

    >>> parse_slurm_topology("SwitchName=s0 Nodes=a[1-2]\\nSwitchName=s1 Nodes=a2", "t.conf")
    Traceback (most recent call last):
    ...
    simcluster.errors.TraceError: t.conf, line 2, field 'Nodes': node 'a2' is under switch 's0' (line 1) too:
    a node hangs under one leaf switch
    """
    lines = list(_lines(text, source))
    kinds = {line.kind for line in lines} - {"blocksizes"}
    if not kinds:
        raise TraceError(source, "no SwitchName= or BlockName= line: no node is placed")
    if len(kinds) > 1:
        first = next(line.kind for line in lines if line.kind != "blocksizes")
        second = next(line for line in lines if line.kind not in (first, "blocksizes"))
        raise TraceError(source, "mixes the tree form (SwitchName=) and the block form (BlockName=)",
                         line=second.number, field=second.spelled[second.kind])
    if "switchname" in kinds:
        if any(line.kind == "blocksizes" for line in lines):
            sizes = next(line for line in lines if line.kind == "blocksizes")
            raise TraceError(source, "BlockSizes belongs to the block form, not to switches",
                             line=sizes.number, field=sizes.spelled["blocksizes"])
        return _tree(lines, source)
    return _blocks(lines, source)


def _lines(text: str, source: str) -> Iterator[_Line]:
    """The Key=Value lines of ``text``, comments and continuations resolved, each checked for its keys."""
    pending, start = "", 0
    for number, raw in enumerate(text.splitlines(), start=1):
        body = re.sub(r"(?<!\\)#.*", "", raw).replace("\\#", "#").rstrip()
        if body.endswith("\\"):  # goes on in the next line; the whole is named by its first line
            pending, start = pending + body[:-1], start or number
            continue
        body, number, pending, start = pending + body, start or number, "", 0
        if body.strip():
            yield _parsed(body, number, source)
    if pending.strip():
        yield _parsed(pending, start, source)


def _parsed(body: str, number: int, source: str) -> _Line:
    values: dict[str, str] = {}
    spelled: dict[str, str] = {}
    for token in body.split():
        key, equals, value = token.partition("=")
        if not equals or not key:
            raise TraceError(source, f"expected Key=Value, got {token[:80]!r}", line=number)
        lower = key.lower()
        if lower in values:
            raise TraceError(source, f"{key} is given twice on one line", line=number, field=key)
        if not value:
            raise TraceError(source, f"{key}= has no value", line=number, field=key)
        values[lower], spelled[lower] = value, key
    first = next(iter(values))
    if first == "ringname":
        raise TraceError(source, "topology/ring (RingName=) orders nodes in rings, not in domains: not read "
                         "here", line=number, field=spelled[first])
    if first not in KEYS:
        raise TraceError(source, "a line starts with SwitchName=, BlockName= or BlockSizes=", line=number,
                         field=spelled[first])
    allowed = [key.lower() for key in KEYS[first]]
    unknown = next((key for key in values if key not in allowed), None)
    if unknown is not None:
        allowed_text = ", ".join(KEYS[first][1:]) or "nothing else"
        raise TraceError(source, f"{spelled[unknown]}= is not a key of a {spelled[first]}= line (it takes "
                         f"{allowed_text})", line=number, field=spelled[unknown])
    return _Line(number, values, spelled)


def _names(line: _Line, key: str, source: str) -> list[str]:
    if key not in line.values:
        return []
    try:
        return expand_hostlist(line.values[key])
    except HostlistError as exc:
        raise TraceError(source, str(exc), line=line.number, field=line.spelled[key]) from None


def _defined(lines: list[_Line], kind: str, source: str) -> dict[str, _Domain]:
    """Each switch or block by name, in the file's order, with what it lists."""
    domains: dict[str, _Domain] = {}
    placed: dict[str, str] = {}  # node → the switch or block that lists it
    for line in (line for line in lines if line.kind == kind):
        name, key = line.values[kind], line.spelled[kind]
        if name in domains:
            raise TraceError(source, f"{kind[:-4]} {name!r} is defined twice (first on line "
                             f"{domains[name].line.number})", line=line.number, field=key)
        if "/" in name or len(name) > MAX_SWITCH_NAME:
            raise TraceError(source, f"{kind[:-4]} name {name[:80]!r} holds a '/' or is longer than "
                             f"{MAX_SWITCH_NAME} characters", line=line.number, field=key)
        domain = _Domain(line, _names(line, "switches", source), _names(line, "nodes", source))
        domains[name] = domain
        for node in domain.nodes:
            if node in placed:
                leaf = "leaf switch" if kind == "switchname" else "block"
                raise TraceError(source, f"node {node!r} is under {kind[:-4]} {placed[node]!r} (line "
                                 f"{domains[placed[node]].line.number}) too: a node hangs under one {leaf}",
                                 line=line.number, field=line.spelled["nodes"])
            placed[node] = name
        if len(placed) > MAX_NODES:
            raise TraceError(source, f"more than {MAX_NODES:,} nodes", line=line.number)
    if not placed:
        raise TraceError(source, "no line lists nodes (Nodes=): a topology needs at least one node")
    return domains


def _tree(lines: list[_Line], source: str) -> Topology:
    switches = _defined(lines, "switchname", source)
    parent: dict[str, str] = {}
    for name, switch in switches.items():
        for child in switch.children:
            where = {"line": switch.line.number, "field": switch.line.spelled["switches"]}
            if child not in switches:
                raise TraceError(source, f"switch {child!r} is not defined (no SwitchName={child} line)",
                                 **where)
            if child in parent:
                raise TraceError(source, f"switch {child!r} is already under switch {parent[child]!r} (line "
                                 f"{switches[parent[child]].line.number}): a switch has one parent", **where)
            parent[child] = name
    paths = _paths(switches, parent, source)
    depth = max(len(paths[name]) for name, switch in switches.items() if switch.nodes)
    nodes, labels = [], [[] for _ in range(depth)]
    for name, switch in switches.items():
        path = paths[name]
        for node in switch.nodes:
            nodes.append(node)
            for k in range(depth):
                labels[k].append(path[k] if k < len(path) else None)
    levels = tuple(f"switch{k + 1}" for k in range(depth))
    return _built(levels, nodes, labels, switches, source)


def _paths(switches: dict[str, _Domain], parent: dict[str, str], source: str) -> dict[str, list[str]]:
    """Each switch's path from its top switch; a switch reached from no top lies on a cycle."""
    paths = {name: [name] for name in switches if name not in parent}
    stack = list(paths)
    while stack:
        name = stack.pop()
        for child in switches[name].children:
            paths[child] = [*paths[name], child]
            stack.append(child)
    stuck = next((name for name in switches if name not in paths), None)
    if stuck is not None:
        cycle = [stuck]
        while parent[cycle[-1]] not in cycle:
            cycle.append(parent[cycle[-1]])
        cycle = cycle[cycle.index(parent[cycle[-1]]):]
        line = switches[cycle[-1]].line
        shown = " → ".join(reversed([*cycle, cycle[0]]))
        raise TraceError(source, f"the switches form a cycle ({shown}): a topology is a tree",
                         line=line.number, field=line.spelled["switches"])
    return paths


def _blocks(lines: list[_Line], source: str) -> Topology:
    blocks = _defined(lines, "blockname", source)
    sizes = _block_sizes(lines, source)
    base = sizes[0] if sizes else len(next(iter(blocks.values())).nodes)
    small = next((block for block in blocks.values() if len(block.nodes) < base), None)
    if small is not None:
        name = small.line.values["blockname"]
        planned = f"the base block's {base}"
        if sizes:  # Slurm plans every block at the first BlockSize and refuses one smaller
            given = next(line for line in lines if line.kind == "blocksizes")
            planned = (f"the planning base block size {base}, the first of BlockSizes={given.values['blocksizes']} "
                       f"(line {given.number}): Slurm refuses a block smaller than it")
        raise TraceError(source, f"block {name!r} has {len(small.nodes)} nodes, fewer than {planned}",
                         line=small.line.number, field=small.line.spelled.get("nodes", small.line.spelled["blockname"]))
    if not sizes:  # Slurm's default: 1, 2, 4, 8 and 16 base blocks, up to the first covering them all
        sizes = tuple(base << level for level in range(5) if level == 0 or 1 << (level - 1) < len(blocks))
    nodes = [node for block in blocks.values() for node in block.nodes]
    labels = [[name for name, block in blocks.items() for _ in block.nodes]]
    return _built(("block",), nodes, labels, blocks, source, sizes)


def _block_sizes(lines: list[_Line], source: str) -> tuple[int, ...]:
    """BlockSizes as node counts, each a power-of-two multiple (up to 2**15) of the first and larger than
    the one before; () when the file gives none."""
    given = [line for line in lines if line.kind == "blocksizes"]
    if not given:
        return ()
    line = given[-1]
    where = {"line": line.number, "field": line.spelled["blocksizes"]}
    if len(given) > 1:
        raise TraceError(source, f"BlockSizes is given twice (first on line {given[0].number})", **where)
    texts = line.values["blocksizes"].split(",")
    if not all(text.strip().isdigit() and int(text) > 0 for text in texts):
        given_text = line.values["blocksizes"]
        raise TraceError(source, f"BlockSizes are positive node counts, got {given_text[:80]!r}", **where)
    sizes = tuple(int(text) for text in texts)
    for before, size in itertools.pairwise(sizes):
        ratio, rest = divmod(size, sizes[0])
        if rest or ratio & (ratio - 1) or ratio > 1 << 15 or size <= before:
            raise TraceError(source, f"BlockSize {size} is not a larger power-of-two multiple of the base "
                             f"block size {sizes[0]} than {before}", **where)
    return sizes


def _built(levels: tuple[str, ...], nodes: list[str], labels: list[list[str | None]],
           domains: dict[str, _Domain], source: str, block_sizes: tuple[int, ...] = ()) -> Topology:
    try:
        return Topology.from_labels(levels, nodes, labels, source=source, block_sizes=block_sizes)
    except TopologyError as exc:  # a node name the model refuses: name the line that lists it
        if exc.row is None:
            raise TraceError(source, exc.message) from None
        node = nodes[exc.row]
        line = next(domain.line for domain in domains.values() if node in domain.nodes)
        raise TraceError(source, exc.message, line=line.number, field=line.spelled.get("nodes")) from None
