"""Uplinks and the jobs that share them (``--link-contention``, docs/topology.md "Link contention").

An uplink is the link from a domain of the topology up to its parent (a ToR switch's to its aggregation switch),
named by ``(level, domain)``: the level's index top-down and the domain's index in that level.  A job whose nodes
lie in more than one domain of level k (its highest spanned level) sends traffic up out of every domain it
occupies at level k and at each level below it, so it crosses the uplinks of those domains; a job within one
domain of the lowest level (one node, or nodes under one rack switch) crosses none.  Nodes' own links (NICs) are
not counted: a node is mostly held whole by one job, and jobs sharing a node's GPUs are the colocation model's.

On an uplink that n jobs cross, each gets 1/n of its bandwidth (fair share), and a job is as slow as the most
crowded uplink it crosses makes it: with c its communication share (the part of its time alone spent in
communication across uplinks: its own, a trace's ``comm_share``, else ``--link-contention``'s), its speed is
1/((1 - c) + c·n).  Jobs of different shares on one uplink still split it evenly: each is slowed by its own
share.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Generic, TypeVar

Uplink = tuple[int, int]  # (level index top-down, domain index in that level)
JobKey = TypeVar("JobKey", bound=Hashable)


def uplinks(domains: Sequence[tuple[int, ...] | None]) -> tuple[Uplink, ...]:
    """The uplinks a job crosses whose nodes lie in ``domains`` (each node's domain at each level, top-down:
    :attr:`simcluster.cluster.Node.domains`), sorted; none where its nodes share every domain, or where one lies
    outside the topology (None: its place is not known).

    Two racks under one block, a job on a node of each: it crosses both racks' uplinks, not the block's.

    >>> uplinks([(0, 0), (0, 1)])
    ((1, 0), (1, 1))

    Across blocks: out of each rack it occupies, then out of each block.

    >>> uplinks([(0, 0), (0, 0), (1, 2)])
    ((0, 0), (0, 1), (1, 0), (1, 2))
    >>> uplinks([(0, 1), (0, 1)]), uplinks([(0, 1), None])
    ((), ())
    """
    known = [d for d in domains if d is not None]
    if not known or len(known) < len(domains):
        return ()
    places, first = set(known), known[0]
    highest = next((k for k, domain in enumerate(first) if any(d[k] != domain for d in places)), None)
    if highest is None:
        return ()
    return tuple(sorted({(level, d[level]) for d in places for level in range(highest, len(first))}))


def contention_speed(share: float, crowd: int) -> float:
    """A job's speed ÷ its speed alone when its most crowded uplink is crossed by ``crowd`` jobs (itself
    included), ``share`` of its time alone spent communicating across uplinks: 1/((1 - share) + share·crowd); 1 for
    a job alone on its uplinks or crossing none.

    Crux's GPT job beside a BERT job under the same two ToR switches: 1.53 s an iteration alone, 1.70 beside it,
    so 1.70/1.53 = 1 + share, share = 1/9:

    >>> round(1.53 / contention_speed(1 / 9, 2), 6)
    1.7
    >>> contention_speed(0.5, 1), contention_speed(0.5, 3)
    (1.0, 0.5)
    """
    if crowd <= 1:
        return 1.0
    return 1.0 / ((1.0 - share) + share * crowd)


class UplinkLoad(Generic[JobKey]):
    """The jobs crossing each uplink, kept up to date as jobs start and stop (never a walk of every job).

    >>> load: UplinkLoad[str] = UplinkLoad()
    >>> load.add("gpt", ((1, 0), (1, 1)))
    >>> load.add("bert", ((1, 1), (1, 2)))
    >>> load.crowd("gpt"), sorted(load.neighbours("gpt")), load.busiest
    (2, ['bert'], 2)
    >>> load.remove("bert")
    >>> load.crowd("gpt"), load.neighbours("gpt"), load.crowd("bert")
    (1, set(), 0)
    """

    def __init__(self) -> None:
        self.crossing: dict[Uplink, set[JobKey]] = {}  # uplink → the jobs crossing it now
        self.links: dict[JobKey, tuple[Uplink, ...]] = {}  # job → the uplinks it crosses
        self.busiest = 0  # the most jobs seen on one uplink at once

    def __contains__(self, job: object) -> bool:
        return job in self.links

    def add(self, job: JobKey, links: tuple[Uplink, ...]) -> None:
        """``job`` crosses ``links`` from now on."""
        self.links[job] = links
        for link in links:
            on = self.crossing.setdefault(link, set())
            on.add(job)
            self.busiest = max(self.busiest, len(on))

    def remove(self, job: JobKey) -> None:
        """``job`` crosses no uplink any more (a job not added: nothing to do)."""
        for link in self.links.pop(job, ()):
            on = self.crossing[link]
            on.discard(job)
            if not on:
                del self.crossing[link]

    def crowd(self, job: JobKey) -> int:
        """How many jobs cross ``job``'s most crowded uplink, itself included (0: it crosses none)."""
        crossing = self.crossing
        return max((len(crossing[link]) for link in self.links.get(job, ())), default=0)

    def neighbours(self, job: JobKey) -> set[JobKey]:
        """The other jobs crossing one of ``job``'s uplinks."""
        crossing = self.crossing
        found: set[JobKey] = set()
        for link in self.links.get(job, ()):
            found.update(crossing[link])
        found.discard(job)
        return found


__all__ = ["Uplink", "UplinkLoad", "contention_speed", "uplinks"]
