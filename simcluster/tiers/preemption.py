"""The workloads Kueue would preempt so that an incoming one fits: the classical preemption
(``pkg/scheduler/preemption/preemption.go`` with its ``classical`` and ``common`` subpackages) and the fair-sharing
one (``fairsharing``), on a :class:`~simcluster.tiers.quota_tree.QuotaTree`.  The tree holds quota and usage and
asks here (:meth:`~simcluster.tiers.quota_tree.QuotaTree.preemption_targets`); every function takes the tree and
runs its removals inside the tree's trials, so usage is restored exactly afterwards.  This module imports the
tree only for type checking: the tree imports it, and an import cycle would run.

>>> from simcluster.tiers.model import ClusterQueueSpec, FlavorQuota, KueueConfig, Preemption
>>> from simcluster.tiers.quota_tree import QuotaTree
>>> rules = Preemption(within_cluster_queue="LowerPriority")
>>> tree = QuotaTree(KueueConfig({"a": ClusterQueueSpec("a", quotas=(FlavorQuota("f", 4),), preemption=rules)}))
>>> tree.admit(Workload("low", "a", "f", 3))
>>> [w.key for w in preemption_targets(tree, Workload("high", "a", "f", 2, priority=1))]
['low']
"""

from __future__ import annotations

import heapq
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from simcluster.tiers.fair_sharing import Share, dominant_resource_share
from simcluster.tiers.model import FAIR_SHARING_STRATEGIES, FairSharing
from simcluster.tiers.quota_node import QuotaNode, Workload, tiebreak

if TYPE_CHECKING:
    from simcluster.tiers.quota_tree import QuotaTree


# the classical candidates' kinds (classical/hierarchical_preemption.go's preemptionVariant)
WITHIN_CQ = "WithinClusterQueue"
HIERARCHICAL_RECLAIM = "HierarchicalReclaim"
RECLAIM_WITHOUT_BORROWING = "ReclaimWithoutBorrowing"
RECLAIM_WHILE_BORROWING = "ReclaimWhileBorrowing"


def _candidate_order(preemptor_cq: str) -> Callable[[Workload], tuple]:
    """``common.CandidatesOrdering``: other ClusterQueues' workloads first, lower priority first, most recently
    admitted first, then the key (evicted-first and admission fair sharing are not modelled)."""
    return lambda w: (w.cluster_queue == preemptor_cq, w.priority, -w.admitted_at, -w.sequence, tiebreak(w.key))


def satisfies_policy(policy: str, incoming: Workload, candidate: Workload) -> bool:
    """``common.SatisfiesPreemptionPolicy``: may ``incoming`` preempt ``candidate`` under ``policy``?  Kueue
    compares the two workloads' queue-order timestamps; here the candidate's admission time stands for its own.

    >>> new, old = Workload("n", "a", "f", 1, priority=1, admitted_at=5), Workload("o", "a", "f", 1, 1, 3)
    >>> [satisfies_policy(p, new, old) for p in ("Never", "LowerPriority", "LowerOrNewerEqualPriority", "Any")]
    [False, False, False, True]
    >>> satisfies_policy("LowerOrNewerEqualPriority", old, new)
    True
    """
    if policy == "LowerPriority":
        return incoming.priority > candidate.priority
    if policy == "LowerOrNewerEqualPriority":
        newer = incoming.priority == candidate.priority and incoming.admitted_at < candidate.admitted_at
        return incoming.priority > candidate.priority or newer
    return policy == "Any"


def preemption_targets(tree: QuotaTree, incoming: Workload,
                       fair_sharing: FairSharing | None = None) -> list[Workload] | None:
    """The admitted workloads Kueue would evict so that ``incoming`` fits on its flavor: ``[]`` when it fits
    as is, None when no allowed preemption makes it fit.  ``fair_sharing`` (default: the config's) chooses
    Kueue's fair-sharing preemption (``fairPreemptions``) over the classical one."""
    cq = tree._cqs[incoming.cluster_queue]
    if incoming.flavor not in cq.quotas:
        return None
    if tree.fits(incoming.cluster_queue, incoming.flavor, incoming.gpus):
        return []
    fair_sharing = fair_sharing if fair_sharing is not None else tree.config.fair_sharing
    with tree._trial():
        if fair_sharing is not None and fair_sharing.enabled:
            return _fair_preemptions(tree, incoming, fair_sharing.preemption_strategies)
        return _classical_preemptions(tree, incoming)


