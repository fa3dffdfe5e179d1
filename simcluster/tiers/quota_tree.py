"""Kueue's quota arithmetic on one resource (GPUs, quota per flavor): the cohort tree's quota, usage, borrowing
and lending.  The tree is also where callers ask for the dominant resource share and fair admission order (worked
out in :mod:`~simcluster.tiers.fair_sharing`) and for the workloads Kueue would preempt (worked out in
:mod:`~simcluster.tiers.preemption`); the nodes and workloads it holds are :mod:`~simcluster.tiers.quota_node`'s.

Each formula follows kubernetes-sigs/kueue as read at commit ``ff69552`` (main, v0.17 line, 2026-08):
``pkg/cache/scheduler/resource_node.go`` (quota and usage), ``pkg/cache/scheduler/fair_sharing.go`` (shares),
``pkg/scheduler/preemption/preemption.go`` with its ``classical``, ``fairsharing`` and ``common`` subpackages
(preemption) and ``pkg/scheduler/fair_sharing_iterator.go`` (fair admission order); the docstrings name the
function each piece mirrors.  Amounts are floats where Kueue's are integer quantities: whole or dyadic GPU counts
add up exactly, so a release undoes an admission exactly.

Usage moves up the tree incrementally (cost: the tree's depth), and every "as if" question (a share with a
workload added, a preemption's trial removals) runs inside a trial that restores the touched (node, flavor)
usages exactly afterwards.  Each queue's admitted workloads are also kept in preemption order (a sorted list
per queue and flavor, kept on admit and release), and what callers work out about a cohort tree is kept among its
facts until its next admission or release (:meth:`QuotaTree.facts`).

>>> from simcluster.tiers.model import ClusterQueueSpec, FlavorQuota, KueueConfig
>>> a = ClusterQueueSpec("a", cohort="org", quotas=(FlavorQuota("h100", 8),))
>>> b = ClusterQueueSpec("b", cohort="org", quotas=(FlavorQuota("h100", 4),))
>>> tree = QuotaTree(KueueConfig({"a": a, "b": b}))
>>> tree.admit(Workload("j1", "b", "h100", 10))
>>> tree.available("a", "h100"), tree.borrowing("b", "h100"), tree.usage("org", "h100")
(2.0, 6.0, 10.0)
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections import defaultdict
from collections.abc import Hashable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from simcluster.tiers import preemption
from simcluster.tiers.fair_sharing import Share, dominant_resource_share, tournament_key, tournament_winner
from simcluster.tiers.model import (
    ClusterQueueSpec,  # noqa: F401 - the doctests below build their configs with it
    CohortSpec,
    FairSharing,
    FlavorQuota,  # noqa: F401 - and with this
    KueueConfig,
)
from simcluster.tiers.preemption import (
    HIERARCHICAL_RECLAIM,
    RECLAIM_WHILE_BORROWING,
    RECLAIM_WITHOUT_BORROWING,
    WITHIN_CQ,
    satisfies_policy,
)
from simcluster.tiers.quota_node import QuotaNode, Workload, candidate_rank

# names that lived here before fair sharing and preemption had modules of their own, importable from here still
__all__ = ["HIERARCHICAL_RECLAIM", "RECLAIM_WHILE_BORROWING", "RECLAIM_WITHOUT_BORROWING", "WITHIN_CQ",
           "QuotaTree", "Share", "Workload", "satisfies_policy"]


class QuotaTree:
    """The cohort forest of a :class:`KueueConfig`, with the admitted workloads' usage.

    Quota (``updateCohortResourceNode``/``accumulateFromChild``): a ClusterQueue's subtree quota is its nominal;
    a cohort's is its own nominal plus what each child lends up (the child's subtree quota minus its guaranteed
    quota, ``max(0, subtree quota - lendingLimit)`` where a lending limit is set, else 0).  A cohort's usage is
    the sum over its children of ``max(0, child usage - child guaranteed)``.

    >>> from simcluster.tiers.model import ClusterQueueSpec, CohortSpec, FlavorQuota, KueueConfig
    >>> a = ClusterQueueSpec("a", cohort="org", quotas=(FlavorQuota("h100", 9),))
    >>> b = ClusterQueueSpec("b", cohort="org", quotas=(FlavorQuota("h100", 12, lending_limit=1),))
    >>> tree = QuotaTree(KueueConfig({"a": a, "b": b}))
    >>> tree.subtree_quota("org", "h100"), tree.available("a", "h100"), tree.available("b", "h100")
    (10.0, 10.0, 21.0)
    """

    def __init__(self, config: KueueConfig) -> None:
        self.config = config
        self._cqs: dict[str, QuotaNode] = {n: QuotaNode(n, True, s) for n, s in config.cluster_queues.items()}
        self._cohorts: dict[str, QuotaNode] = {n: QuotaNode(n, False, s) for n, s in config.cohorts.items()}
        self._link()
        for root in self._roots():
            flavors = self._accumulate(root)
            self._spread_potential(root, sorted(flavors))
        self._admitted: dict[Hashable, Workload] = {}
        self._by_queue: dict[tuple[str, str], dict[Hashable, Workload]] = defaultdict(dict)
        # (queue, flavor) -> its admitted workloads as (rank, admission number, workload), in preemption order
        self._ranked: dict[tuple[str, str], list[tuple[tuple, int, Workload]]] = defaultdict(list)
        self._rank_of: dict[Hashable, tuple[tuple, int, Workload]] = {}
        self._admissions = 0
        self._root_of = {name: node.root().name for name, node in self._cqs.items()}
        self._epochs: dict[str, int] = dict.fromkeys(self._root_of.values(), 0)  # root -> admissions + releases
        self._facts: dict[str, tuple[int, dict]] = {}  # root -> (its epoch, what holds until the next change)
        self._borrowers: dict[tuple[str, str], dict[str, QuotaNode]] = defaultdict(dict)  # (root, flavor) -> CQs
        self._journals: list[dict[tuple[QuotaNode, str], float]] = []  # one per open trial, innermost last
        self._paths = {(name, flavor): self._path_down(node, flavor)
                       for name, node in self._cqs.items() for flavor in node.quotas}

    # -- building --------------------------------------------------------------------------------------------

    def _cohort(self, name: str) -> QuotaNode:
        """A cohort by name; one only named (by a ClusterQueue or as a parent) has no quota, no parent."""
        if name not in self._cohorts:
            self._cohorts[name] = QuotaNode(name, False, CohortSpec(name))
        return self._cohorts[name]

    def _link(self) -> None:
        for cq in self._cqs.values():
            if cq.spec.cohort is not None:
                cq.parent = self._cohort(cq.spec.cohort)
                cq.parent.cqs.append(cq)
        for cohort in list(self._cohorts.values()):
            if cohort.spec.parent is not None:
                cohort.parent = self._cohort(cohort.spec.parent)
                cohort.parent.cohorts.append(cohort)
        for cohort in self._cohorts.values():
            seen = {cohort}
            for ancestor in cohort.ancestors():
                if ancestor in seen:
                    raise ValueError(f"cohort {cohort.name!r} is in a cycle of parents")
                seen.add(ancestor)

    def _roots(self) -> list[QuotaNode]:
        return [n for n in [*self._cohorts.values(), *self._cqs.values()] if n.parent is None]

    def _accumulate(self, node: QuotaNode) -> set[str]:
        """Subtree quota and guaranteed quota, children first; returns the subtree's flavors."""
        node.subtree_quota = {f: q.nominal for f, q in node.quotas.items()}
        flavors = set(node.quotas)
        for child in [*node.cohorts, *node.cqs]:
            flavors |= self._accumulate(child)
            for flavor, quota in child.subtree_quota.items():
                lent = quota - child.guaranteed[flavor]
                node.subtree_quota[flavor] = node.subtree_quota.get(flavor, 0.0) + lent
        node.guaranteed = {f: self._local_quota(node, f) for f in node.subtree_quota}
        return flavors

    @staticmethod
    def _local_quota(node: QuotaNode, flavor: str) -> float:
        """``localQuota``: the part of its subtree quota a node keeps back from its parent."""
        quota = node.quotas.get(flavor)
        if quota is None or quota.lending_limit is None:
            return 0.0
        return max(0.0, node.subtree_quota.get(flavor, 0.0) - quota.lending_limit)

    def _spread_potential(self, node: QuotaNode, flavors: list[str]) -> None:
        """``potentialAvailable`` of every node (static: quota only), parents first, and each node's lendable
        total (``calculateLendable`` of it as a parent)."""
        for flavor in flavors:
            if node.parent is None:
                node.potential[flavor] = node.subtree_quota.get(flavor, 0.0)
                continue
            value = node.guaranteed.get(flavor, 0.0) + node.parent.potential[flavor]
            quota = node.quotas.get(flavor)
            if quota is not None and quota.borrowing_limit is not None:
                value = min(value, node.subtree_quota.get(flavor, 0.0) + quota.borrowing_limit)
            node.potential[flavor] = value
        node.lendable = sum(node.potential.values())
        for child in [*node.cohorts, *node.cqs]:
            self._spread_potential(child, flavors)

    # -- the tree --------------------------------------------------------------------------------------------

    def _node(self, name: str) -> QuotaNode:
        """A ClusterQueue by name, else a cohort (Kueue keeps the two kinds apart; a CQ's name wins here)."""
        node = self._cqs.get(name) or self._cohorts.get(name)
        if node is None:
            raise KeyError(f"no ClusterQueue or cohort named {name!r}")
        return node

    def parent(self, name: str) -> str | None:
        """The cohort above a ClusterQueue or cohort (None at a root).

        >>> QuotaTree(KueueConfig({"a": ClusterQueueSpec("a", cohort="org")})).parent("a")
        'org'
        """
        parent = self._node(name).parent
        return parent.name if parent is not None else None

    def tree_mates(self, cluster_queue: str) -> tuple[str, ...]:
        """The ClusterQueues of ``cluster_queue``'s cohort tree, itself included (alone without a cohort).

        >>> cqs = {n: ClusterQueueSpec(n, c) for n, c in [("a", "org"), ("b", "org"), ("c", None)]}
        >>> tree = QuotaTree(KueueConfig(cqs)); tree.tree_mates("a"), tree.tree_mates("c")
        (('a', 'b'), ('c',))
        """
        root = self._cqs[cluster_queue].root()
        return tuple(name for name, node in self._cqs.items() if node.root() is root)

    def cohort_members(self, cohort: str) -> tuple[str, ...]:
        """A cohort's children: child cohorts, then ClusterQueues.

        >>> QuotaTree(KueueConfig({"a": ClusterQueueSpec("a", cohort="org")})).cohort_members("org")
        ('a',)
        """
        node = self._cohorts[cohort]
        return tuple(n.name for n in [*node.cohorts, *node.cqs])

    def nominal(self, name: str, flavor: str) -> float:
        """A ClusterQueue's or cohort's own nominal quota on ``flavor`` (0 where it lists none).

        >>> QuotaTree(KueueConfig({"a": ClusterQueueSpec("a", quotas=(FlavorQuota("f", 3),))})).nominal("a", "f")
        3.0
        """
        quota = self._node(name).quotas.get(flavor)
        return quota.nominal if quota is not None else 0.0

    def subtree_quota(self, name: str, flavor: str) -> float:
        """``SubtreeQuota``: a node's nominal plus what its children lend up to it.

        >>> QuotaTree(KueueConfig({"a": ClusterQueueSpec("a", "o", (FlavorQuota("f", 3),))})).subtree_quota("o", "f")
        3.0
        """
        return self._node(name).subtree_quota.get(flavor, 0.0)

    def lendable(self, name: str, flavor: str) -> float:
        """What a node lends to its parent: its subtree quota less its guaranteed (``localQuota``) part.

        >>> q = FlavorQuota("f", 8, lending_limit=3)
        >>> QuotaTree(KueueConfig({"a": ClusterQueueSpec("a", "o", (q,))})).lendable("a", "f")
        3.0
        """
        node = self._node(name)
        return node.subtree_quota.get(flavor, 0.0) - node.guaranteed.get(flavor, 0.0)

    def potential_available(self, cluster_queue: str, flavor: str) -> float:
        """``potentialAvailable``: the most a ClusterQueue could take with the whole tree idle.

        >>> q = FlavorQuota("f", 8, borrowing_limit=2)
        >>> cqs = {"a": ClusterQueueSpec("a", "o", (q,)), "b": ClusterQueueSpec("b", "o", (FlavorQuota("f", 8),))}
        >>> QuotaTree(KueueConfig(cqs)).potential_available("a", "f")
        10.0
        """
        node = self._cqs[cluster_queue]
        return node.potential.get(flavor, 0.0) if flavor in node.quotas else 0.0

    # -- usage -----------------------------------------------------------------------------------------------

    def admit(self, w: Workload) -> None:
        """Reserve ``w``'s quota (usage up the tree, as ``addUsage``); Kueue's cache takes it unchecked."""
        node = self._cqs[w.cluster_queue]
        if w.flavor not in node.quotas:
            raise ValueError(f"ClusterQueue {w.cluster_queue!r} has no quota for flavor {w.flavor!r}")
        if w.key in self._admitted:
            raise ValueError(f"workload {w.key!r} is admitted already")
        self._admitted[w.key] = w
        self._by_queue[(w.cluster_queue, w.flavor)][w.key] = w
        self._admissions += 1
        entry = (candidate_rank(w), self._admissions, w)
        self._rank_of[w.key] = entry
        insort(self._ranked[(w.cluster_queue, w.flavor)], entry)
        self._epochs[self._root_of[w.cluster_queue]] += 1
        self._add_usage(node, w.flavor, w.gpus)
        self._note_borrower(node, w.flavor)

    def release(self, w: Workload) -> None:
        """Give ``w``'s quota back (``removeUsage``); KeyError if it is not admitted."""
        admitted = self._admitted.pop(w.key)
        del self._by_queue[(admitted.cluster_queue, admitted.flavor)][admitted.key]
        ranked, entry = self._ranked[(admitted.cluster_queue, admitted.flavor)], self._rank_of.pop(admitted.key)
        del ranked[bisect_left(ranked, entry[:2])]
        self._epochs[self._root_of[admitted.cluster_queue]] += 1
        node = self._cqs[admitted.cluster_queue]
        self._remove_usage(node, admitted.flavor, admitted.gpus)
        self._note_borrower(node, admitted.flavor)

    def admitted(self, cluster_queue: str) -> Iterable[Workload]:
        """The ClusterQueue's admitted workloads, flavor by flavor in its quota order."""
        for flavor in self._cqs[cluster_queue].quotas:
            yield from self._by_queue.get((cluster_queue, flavor), {}).values()

    def in_preemption_order(self, cluster_queue: str, flavor: str, policy: str = "Any",
                            incoming: Workload | None = None) -> Sequence[tuple[tuple, int, Workload]]:
        """The queue's admitted workloads on ``flavor`` that ``policy`` lets ``incoming`` preempt
        (:func:`~simcluster.tiers.preemption.satisfies_policy`), as ``(rank, admission number, workload)`` in
        ``CandidatesOrdering`` within one queue (lower priority, then newer first).  Each policy's candidates are a
        prefix of that order (those of lower priority; then, for LowerOrNewerEqualPriority, the equal priorities
        admitted after the incoming was queued), so this costs a bisection, not the queue's workloads.

        >>> rules = ClusterQueueSpec("a", quotas=(FlavorQuota("f", 9),))
        >>> tree = QuotaTree(KueueConfig({"a": rules}))
        >>> for key, priority, at in [("old", 0, 1.0), ("new", 0, 2.0), ("high", 5, 0.0)]:
        ...     tree.admit(Workload(key, "a", "f", 1, priority, at))
        >>> [e[2].key for e in tree.in_preemption_order("a", "f", "LowerPriority", Workload("x", "a", "f", 1, 5))]
        ['new', 'old']
        """
        ranked = self._ranked.get((cluster_queue, flavor), [])
        if policy == "Any":
            return ranked
        if policy == "Never" or incoming is None:
            return ()
        if policy == "LowerPriority":
            return ranked[:bisect_left(ranked, ((incoming.priority,),))]
        if policy == "LowerOrNewerEqualPriority":
            return ranked[:bisect_left(ranked, ((incoming.priority, -incoming.admitted_at),))]
        return ()

    def queue_node(self, cluster_queue: str) -> QuotaNode:
        """The ClusterQueue's node in the tree (read by fair sharing and preemption; change it only through
        :meth:`admit`, :meth:`release` and the usage of a :meth:`trial`)."""
        return self._cqs[cluster_queue]

    def borrowers(self, cluster_queue: str, flavor: str) -> Iterable[QuotaNode]:
        """The ClusterQueues of ``cluster_queue``'s cohort tree whose usage of ``flavor`` is above their quota."""
        return self._borrowers.get((self._root_of[cluster_queue], flavor), {}).values()

    def facts(self, cluster_queue: str) -> dict[Any, Any]:
        """A dict for what callers worked out about ``cluster_queue``'s cohort tree (a search that found no
        preemption targets, a share), kept until the next admission or release in that tree changes it.

        >>> tree = QuotaTree(KueueConfig({"a": ClusterQueueSpec("a", quotas=(FlavorQuota("f", 9),))}))
        >>> tree.facts("a")["seen"] = True; "seen" in tree.facts("a")
        True
        >>> tree.admit(Workload("j", "a", "f", 1)); "seen" in tree.facts("a")
        False
        """
        if self._journals:  # (inside a trial the usage is not the tree's: nothing learnt there is kept)
            return {}
        root = self._root_of[cluster_queue]
        epoch, found = self._facts.get(root, (-1, None))
        if found is None or epoch != self._epochs[root]:
            found = {}
            self._facts[root] = (self._epochs[root], found)
        return found

    def usage(self, name: str, flavor: str) -> float:
        """A ClusterQueue's usage, or the usage a cohort holds for its subtree (beyond the children's guaranteed
        quota)."""
        return self._node(name).usage.get(flavor, 0.0)

    def _note_borrower(self, node: QuotaNode, flavor: str) -> None:
        """Keep the set of borrowing ClusterQueues per (root, flavor), so fair preemption need not walk all."""
        if node.parent is None:
            return
        borrowers = self._borrowers[(node.root().name, flavor)]
        if node.usage.get(flavor, 0.0) > node.subtree_quota[flavor]:
            borrowers[node.name] = node
        else:
            borrowers.pop(node.name, None)

    def _add_usage(self, node: QuotaNode | None, flavor: str, amount: float) -> None:
        """``addUsage``: a node takes what its guaranteed quota still holds; the rest goes to its parent.  Inside a
        trial each node's old usage is journalled first (inline: preemption's trials call this millions of times)."""
        journal = self._journals[-1] if self._journals else None
        while node is not None:
            old = node.usage.get(flavor, 0.0)
            if journal is not None:
                journal.setdefault((node, flavor), old)
            local_available = max(0.0, node.guaranteed.get(flavor, 0.0) - old)
            node.usage[flavor] = old + amount
            if amount <= local_available:
                return
            amount -= local_available
            node = node.parent

    def _remove_usage(self, node: QuotaNode | None, flavor: str, amount: float) -> None:
        """``removeUsage``: the parent gives back at most what the node had stored in it (journalled inline)."""
        journal = self._journals[-1] if self._journals else None
        while node is not None:
            old = node.usage.get(flavor, 0.0)
            if journal is not None:
                journal.setdefault((node, flavor), old)
            stored_in_parent = old - node.guaranteed.get(flavor, 0.0)
            node.usage[flavor] = old - amount
            if stored_in_parent <= 0:
                return
            amount = min(amount, stored_in_parent)
            node = node.parent

    @contextmanager
    def trial(self) -> Iterator[None]:
        """Usage changes inside (:meth:`remove_usage`, :meth:`add_usage`) are undone exactly on exit, each
        nested trial its own.

        >>> tree = QuotaTree(KueueConfig({"a": ClusterQueueSpec("a", quotas=(FlavorQuota("f", 9),))}))
        >>> with tree.trial():
        ...     tree.add_usage(Workload("j", "a", "f", 4)); inside = tree.usage("a", "f")
        >>> inside, tree.usage("a", "f")
        (4.0, 0.0)
        """
        self._journals.append({})
        try:
            yield
        finally:
            for (node, flavor), old in self._journals.pop().items():
                node.usage[flavor] = old

    _trial = trial

    # -- Kueue's arithmetic ----------------------------------------------------------------------------------

    def _available(self, node: QuotaNode, flavor: str) -> float:
        """``available``: the node's unused guaranteed quota plus what its parent has, the latter capped by the
        borrowing limit (stored-in-parent - used-in-parent + limit); at the root, subtree quota - usage."""
        usage, guaranteed = node.usage.get(flavor, 0.0), node.guaranteed.get(flavor, 0.0)
        if node.parent is None:
            return node.subtree_quota.get(flavor, 0.0) - usage
        from_parent = self._available(node.parent, flavor)
        quota = node.quotas.get(flavor)
        if quota is not None and quota.borrowing_limit is not None:
            stored_in_parent = node.subtree_quota.get(flavor, 0.0) - guaranteed
            used_in_parent = max(0.0, usage - guaranteed)
            from_parent = min(from_parent, stored_in_parent - used_in_parent + quota.borrowing_limit)
        return max(0.0, guaranteed - usage) + from_parent

    @staticmethod
    def _path_down(node: QuotaNode, flavor: str) -> tuple[QuotaNode, list[tuple[QuotaNode, float, float | None,
                                                                                float]]]:
        """What :meth:`_available` reads of ``node``'s path that never changes: its root, then each node below
        the root down to ``node`` with its guaranteed quota, borrowing limit (None: none) and the quota it stores
        in its parent; only the usages are read as :meth:`available` is asked."""
        path = [node, *node.ancestors()]
        below = []
        for step in reversed(path[:-1]):
            quota = step.quotas.get(flavor)
            guaranteed = step.guaranteed.get(flavor, 0.0)
            limit = quota.borrowing_limit if quota is not None else None
            below.append((step, guaranteed, limit, step.subtree_quota.get(flavor, 0.0) - guaranteed))
        return path[-1], below

    def available(self, cluster_queue: str, flavor: str) -> float:
        """GPUs the ClusterQueue may still take on ``flavor``, borrowing included (``ClusterQueueSnapshot.
        Available``: never below 0).  A flavor it lists no quota for: 0 (Kueue only assigns listed flavors).
        :meth:`_available`'s arithmetic, in its order, walked down the path kept for the queue and flavor (a
        busy cluster asks it millions of times, inside preemption's trials too).

        >>> QuotaTree(KueueConfig({"a": ClusterQueueSpec("a", quotas=(FlavorQuota("f", 4),))})).available("a", "g")
        0.0
        """
        path = self._paths.get((cluster_queue, flavor))
        if path is None:
            if cluster_queue not in self._cqs:
                raise KeyError(cluster_queue)
            return 0.0
        root, below = path
        value = root.subtree_quota.get(flavor, 0.0) - root.usage.get(flavor, 0.0)
        for node, guaranteed, limit, stored_in_parent in below:
            usage = node.usage.get(flavor, 0.0)
            if limit is not None:
                value = min(value, stored_in_parent - max(0.0, usage - guaranteed) + limit)
            value = max(0.0, guaranteed - usage) + value
        return max(0.0, value)

    def fits(self, cluster_queue: str, flavor: str, gpus: float, borrowing: bool = True) -> bool:
        """Would ``gpus`` more fit now (``workloadFits``)?  Without ``borrowing`` it must also stay within the
        ClusterQueue's nominal quota.

        >>> tree = QuotaTree(KueueConfig({"a": ClusterQueueSpec("a", "o", (FlavorQuota("f", 4),)),
        ...                               "b": ClusterQueueSpec("b", "o", (FlavorQuota("f", 4),))}))
        >>> tree.fits("a", "f", 6), tree.fits("a", "f", 6, borrowing=False), tree.fits("a", "f", 9)
        (True, False, False)
        """
        if (cluster_queue, flavor) not in self._paths:
            if cluster_queue not in self._cqs:
                raise KeyError(cluster_queue)
            return False
        if not borrowing and self.would_borrow(cluster_queue, flavor, gpus):
            return False
        return gpus <= self.available(cluster_queue, flavor)

    def borrowing(self, cluster_queue: str, flavor: str) -> float:
        """The ClusterQueue's usage above its nominal quota (≥ 0)."""
        node = self._cqs[cluster_queue]
        return max(0.0, node.usage.get(flavor, 0.0) - node.subtree_quota.get(flavor, 0.0))

    def would_borrow(self, cluster_queue: str, flavor: str, gpus: float) -> bool:
        """``BorrowingWith``: would ``gpus`` more take it above its nominal quota?"""
        node = self._cqs[cluster_queue]
        return node.subtree_quota.get(flavor, 0.0) < node.usage.get(flavor, 0.0) + gpus

    # -- fair sharing ----------------------------------------------------------------------------------------

    def share(self, name: str, extra: Workload | None = None, without: Iterable[Workload] = ()) -> Share:
        """The full :class:`Share` behind :meth:`dominant_share`."""
        node = self._node(name)
        with self._trial():
            if extra is not None:
                self._add_usage(self._cqs[extra.cluster_queue], extra.flavor, extra.gpus)
            for gone in without:
                gone = self._admitted[gone.key]
                self._remove_usage(self._cqs[gone.cluster_queue], gone.flavor, gone.gpus)
            return dominant_resource_share(node)

    def dominant_share(self, name: str, extra: Workload | None = None, without: Iterable[Workload] = ()) -> float:
        """Kueue's weighted dominant resource share of a ClusterQueue or cohort w.r.t. its parent
        (``PreciseWeightedShare``; the status field rounds it up), as if ``extra`` were admitted and ``without``
        released.  0 while it borrows nothing; infinite for a borrowing node of weight 0.

        >>> cqs = {n: ClusterQueueSpec(n, "o", (FlavorQuota("f", 5),)) for n in "ab"}
        >>> tree = QuotaTree(KueueConfig(cqs))
        >>> tree.dominant_share("a", extra=Workload("j", "a", "f", 7))  # 2 borrowed of 10 lendable
        200.0
        """
        return self.share(name, extra, without).value

    def fair_order_key(self, w: Workload) -> tuple:
        """Sort key for competing heads under fair sharing: the key of the tournament at the root of ``w``'s
        tree.  Exact for single-level cohorts (every ClusterQueue a child of its root) and ClusterQueues without
        a cohort; with hierarchical cohorts Kueue's order is a tournament that no flat key expresses: use
        :meth:`fair_pick` there.

        >>> cqs = {n: ClusterQueueSpec(n, "o", (FlavorQuota("f", 5),)) for n in "ab"}
        >>> tree = QuotaTree(KueueConfig(cqs))
        >>> tree.admit(Workload("old", "a", "f", 5))
        >>> heads = [Workload("x", "a", "f", 2, priority=9), Workload("y", "b", "f", 2)]
        >>> [w.key for w in sorted(heads, key=tree.fair_order_key)]
        ['y', 'x']
        """
        return tournament_key(self, w)

    def fair_pick(self, heads: Iterable[Workload]) -> Workload:
        """The head Kueue's fair-sharing scheduler considers next (``runTournament``): in each cohort, the
        child whose nominee gives it the best key wins, bottom-up.  Heads of different trees (which Kueue takes
        in no set order) are compared by :meth:`fair_order_key`; heads of one ClusterQueue compete at its
        parent as siblings would.

        >>> from simcluster.tiers.model import CohortSpec
        >>> cqs = {n: ClusterQueueSpec(n, c, (FlavorQuota("f", 4),)) for n, c in [("a1", "A"), ("a2", "A"),
        ...                                                                   ("b1", "B")]}
        >>> cohorts = {"A": CohortSpec("A", "root"), "B": CohortSpec("B", "root")}
        >>> tree = QuotaTree(KueueConfig(cqs, cohorts))
        >>> tree.admit(Workload("busy", "b1", "f", 6))
        >>> tree.fair_pick([Workload("x", "a1", "f", 6), Workload("y", "b1", "f", 1, priority=5)]).key
        'x'
        """
        return tournament_winner(self, heads)

    # -- preemption ------------------------------------------------------------------------------------------

    def preemption_targets(self, incoming: Workload, fair_sharing: FairSharing | None = None) -> list[Workload] | None:
        """The admitted workloads Kueue would evict so that ``incoming`` fits on its flavor: ``[]`` when it fits
        as is, None when no allowed preemption makes it fit.  ``fair_sharing`` (default: the config's) chooses
        Kueue's fair-sharing preemption (``fairPreemptions``) over the classical one."""
        return preemption.preemption_targets(self, incoming, fair_sharing)

    # usage only, no admission bookkeeping: preemption's trial removals and fill-backs, undone by the trial
    def remove_usage(self, w: Workload) -> None:
        """Take ``w``'s GPUs out of the usage (inside a :meth:`trial`: an "as if released")."""
        self._remove_usage(self._cqs[w.cluster_queue], w.flavor, w.gpus)

    def add_usage(self, w: Workload) -> None:
        """Put ``w``'s GPUs into the usage (inside a :meth:`trial`: an "as if admitted")."""
        self._add_usage(self._cqs[w.cluster_queue], w.flavor, w.gpus)
