"""Where ElasticFlow's simulator puts each job, as far as its cache of GPU ranks sees it (``overhead_cache=nodes``).

The artifact (pkusys/ElasticFlow, ``cluster.py``'s elastic placement and ``log.py``'s scheduling log) keys the
cache that decides a job's overhead by the GPU ranks it is logged on: the cells of its first node in the order
of the cluster's switches and nodes, as many as it has GPUs.  At each round it takes every job off its nodes and
places them all again, so a job's ranks follow from how its free nodes are ordered then, and that order is the
artifact's own bookkeeping, which this class keeps in the same way (a behaviour described, not its code):

* *free nodes*: a list, first all nodes in the order of the switches; a node set that loses its last job puts
  its nodes back at the end, and the list is then sorted, stably, by each node's index *within its switch* (so
  on a cluster of two switches the nodes of both come interleaved);
* *node sets*: the nodes one job placed anew took (as many as its GPUs fill, the first free ones), shared by
  smaller jobs where GPUs are left; each set is filed in a list by the GPUs it has left (the largest class of
  1, 2, 4, 8, 12, 16, 24, ... that divides them; a full set under the size of the job it was made or last
  filled for), each list kept sorted by GPUs used;
* a round releases the jobs that ended first, then the others by deadline, and places jobs of a node or more
  first (largest first, then in the hand-out's order), then the smaller ones by size class, largest first.  A
  job takes the first set of its own size's list that fits it, else the first set of a larger class's list
  (largest class first) that fits, else a new set;
* the log walks the nodes switch by switch: a free node is a node's cells; a set filed at a node's size or more
  gives its first job the cells from the set's first node on (the whole nodes); a smaller one gives each of its
  jobs, in the order they joined, its GPUs' cells, then the node's unused cells.

Two switches of two nodes of 8 GPUs (physical nodes 0, 1 | 2, 3; indices within a switch 0, 1 | 0, 1): a takes
nodes 0 and 1, b a new set on node 2 and c the 4 GPUs b left there.  Then a ends: its nodes go back and the free
list is sorted by index within the switch (0, 3, 1; then 0, 2, 3, 1 once b and c are off node 2), so b and c
share node 0; and when d (16 GPUs) comes, the free list is 2, 0, 3, 1: d takes nodes 2 and 0, logged from
node 0, and b and c are on node 3.

>>> book = NodeBook(switches=2, nodes_per_switch=2, gpus_per_node=8)
>>> book.round([("a", 16, 10.0), ("b", 4, 20.0), ("c", 4, 30.0)])
{'a': 0, 'b': 16, 'c': 20}
>>> book.round([("b", 4, 20.0), ("c", 4, 30.0)])
{'b': 0, 'c': 4}
>>> book.round([("b", 4, 20.0), ("c", 4, 30.0), ("d", 16, 40.0)])
{'d': 0, 'b': 24, 'c': 28}
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

CLASSES = (1, 2, 4, 8, 12, 16, 24, 32, 40, 48, 56, 64, 72, 88, 128, 256)  # the artifact's lists of node sets


@dataclass
class _Set:
    nodes: list[int]  # physical positions (switch × nodes per switch + index)
    capacity: int
    used: int = 0
    jobs: list[tuple[str, int]] = field(default_factory=list)  # (key, GPUs), in the order they joined
    filed: int = 0  # the class of the list it is in


class NodeBook:
    """ElasticFlow's node bookkeeping for one cluster (see the module's docstring)."""

    def __init__(self, switches: int, nodes_per_switch: int, gpus_per_node: int) -> None:
        self.per_switch, self.gpn = nodes_per_switch, gpus_per_node
        self.count = switches * nodes_per_switch
        self.free: list[int] = list(range(self.count))
        self.lists: dict[int, list[_Set]] = {k: [] for k in CLASSES}
        self.placed: dict[str, _Set] = {}  # each job placed at the last round, by key
        self.deadline: dict[str, float] = {}

    # --- a round ---------------------------------------------------------------------------------------
    def round(self, jobs: list[tuple[str, int, float]]) -> dict[str, int]:
        """Release every job and place ``jobs`` (key, GPUs, deadline), given in the hand-out's order; each placed
        job's first rank (jobs of no GPUs, or that find no room, have none)."""
        present = {key for key, _, _ in jobs}
        gone = [key for key in self.placed if key not in present]  # (ended: released at their end events first)
        staying = sorted((key for key in self.placed if key in present), key=lambda k: self.deadline[k])
        for key in [*gone, *staying]:
            self._release(key)
        self.deadline = {key: deadline for key, _, deadline in jobs}
        ordered = sorted((job for job in jobs if job[1] > 0), key=lambda job: -job[1])
        for key, gpus, _ in ordered:
            if gpus >= self.gpn:
                self._place(key, gpus)
        for size in reversed(CLASSES):
            if size < self.gpn:
                for key, gpus, _ in ordered:
                    if gpus == size:
                        self._place(key, gpus)
        return self.ranks()

    def ranks(self) -> dict[str, int]:
        """Each placed job's first rank, as the artifact's log gives it."""
        out: dict[str, int] = {}
        where = {node: s for s in {id(s): s for s in self.placed.values()}.values() for node in s.nodes}
        cell = 0
        for node in range(self.count):
            s = where.get(node)
            if s is None:
                cell += self.gpn
                continue
            if s.filed >= self.gpn:
                first = s.jobs[0][0]
                out.setdefault(first, cell)
                cell += self.gpn
                continue
            start = cell
            for key, gpus in s.jobs:
                out.setdefault(key, cell)
                cell += gpus
            cell = start + self.gpn
        return out

    # --- the artifact's rules --------------------------------------------------------------------------
    def _release(self, key: str) -> None:
        s = self.placed.pop(key)
        s.jobs = [(k, g) for k, g in s.jobs if k != key]
        s.used = sum(g for _, g in s.jobs)
        if s.used == 0:
            self.free += s.nodes
            self.lists[s.filed] = [other for other in self.lists[s.filed] if other is not s]
            self.free.sort(key=lambda node: node % self.per_switch)
        # (a set that keeps jobs may move between lists here too; every set empties before anything is placed)

    def _class(self, left: int) -> int:
        return max(k for k in CLASSES if k <= left and left % k == 0)

    def _file(self, s: _Set, own: int) -> None:
        """File ``s`` after a job of ``own`` GPUs joined it: by the GPUs it has left, or in the job's own list
        when full; both lists re-sorted by GPUs used."""
        left = s.capacity - s.used
        s.filed = self._class(left) if left > 0 else own
        self.lists[s.filed].append(s)
        for k in {own, s.filed}:
            self.lists[k].sort(key=lambda other: other.used)

    def _join(self, s: _Set, key: str, gpus: int) -> None:
        s.jobs.append((key, gpus))
        s.used += gpus
        self.placed[key] = s
        self._file(s, gpus)

    def _place(self, key: str, gpus: int) -> None:
        if gpus not in self.lists:
            return
        for size in (gpus, *(k for k in reversed(CLASSES) if k > gpus)):
            candidates = self.lists[size]
            if candidates:
                s = candidates.pop(0)
                if s.used + gpus <= s.capacity:
                    self._join(s, key, gpus)
                    return
                candidates.append(s)
        need = math.ceil(gpus / self.gpn)
        if need > len(self.free):
            return
        s = _Set(self.free[:need], need * self.gpn)
        del self.free[:need]
        self._join(s, key, gpus)


def artifact_switches(nodes: int) -> int:
    """How many switches the artifact's cluster spec for ``nodes`` nodes has: its n64g8 (the ITP clusters) two
    of 32 nodes; its others (n16g4, n32g8, n128g8, ...) one."""
    return 2 if nodes == 64 else 1


__all__ = ["NodeBook", "artifact_switches"]