def _fill_back(tree: QuotaTree, incoming: Workload, targets: list[Workload], borrowing: bool) -> list[Workload]:
    """``fillBackWorkloads``: from the last-but-one target backwards, put each back while ``incoming``
    still fits; only those it cannot do without stay targets."""
    kept = list(targets)
    for i in range(len(kept) - 2, -1, -1):
        tree._add(kept[i])
        if tree.fits(incoming.cluster_queue, incoming.flavor, incoming.gpus, borrowing):
            del kept[i]
        else:
            tree._remove(kept[i])
    return kept


# -- classical preemption ------------------------------------------------------------------------------


def _classify(tree: QuotaTree, incoming: Workload, candidate: Workload, advantage: bool) -> str | None:
    """``classifyPreemptionVariant``: how (if at all) ``candidate`` may be preempted for ``incoming``."""
    rules = tree._cqs[incoming.cluster_queue].spec.preemption
    same_queue = candidate.cluster_queue == incoming.cluster_queue
    policy = rules.within_cluster_queue if same_queue else rules.reclaim_within_cohort
    if not satisfies_policy(policy, incoming, candidate):
        return None
    if same_queue:
        return WITHIN_CQ
    if advantage:
        return HIERARCHICAL_RECLAIM
    threshold = rules.borrow_within_cohort_max_priority
    above_threshold = candidate.priority >= incoming.priority or (
        threshold is not None and candidate.priority > threshold)
    if rules.borrow_within_cohort == "Never" or above_threshold:
        return RECLAIM_WITHOUT_BORROWING
    return RECLAIM_WHILE_BORROWING


def _cohort_candidates(tree: QuotaTree, incoming: Workload) -> tuple[list, list]:
    """``collectCandidatesForHierarchicalReclaim``: walking up from the ClusterQueue, the over-quota
    ClusterQueues of each new subtree; the incoming has hierarchical advantage over those found once a
    subtree on its path holds its request within quota."""
    cq, flavor = tree._cqs[incoming.cluster_queue], incoming.flavor
    hierarchy: list = []
    priority: list = []
    if cq.parent is None or cq.spec.preemption.reclaim_within_cohort == "Never":
        return hierarchy, priority
    advantage = cq.subtree_quota[flavor] >= cq.usage.get(flavor, 0.0) + incoming.gpus
    remaining = max(0.0, incoming.gpus - max(0.0, cq.guaranteed[flavor] - cq.usage.get(flavor, 0.0)))
    previous = None
    for subtree in cq.ancestors():
        found = hierarchy if advantage else priority
        _collect_in_subtree(tree, incoming, subtree, subtree, previous, advantage, found)
        fits = subtree.subtree_quota.get(flavor, 0.0) >= subtree.usage.get(flavor, 0.0) + remaining
        local = max(0.0, subtree.guaranteed.get(flavor, 0.0) - subtree.usage.get(flavor, 0.0))
        remaining = max(0.0, remaining - local)
        advantage = advantage or fits
        previous = subtree
    return hierarchy, priority


def _collect_in_subtree(tree: QuotaTree, incoming: Workload, node: QuotaNode, subtree: QuotaNode,
                        skip: QuotaNode | None, advantage: bool, found: list) -> None:
    """``collectCandidatesInSubtree``: over-quota cohorts are entered, over-quota ClusterQueues give their
    candidates, each tagged with the subtree's root (the candidate's lowest common ancestor)."""
    flavor = incoming.flavor
    for child in node.cohorts:
        if child is not skip and not child.within_quota(flavor):
            _collect_in_subtree(tree, incoming, child, subtree, skip, advantage, found)
    for child in node.cqs:
        if child.name != incoming.cluster_queue and not child.within_quota(flavor):
            for w in tree._by_queue.get((child.name, flavor), {}).values():
                kind = _classify(tree, incoming, w, advantage)
                if kind is not None:
                    found.append((w, kind, subtree))


