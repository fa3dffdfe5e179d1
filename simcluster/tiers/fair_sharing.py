"""Kueue's fair sharing on the cohort tree: a node's dominant resource share (:class:`Share`,
``pkg/cache/scheduler/fair_sharing.go``) and the tournament that picks which ClusterQueue's head is admitted next
(``pkg/scheduler/fair_sharing_iterator.go``).  Kept apart from the quota arithmetic of
:mod:`~simcluster.tiers.quota_tree` (whose :meth:`~simcluster.tiers.quota_tree.QuotaTree.fair_pick` and
:meth:`~simcluster.tiers.quota_tree.QuotaTree.dominant_share` call in here) and read by fair preemption
(:mod:`~simcluster.tiers.preemption`).

>>> from simcluster.tiers.model import ClusterQueueSpec, CohortSpec, FlavorQuota
>>> org = QuotaNode("org", False, CohortSpec("org"))
>>> a = QuotaNode("a", True, ClusterQueueSpec("a", "org", (FlavorQuota("f", 5),)))
>>> a.parent, org.lendable, a.subtree_quota, a.usage = org, 10.0, {"f": 5.0}, {"f": 7.0}
>>> dominant_resource_share(a)  # 2 GPUs borrowed of the 10 its parent lends
Share(ratio=200.0, weight=1.0, borrowed_flavors=('f',))
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from simcluster.tiers.quota_node import QuotaNode, Workload, tiebreak

if TYPE_CHECKING:
    from simcluster.tiers.quota_tree import QuotaTree


@dataclass(frozen=True)
class Share:
    """A node's dominant resource share w.r.t. its parent (fair_sharing.go's ``DRS``): ``ratio`` is the
    unweighted borrowed x 1000 / lendable; ``borrowed_flavors`` the flavors it uses above its quota.

    >>> Share(250.0, 0.5, ("h100",)).value, Share(250.0, 0.0, ("h100",)).value, Share(0.0, 0.0, ()).value
    (500.0, inf, 0.0)
    >>> Share(1.0, 0.0, ("a",)).key() > Share(900.0, 1.0, ("a",)).key()
    True
    """

    ratio: float
    weight: float
    borrowed_flavors: tuple[str, ...]

    @property
    def borrowing(self) -> bool:
        return bool(self.borrowed_flavors)

    @property
    def value(self) -> float:
        """``PreciseWeightedShare``: 0 while the ratio is 0, infinite for a borrowing node of weight 0."""
        if self.ratio == 0:
            return 0.0
        return float("inf") if self.weight == 0 else self.ratio / self.weight

    def key(self) -> tuple[int, float]:
        """Sorts as ``CompareDRS`` compares: zero-weight borrowers above all others, by their unweighted ratio."""
        if self.weight == 0 and self.ratio != 0:
            return (1, self.ratio)
        return (0, self.value)


def dominant_resource_share(node: QuotaNode) -> Share:
    """``dominantResourceShare``: GPUs above the node's subtree quota, summed over flavors, x 1000 over its
    parent's lendable GPUs (``calculateLendable``: the parent's potentialAvailable summed over the tree's
    flavors); a root's share is 0."""
    if node.parent is None:
        return Share(0.0, node.weight, ())
    borrowed, flavors = 0.0, []
    for flavor, quota in node.subtree_quota.items():
        above = node.usage.get(flavor, 0.0) - quota
        if above > 0:
            borrowed += above
            flavors.append(flavor)
    lendable = node.parent.lendable
    ratio = borrowed * 1000.0 / lendable if flavors and lendable > 0 else 0.0
    return Share(ratio, node.weight, tuple(flavors))


def level_keys(tree: QuotaTree, w: Workload) -> dict[QuotaNode, tuple]:
    """For each ancestor cohort of ``w``'s ClusterQueue: the tournament key there of the child on ``w``'s
    path, with ``w`` admitted (``entryComparer.computeDRS`` and ``less``): not borrowing on ``w``'s flavor
    first (FairSharingPrioritizeNonBorrowing, on by default), lower share, higher priority, earlier."""
    return {parent: (borrows, share, -w.priority, w.admitted_at, tiebreak(w.key))
            for parent, borrows, share in _path_shares(tree, w)}


def _path_shares(tree: QuotaTree, w: Workload) -> list[tuple[QuotaNode, bool, tuple]]:
    """Up ``w``'s path, each cohort with whether the child below it would borrow on ``w``'s flavor and that
    child's share key, as if ``w`` were admitted.  They depend on the tree's usage and ``w``'s queue, flavor and
    GPUs only, so they are kept among the tree's facts until it changes: heads of other trees, and the heads
    that lost a tournament, are not worked out again."""
    facts = tree.facts(w.cluster_queue)
    known = facts.get(("path shares", w.cluster_queue, w.flavor, w.gpus))
    if known is not None:
        return known
    found = []
    with tree.trial():
        tree.add_usage(w)
        node = tree.queue_node(w.cluster_queue)
        while node.parent is not None:
            share = dominant_resource_share(node)
            found.append((node.parent, w.flavor in share.borrowed_flavors, share.key()))
            node = node.parent
    facts[("path shares", w.cluster_queue, w.flavor, w.gpus)] = found
    return found


def tournament_key(tree: QuotaTree, w: Workload) -> tuple:
    """The key of the tournament at the root of ``w``'s tree (:meth:`QuotaTree.fair_order_key
    <simcluster.tiers.quota_tree.QuotaTree.fair_order_key>` says where it is exact)."""
    root = tree.queue_node(w.cluster_queue).root()
    return level_keys(tree, w).get(root, (False, (0, 0.0), -w.priority, w.admitted_at, tiebreak(w.key)))


def tournament_winner(tree: QuotaTree, heads: Iterable[Workload]) -> Workload:
    """``runTournament``: in each cohort, the child whose nominee gives it the best key wins, bottom-up; heads
    of different trees are compared by :func:`tournament_key`."""
    heads = list(heads)
    if not heads:
        raise ValueError("no heads to pick from")
    keys = {w.key: level_keys(tree, w) for w in heads}
    children: dict[QuotaNode, dict[QuotaNode, None]] = defaultdict(dict)
    at_queue: dict[QuotaNode, list[Workload]] = defaultdict(list)
    for w in heads:
        node = tree.queue_node(w.cluster_queue)
        at_queue[node].append(w)
        while node.parent is not None:
            children[node.parent][node] = None
            node = node.parent

    def by_root_key(w: Workload) -> tuple:
        return tournament_key(tree, w)

    def winner(node: QuotaNode, level: QuotaNode | None) -> Workload:
        entries = at_queue[node] if node.is_cq else [winner(c, node) for c in children[node]]
        if node.is_cq and level is None:
            return min(entries, key=by_root_key)
        return min(entries, key=lambda w: keys[w.key][level if node.is_cq else node])

    roots = {tree.queue_node(w.cluster_queue).root(): None for w in heads}
    return min((winner(r, r.parent) for r in roots), key=by_root_key)
