"""How a :class:`~simcluster.topology.model.Topology`'s arrays are built from labels and checked.

Kept apart from the model so that the model reads as its queries.  The loops over nodes run in C (dict and
map builtins, numpy): labels of 131,072 nodes become domain codes in milliseconds, and every check on a
label runs once per distinct label, not once per node.

>>> membership, names, parents = labelled_domains(("PSW", "ASW"), ["a", "b", "c"],
...                                               [["P1", "P2", "P2"], ["S1", "S1", "S2"]])
>>> membership[1].tolist(), names[1], parents[1].tolist()
([0, 1, 2], ('P1/S1', 'P2/S1', 'P2/S2'), [0, 1, 1])
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

NODE = "node"  # the lowest level, the node itself: never among the levels a file names
MAX_NODES = 10_000_000  # far above any cluster; a larger file is a mistake, refused before it fills memory
MAX_LABEL = 1_000  # characters of a node name or domain label
# texts that mean "no value" in the tables people export (pandas reads them as NaN)
MISSING = frozenset({"", "nan", "na", "n/a", "null", "none", "<na>"})


class TopologyError(ValueError):
    """A topology that cannot be built, or a level it lacks.  ``row`` (a node's index) and ``level`` (None:
    the node's name) say where, so that a loader can name its file's line and field; ``first`` is the row
    that listed first a name listed twice."""

    def __init__(self, message: str, row: int | None = None, level: str | None = None,
                 first: int | None = None) -> None:
        super().__init__(message)
        self.message, self.row, self.level, self.first = message, row, level, first


def labelled_domains(levels: tuple[str, ...], names: Sequence[str], labels: Sequence[Sequence[str | None]],
                     ) -> tuple[list[np.ndarray], list[tuple[str, ...]], list[np.ndarray]]:
    """Per level: each node's domain, the domains' path names and each domain's parent (-1 at the top),
    domains numbered by their first node; a label ``None`` continues the domain above under its name."""
    check_levels(levels)
    if len(labels) != len(levels):
        raise TopologyError(f"{len(levels)} levels but labels for {len(labels)}")
    membership, domain_names, parents = [], [], []
    above, above_names = np.zeros(len(names), dtype=np.intp), ("",)
    for k, (level, column) in enumerate(zip(levels, labels)):
        if len(column) != len(names):
            raise TopologyError(f"{len(names):,} nodes but {len(column):,} labels", level=level)
        codes, texts = _factorised(column)
        _check_labels(texts, codes, names, level, top=k == 0)
        domains, parent, label = _split_by_parent(above, codes, len(texts))
        membership.append(domains)
        parents.append(parent if k else np.full(len(parent), -1, dtype=np.intp))
        domain_names.append(tuple(_path(above_names[p], texts[t], k)
                                  for p, t in zip(parent.tolist(), label.tolist())))
        above, above_names = domains, domain_names[-1]
    return membership, domain_names, parents


def frozen(values: np.ndarray | Sequence[int]) -> np.ndarray:
    """A read-only copy as indices: what a topology holds, so that no caller can change it."""
    array = np.array(values, dtype=np.intp)
    array.setflags(write=False)
    return array


def runs(codes: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray]:
    """Indices sorted by code, and where each code's run starts (``count + 1`` bounds): the members of
    code ``c`` are one slice, ``order[starts[c]:starts[c + 1]]``."""
    order = frozen(np.argsort(codes, kind="stable"))
    starts = np.zeros(count + 1, dtype=np.intp)
    np.cumsum(np.bincount(codes, minlength=count), out=starts[1:])
    starts.setflags(write=False)
    return order, starts


def node_index(names: tuple[str, ...]) -> dict[str, int]:
    """Name → index, refusing a duplicate, empty or over-long name (the first in row order)."""
    index = dict(zip(names, range(len(names))))
    if len(index) != len(names):
        seen: dict[str, int] = {}
        for row, name in enumerate(names):
            if name in seen:
                raise TopologyError(f"node {name!r} is listed twice", row=row, first=seen[name])
            seen[name] = row
    lengths = np.fromiter(map(len, names), dtype=np.intp, count=len(names))
    empty = (i for i in np.flatnonzero(lengths <= 4).tolist() if names[i].strip().lower() in MISSING)
    bad = min([*empty, *np.flatnonzero(lengths > MAX_LABEL).tolist()], default=None)
    if bad is not None:
        long = lengths[bad] > MAX_LABEL
        problem = f"is {lengths[bad]:,} characters long (at most {MAX_LABEL:,})" if long else "is empty"
        raise TopologyError(f"node {bad}'s name {problem}", row=bad)
    return index


def check_levels(levels: tuple[str, ...]) -> None:
    if not levels:
        raise TopologyError("a topology needs at least one level above the node (e.g. rack)")
    for k, level in enumerate(levels):
        if not isinstance(level, str) or not level.strip():
            raise TopologyError(f"level {k + 1} has no name", level=str(level))
        if level == NODE:
            raise TopologyError(f"{NODE!r} is the level of the nodes themselves, not a level above them",
                                level=level)
        if level in levels[:k]:
            raise TopologyError(f"level {level!r} is named twice", level=level)


def check_level(level: str, codes: np.ndarray, names: tuple[str, ...], up: np.ndarray, nodes: int,
                codes_above: np.ndarray | None, count_above: int) -> None:
    """The invariants of one level's arrays: every node in a domain, every domain holding a node and lying
    in its nodes' domain at the level above, names unique."""
    if codes.shape != (nodes,) or up.shape != (len(names),):
        raise TopologyError(f"{level}: {nodes:,} node memberships and {len(names):,} parents expected",
                            level=level)
    if codes.min() < 0 or codes.max() >= len(names):
        raise TopologyError(f"{level}: a node's domain index is outside 0..{len(names) - 1}", level=level)
    if (np.bincount(codes, minlength=len(names)) == 0).any():
        raise TopologyError(f"{level}: a domain holds no node", level=level)
    if len(set(names)) != len(names):
        raise TopologyError(f"{level}: two domains share a name", level=level)
    if codes_above is None:
        if (up != -1).any():
            raise TopologyError(f"{level}: the top level's domains have no parent (-1)", level=level)
    elif up.min() < 0 or up.max() >= count_above or (up[codes] != codes_above).any():
        raise TopologyError(f"{level}: a domain's parent is not its nodes' domain at the level above",
                            level=level)


def _factorised(column: Sequence[str | None]) -> tuple[np.ndarray, list[str | None]]:
    """Codes of a column's labels, numbered by first appearance, and the labels by code."""
    texts = list(dict.fromkeys(column))
    index = dict(zip(texts, range(len(texts))))
    return np.fromiter(map(index.__getitem__, column), dtype=np.intp, count=len(column)), texts


def _check_labels(texts: list[str | None], codes: np.ndarray, names: Sequence[str], level: str,
                  top: bool) -> None:
    """Refuse the first node (in row order) whose label is missing, too long or holds a '/'; checked once per
    distinct label, which come in the order of their first node, and first all at once in C."""
    present = [text for text in texts if text is not None]
    if (len(present) == len(texts) or not top) and not _any_bad(present):
        return
    for code, text in enumerate(texts):
        if text is None and not top:
            continue
        if text is None or text.strip().lower() in MISSING:
            problem = f"has no {level}: every node needs one"
        elif len(text) > MAX_LABEL:
            problem = f"has a {level} label of {len(text):,} characters (at most {MAX_LABEL:,})"
        elif "/" in text:
            problem = (f"has the {level} label {text!r}, which holds a '/': domains are named by their path "
                       "from the top, 'G6/P10/S14'")
        else:
            continue
        row = int(np.argmax(codes == code))
        raise TopologyError(f"node {names[row]!r} {problem}", row=row, level=level)


def _any_bad(texts: list[str]) -> bool:
    return ("/" in "\x00".join(texts) or max(map(len, texts), default=0) > MAX_LABEL
            or not MISSING.isdisjoint(map(str.lower, map(str.strip, texts))))


def _split_by_parent(above: np.ndarray, codes: np.ndarray, labels: int,
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Domains as (parent, label) pairs numbered by first appearance: each node's domain, then each
    domain's parent and label code."""
    keys = above.astype(np.int64) * labels + codes
    unique, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    by_appearance = np.argsort(first, kind="stable")
    rank = np.empty_like(by_appearance)
    rank[by_appearance] = np.arange(by_appearance.size)
    ordered = unique[by_appearance]
    parent, label = (ordered // labels).astype(np.intp), (ordered % labels).astype(np.intp)
    return rank[inverse.ravel()].astype(np.intp), parent, label


def _path(parent_name: str, label: str | None, k: int) -> str:
    if label is None:  # the domain above goes on down
        return parent_name
    return label if k == 0 else f"{parent_name}/{label}"