def _still_valid(tree: QuotaTree, incoming: Workload, candidate: tuple, borrowing: bool) -> bool:
    """``candidateIsValid``: another queue's candidate only while its queue, and every cohort up to the
    common ancestor, is still over quota."""
    w, kind, lca = candidate
    if w.cluster_queue == incoming.cluster_queue:
        return True
    if borrowing and kind == RECLAIM_WITHOUT_BORROWING:
        return False
    node = tree._cqs[w.cluster_queue]
    if node.within_quota(w.flavor):
        return False
    for ancestor in node.ancestors():
        if ancestor is lca:
            break
        if ancestor.within_quota(w.flavor):
            return False
    return True


def _classical_preemptions(tree: QuotaTree, incoming: Workload) -> list[Workload] | None:
    """``classicalPreemptions``: candidates in the order hierarchy, priority, same queue (each sorted by
    ``CandidatesOrdering``); one or two attempts, with and without borrowing, in the order the code picks;
    each removes valid candidates until the incoming fits, then fills back."""
    cq, flavor = tree._cqs[incoming.cluster_queue], incoming.flavor
    rules = cq.spec.preemption
    order = _candidate_order(incoming.cluster_queue)
    same: list = []
    if rules.within_cluster_queue != "Never":
        for w in tree._by_queue.get((cq.name, flavor), {}).values():
            if _classify(tree, incoming, w, False) is not None:
                same.append((w, WITHIN_CQ, None))
    forbidden = rules.borrow_within_cohort == "Never"
    under_nominal = cq.usage.get(flavor, 0.0) < cq.subtree_quota[flavor]
    flat = cq.parent is not None and cq.parent.parent is None
    if flat and forbidden and not under_nominal and cq.subtree_quota[flavor] < cq.usage.get(flavor, 0.0) + incoming.gpus:
        # (every other queue's candidate would be a reclaim without borrowing, which the one attempt, with
        # borrowing, never takes: listing thousands of them to skip each is the cost of a busy cohort)
        hierarchy, priority = [], []
    else:
        hierarchy, priority = _cohort_candidates(tree, incoming)
    candidates = InOrder([(order(c[0]), i, c) for i, c in enumerate(group)] for group in (hierarchy, priority, same))
    if (not hierarchy and not priority) or (forbidden and not under_nominal):
        attempts = (True,)
    elif forbidden and not hierarchy:
        attempts = (False, True)
    else:
        attempts = (True, False)
    for borrowing in attempts:
        targets = _minimal_set(tree, incoming, candidates, borrowing)
        if targets is not None:
            return targets
    return None


class InOrder:
    """Candidates group by group, each group in its order, sorted only as far as the attempts read them: an attempt
    stops at the first candidates that make room, usually a few of thousands (a heap per group, its prefix kept for
    the next attempt).

    >>> list(InOrder([[(2, 0, "b"), (1, 1, "a")], [(0, 0, "c")]])), list(InOrder([[]]))
    (['a', 'b', 'c'], [])
    """

    def __init__(self, groups: Iterable[list[tuple[Any, int, Any]]]) -> None:
        self.heaps = [group for group in groups if group]
        for heap in self.heaps:
            heapq.heapify(heap)
        self.read: list[Any] = []

    def __iter__(self) -> Iterator[Any]:
        yield from self.read
        while self.heaps:
            heap = self.heaps[0]
            while heap:
                item = heapq.heappop(heap)[2]
                self.read.append(item)
                yield item
            self.heaps.pop(0)


def _minimal_set(tree: QuotaTree, incoming: Workload, candidates: Iterable,
                 borrowing: bool) -> list[Workload] | None:
    """One attempt: remove candidates in order until the incoming fits, fill back; usage restored."""
    targets: list[Workload] = []
    with tree._trial():
        for candidate in candidates:
            if not _still_valid(tree, incoming, candidate, borrowing):
                continue
            tree._remove(candidate[0])
            targets.append(candidate[0])
            if tree.fits(incoming.cluster_queue, incoming.flavor, incoming.gpus, borrowing):
                return _fill_back(tree, incoming, targets, borrowing)
    return None


# -- fair-sharing preemption ---------------------------------------------------------------------------


def _fair_candidates(tree: QuotaTree, incoming: Workload) -> list[Workload]:
    """``findCandidates``: the queue's own per withinClusterQueue; those of borrowing ClusterQueues of the
    whole tree per reclaimWithinCohort; in ``CandidatesOrdering``."""
    cq, flavor = tree._cqs[incoming.cluster_queue], incoming.flavor
    rules = cq.spec.preemption
    found = []
    if rules.within_cluster_queue != "Never":
        found += [w for w in tree._by_queue.get((cq.name, flavor), {}).values()
                  if satisfies_policy(rules.within_cluster_queue, incoming, w)]
    if cq.parent is not None and rules.reclaim_within_cohort != "Never":
        for other in tree._borrowers.get((cq.root().name, flavor), {}).values():
            if other is not cq:
                found += [w for w in tree._by_queue.get((other.name, flavor), {}).values()
                          if satisfies_policy(rules.reclaim_within_cohort, incoming, w)]
    return sorted(found, key=_candidate_order(incoming.cluster_queue))


def _fits_without_incoming(tree: QuotaTree, incoming: Workload) -> bool:
    """``workloadFitsForFairSharing``: the fit check with the incoming's simulated usage taken out."""
    with tree._trial():
        tree._remove(incoming)
        return tree.fits(incoming.cluster_queue, incoming.flavor, incoming.gpus)


def _fair_preemptions(tree: QuotaTree, incoming: Workload, strategies: tuple[str, ...]) -> list[Workload] | None:
    """``fairPreemptions``: with the incoming's usage simulated, the first strategy over the queues in
    ``TargetClusterQueueOrdering``; if it falls short and a second is configured, rule S2-b
    (LessThanInitialShare) over the candidates the first passed by; then fill back."""
    candidates = _fair_candidates(tree, incoming)
    if not candidates:
        return None
    strategies = strategies or FAIR_SHARING_STRATEGIES
    tree._add(incoming)
    fits, targets, retry = _first_strategy(tree, incoming, candidates, strategies[0])
    if not fits and len(strategies) > 1:
        fits = _second_strategy(tree, incoming, retry, targets)
    tree._remove(incoming)
    if not fits:
        return None
    return _fill_back(tree, incoming, targets, True)


def _take(tree: QuotaTree, incoming: Workload, w: Workload, targets: list[Workload]) -> bool:
    """Remove ``w`` as a target; does the incoming fit now?"""
    tree._remove(w)
    targets.append(w)
    return _fits_without_incoming(tree, incoming)


def _first_strategy(tree: QuotaTree, incoming: Workload, candidates: list[Workload], strategy: str) -> tuple:
    """``runFirstFsStrategy``: own-queue candidates go unconditionally, and so do others' while the
    preemptor stays within nominal (FairSharingPreemptWithinNominal, on by default); otherwise a candidate
    goes when ``strategy`` holds on the almost-lowest-common-ancestors' shares."""
    ordering = _FairOrdering(tree, incoming, candidates)
    targets: list[Workload] = []
    retry: list[Workload] = []
    within_nominal = not tree.would_borrow(incoming.cluster_queue, incoming.flavor, 0)
    for queue in ordering:
        if queue.name == incoming.cluster_queue or within_nominal:
            if _take(tree, incoming, ordering.pop(queue), targets):
                return True, targets, retry
            continue
        preemptor_new, target_old = ordering.shares(queue)
        if preemptor_new.key()[0] == 1 and target_old.key()[0] == 0:  # fsStrategyUnsatisfiable
            while ordering.has_workload(queue):
                retry.append(ordering.pop(queue))
            continue
        while ordering.has_workload(queue):
            w = ordering.pop(queue)
            with tree._trial():
                tree._remove(w)
                target_new = ordering.shares(queue)[1]
            if _strategy_holds(strategy, preemptor_new, target_old, target_new):
                if _take(tree, incoming, w, targets):
                    return True, targets, retry
                break  # the shares changed: the ordering may now pick another queue
            retry.append(w)
    return False, targets, retry


def _second_strategy(tree: QuotaTree, incoming: Workload, retry: list[Workload],
                     targets: list[Workload]) -> bool:
    """``runSecondFsStrategy`` (rule S2-b): per queue in order, its first retry candidate goes if the
    preemptor's new share is below the target's current one; then the queue is dropped."""
    ordering = _FairOrdering(tree, incoming, retry)
    for queue in ordering:
        preemptor_new, target_old = ordering.shares(queue)
        w = ordering.pop(queue)
        passes = _strategy_holds("LessThanInitialShare", preemptor_new, target_old, target_old)
        if passes and _take(tree, incoming, w, targets):
            return True
        ordering.drop(queue)
    return False


def _strategy_holds(strategy: str, preemptor_new: Share, target_old: Share, target_new: Share) -> bool:
    """``fairsharing.LessThanOrEqualToFinalShare`` (S2-a) and ``LessThanInitialShare`` (S2-b)."""
    if strategy == "LessThanOrEqualToFinalShare":
        return preemptor_new.key() <= target_new.key()
    return preemptor_new.key() < target_old.key()


class _FairOrdering:
    """``TargetClusterQueueOrdering``: from the root, repeatedly descend into the child with the highest share
    (cohorts win ties with queues) until a ClusterQueue; queues and cohorts that no longer borrow, or have no
    candidates left, are pruned (the preemptor's own queue and the cohorts above it only once empty)."""

    def __init__(self, tree: QuotaTree, incoming: Workload, candidates: list[Workload]) -> None:
        self.tree = tree
        self.preemptor = tree._cqs[incoming.cluster_queue]
        self.on_path = set(self.preemptor.ancestors())
        self.order = _candidate_order(incoming.cluster_queue)
        self.queue_of: dict[str, list[Workload]] = defaultdict(list)
        for w in candidates:
            self.queue_of[w.cluster_queue].append(w)
        self.pruned: set[QuotaNode] = set()

    def __iter__(self) -> Iterator[QuotaNode]:
        if self.preemptor.parent is None:
            while self.preemptor not in self.pruned and self.has_workload(self.preemptor):
                yield self.preemptor
            return
        root = self.preemptor.root()
        while root not in self.pruned:
            target = self._next(root)
            if target is not None:
                yield target

    def has_workload(self, queue: QuotaNode) -> bool:
        return bool(self.queue_of.get(queue.name))

    def pop(self, queue: QuotaNode) -> Workload:
        return self.queue_of[queue.name].pop(0)

    def drop(self, queue: QuotaNode) -> None:
        self.pruned.add(queue)

    def _next(self, cohort: QuotaNode) -> QuotaNode | None:
        best_cq, best_cq_key = None, (-1, -1.0)
        for cq in cohort.cqs:
            if cq in self.pruned:
                continue
            share = dominant_resource_share(cq)
            if (not share.borrowing and cq is not self.preemptor) or not self.has_workload(cq):
                self.pruned.add(cq)
            elif share.key() == best_cq_key and best_cq is not None:
                if self.order(self.queue_of[cq.name][0]) < self.order(self.queue_of[best_cq.name][0]):
                    best_cq = cq
            elif share.key() > best_cq_key:
                best_cq, best_cq_key = cq, share.key()
        best_cohort, best_cohort_key = None, (-1, -1.0)
        for child in cohort.cohorts:
            if child in self.pruned:
                continue
            share = dominant_resource_share(child)
            if not share.borrowing and child not in self.on_path:
                self.pruned.add(child)
            elif share.key() >= best_cohort_key:
                best_cohort, best_cohort_key = child, share.key()
        if best_cohort is None and best_cq is None:
            self.pruned.add(cohort)
            return None
        if best_cohort is not None and best_cohort_key >= best_cq_key:
            return self._next(best_cohort)
        return best_cq

    def shares(self, queue: QuotaNode) -> tuple[Share, Share]:
        """``ComputeShares``: the shares of the preemptor's and the target's almost-lowest-common-ancestors."""
        lca = next(a for a in queue.ancestors() if a in self.on_path)
        preemptor, target = _almost(self.preemptor, lca), _almost(queue, lca)
        return dominant_resource_share(preemptor), dominant_resource_share(target)


def _almost(cq: QuotaNode, lca: QuotaNode) -> QuotaNode:
    """``getAlmostLCA``: the node on ``cq``'s path whose parent is ``lca``."""
    node = cq
    while node.parent is not lca:
        node = node.parent
    return node
