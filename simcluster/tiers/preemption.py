"""The workloads Kueue would preempt so that an incoming one fits: the classical preemption
(``pkg/scheduler/preemption/preemption.go`` with its ``classical`` and ``common`` subpackages) and the fair-sharing
one (``fairsharing``), on a :class:`~simcluster.tiers.quota_tree.QuotaTree`.  The tree holds quota and usage and
asks here (:meth:`~simcluster.tiers.quota_tree.QuotaTree.preemption_targets`); every function takes the tree and
runs its removals inside the tree's trials, so usage is restored exactly afterwards.  This module imports the
tree only for type checking: the tree imports it, and an import cycle would run.

A search costs what it reads, not the admitted workloads of the tree: each queue's candidates come from the
tree's index in preemption order (:meth:`~simcluster.tiers.quota_tree.QuotaTree.in_preemption_order`, a prefix per
policy), merged across queues only as far as an attempt goes; a search's answer (targets or none) is remembered
until the cohort tree changes; fair sharing works out a target's share once per size of workload evicted.

A search may be given a ``room`` test beside the quota's (:data:`Room`): Kueue's ``workloadFits`` also runs the
topology assignment for a workload placed by TAS, so a candidate is taken while the quota does not fit *or* the
victims so far would free no domain the workload can use, and the fill-back puts a victim back only where both
still hold without it.  Such a search reads the GPUs too, not only the tree: it is not remembered.

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
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING

from simcluster.tiers.fair_sharing import Share, dominant_resource_share
from simcluster.tiers.model import FAIR_SHARING_STRATEGIES, FairSharing
from simcluster.tiers.quota_node import QuotaNode, Workload, tiebreak

if TYPE_CHECKING:
    from simcluster.tiers.quota_tree import QuotaTree


# Whether the incoming would find room once the given victims leave (the topology assignment of Kueue's
# ``workloadFits``); asked only once the quota fits, inside the search's trial.
Room = Callable[[Sequence[Workload]], bool]


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


def preemption_targets(tree: QuotaTree, incoming: Workload, fair_sharing: FairSharing | None = None,
                       room: Room | None = None) -> list[Workload] | None:
    """The admitted workloads Kueue would evict so that ``incoming`` fits on its flavor: ``[]`` when it fits
    as is, None when no allowed preemption makes it fit.  ``fair_sharing`` (default: the config's) chooses
    Kueue's fair-sharing preemption (``fairPreemptions``) over the classical one.  A search that found nothing
    is remembered until the cohort tree next changes (:meth:`QuotaTree.facts`): the answer is a function of the
    tree's admitted workloads and the incoming's queue, flavor, GPUs, priority and queueing time.  So is a search
    that found targets: a head whose targets' GPUs would not hold it asks again when another tree frees GPUs.

    ``room`` (None: the quota alone) must hold too, wherever the quota is asked (:data:`Room`).  Such a search
    reads the GPUs, so it is not remembered; it removes the same candidates in the same order, only further, so it
    is run only where the quota's own (remembered) search found targets.  Its cost is the quota search's plus a
    room test per candidate taken once the quota fits, and per target in the fill-back."""
    if room is not None:
        return _with_room(tree, incoming, fair_sharing, room)
    cq = tree.queue_node(incoming.cluster_queue)
    if incoming.flavor not in cq.quotas:
        return None
    if tree.fits(incoming.cluster_queue, incoming.flavor, incoming.gpus):
        return []
    fair_sharing = fair_sharing if fair_sharing is not None else tree.config.fair_sharing
    fair = fair_sharing is not None and fair_sharing.enabled
    asked = (_SEARCHED, fair and fair_sharing.preemption_strategies, incoming.cluster_queue, incoming.flavor,
             incoming.gpus, incoming.priority, incoming.admitted_at)
    facts = tree.facts(incoming.cluster_queue)
    if asked in facts:
        known = facts[asked]
        return None if known is None else list(known)
    with tree.trial():
        if fair:
            found = _fair_preemptions(tree, incoming, fair_sharing.preemption_strategies)
        else:
            found = _classical_preemptions(tree, incoming)
    facts[asked] = None if found is None else tuple(found)
    return found


_SEARCHED = "preemption targets"  # (the tag of a search's answer among a tree's facts: None, or its targets)


def _with_room(tree: QuotaTree, incoming: Workload, fair_sharing: FairSharing | None,
               room: Room) -> list[Workload] | None:
    """:func:`preemption_targets` with a room test: none where the quota's own search finds none (the removals are
    the same, and a stricter test stops no sooner), ``[]`` where the quota fits and the room holds as is."""
    quota_only = preemption_targets(tree, incoming, fair_sharing)
    if quota_only is None:
        return None
    if not quota_only:  # (the quota fits with no victim: Kueue would not preempt; the room is the caller's to ask)
        return []
    fair_sharing = fair_sharing if fair_sharing is not None else tree.config.fair_sharing
    with tree.trial():
        if fair_sharing is not None and fair_sharing.enabled:
            return _fair_preemptions(tree, incoming, fair_sharing.preemption_strategies, room)
        return _classical_preemptions(tree, incoming, room)


def _fill_back(tree: QuotaTree, incoming: Workload, targets: list[Workload], borrowing: bool,
               room: Room | None = None) -> list[Workload]:
    """``fillBackWorkloads``: from the last-but-one target backwards, put each back while ``incoming``
    still fits (its quota, and ``room`` without it); only those it cannot do without stay targets.

    >>> from simcluster.tiers.model import ClusterQueueSpec, FlavorQuota, KueueConfig
    >>> from simcluster.tiers.quota_tree import QuotaTree
    >>> tree = QuotaTree(KueueConfig({"a": ClusterQueueSpec("a", quotas=(FlavorQuota("f", 8),))}))
    >>> w, x, y, z = (Workload(k, "a", "f", 2) for k in "wxyz")
    >>> for each in (w, x, y, z):
    ...     tree.admit(each)
    >>> def fill_back(room):  # (x, y and z removed; 4 GPUs wanted: one of x and y may go back)
    ...     with tree.trial():
    ...         for each in (x, y, z):
    ...             tree.remove_usage(each)
    ...         return [t.key for t in _fill_back(tree, Workload("in", "a", "f", 4), [x, y, z], True, room)]
    >>> fill_back(None), fill_back(lambda victims: y in victims)  # (a room that needs y gone keeps y)
    (['x', 'z'], ['y', 'z'])
    """
    kept = list(targets)
    for i in range(len(kept) - 2, -1, -1):
        tree.add_usage(kept[i])
        if tree.fits(incoming.cluster_queue, incoming.flavor, incoming.gpus, borrowing) and (
                room is None or room(kept[:i] + kept[i + 1:])):
            del kept[i]
        else:
            tree.remove_usage(kept[i])
    return kept


# -- classical preemption ------------------------------------------------------------------------------


def _classify(tree: QuotaTree, incoming: Workload, candidate: Workload, advantage: bool) -> str | None:
    """``classifyPreemptionVariant``: how (if at all) ``candidate`` may be preempted for ``incoming``."""
    rules = tree.queue_node(incoming.cluster_queue).spec.preemption
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


def _cohort_candidates(tree: QuotaTree, incoming: Workload) -> tuple[list[Source], list[Source]]:
    """``collectCandidatesForHierarchicalReclaim``: walking up from the ClusterQueue, the over-quota
    ClusterQueues of each new subtree; the incoming has hierarchical advantage over those found once a
    subtree on its path holds its request within quota.  Each queue found is one :data:`Source`."""
    cq, flavor = tree.queue_node(incoming.cluster_queue), incoming.flavor
    hierarchy: list[Source] = []
    priority: list[Source] = []
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


# One queue's candidates for a classical search: its admitted workloads that the policy lets the incoming
# preempt, in order (QuotaTree.in_preemption_order), the subtree they were found in (None: the incoming's own
# queue) and whether the incoming has hierarchical advantage over them.
Source = tuple[Sequence[tuple[tuple, int, Workload]], QuotaNode | None, bool]


def _collect_in_subtree(tree: QuotaTree, incoming: Workload, node: QuotaNode, subtree: QuotaNode,
                        skip: QuotaNode | None, advantage: bool, found: list[Source]) -> None:
    """``collectCandidatesInSubtree``: over-quota cohorts are entered, over-quota ClusterQueues give their
    candidates, each tagged with the subtree's root (the candidate's lowest common ancestor)."""
    flavor, policy = incoming.flavor, tree.queue_node(incoming.cluster_queue).spec.preemption.reclaim_within_cohort
    for child in node.cohorts:
        if child is not skip and not child.within_quota(flavor):
            _collect_in_subtree(tree, incoming, child, subtree, skip, advantage, found)
    for child in node.cqs:
        if child.name != incoming.cluster_queue and not child.within_quota(flavor):
            entries = tree.in_preemption_order(child.name, flavor, policy, incoming)
            if entries:
                found.append((entries, subtree, advantage))


def _still_valid(tree: QuotaTree, incoming: Workload, candidate: tuple, borrowing: bool) -> bool:
    """``candidateIsValid``: another queue's candidate only while its queue, and every cohort up to the
    common ancestor, is still over quota."""
    w, kind, lca = candidate
    if w.cluster_queue == incoming.cluster_queue:
        return True
    if borrowing and kind == RECLAIM_WITHOUT_BORROWING:
        return False
    node = tree.queue_node(w.cluster_queue)
    if node.within_quota(w.flavor):
        return False
    for ancestor in node.ancestors():
        if ancestor is lca:
            break
        if ancestor.within_quota(w.flavor):
            return False
    return True


def _classical_preemptions(tree: QuotaTree, incoming: Workload, room: Room | None = None) -> list[Workload] | None:
    """``classicalPreemptions``: candidates in the order hierarchy, priority, same queue (each sorted by
    ``CandidatesOrdering``); one or two attempts, with and without borrowing, in the order the code picks;
    each removes valid candidates until the incoming fits (its quota, and ``room``), then fills back."""
    cq, flavor = tree.queue_node(incoming.cluster_queue), incoming.flavor
    rules = cq.spec.preemption
    own = tree.in_preemption_order(cq.name, flavor, rules.within_cluster_queue, incoming)
    same: list[Source] = [(own, None, False)] if own else []
    forbidden = rules.borrow_within_cohort == "Never"
    under_nominal = cq.usage.get(flavor, 0.0) < cq.subtree_quota[flavor]
    flat = cq.parent is not None and cq.parent.parent is None
    if flat and forbidden and not under_nominal and cq.subtree_quota[flavor] < cq.usage.get(flavor, 0.0) + incoming.gpus:
        # (every other queue's candidate would be a reclaim without borrowing, which the one attempt, with
        # borrowing, never takes)
        hierarchy, priority = [], []
    else:
        hierarchy, priority = _cohort_candidates(tree, incoming)
    if (not hierarchy and not priority) or (forbidden and not under_nominal):
        attempts = (True,)
    elif forbidden and not hierarchy:
        attempts = (False, True)
    else:
        attempts = (True, False)
    for borrowing in attempts:
        targets = _minimal_set(tree, incoming, (hierarchy, priority, same), borrowing, room)
        if targets is not None:
            return targets
    return None


def _minimal_set(tree: QuotaTree, incoming: Workload, groups: Iterable[list[Source]], borrowing: bool,
                 room: Room | None = None) -> list[Workload] | None:
    """One attempt: remove candidates in order until the incoming fits (and ``room`` holds), fill back; usage
    restored.  Each group
    is read in ``CandidatesOrdering`` by merging its queues' ordered candidates, only as far as the attempt
    goes; a queue whose candidate is no longer valid is left for the rest of the attempt, since none of its
    later ones is valid either (its queue and cohorts only go down in usage; a reclaim without borrowing stays
    one for higher priorities).  Evicting F GPUs raises what the incoming's queue may take by at most F, so the
    fit is not asked until the GPUs removed could close the gap there was before the first removal."""
    targets: list[Workload] = []
    queue, flavor, gpus = incoming.cluster_queue, incoming.flavor, incoming.gpus
    reach = tree.available(queue, flavor) + _ROUNDING  # (at least what the queue may take, removals so far in)
    with tree.trial():
        for group in groups:
            heap = [(entries[0][0], entries[0][1], i, 0) for i, (entries, _, _) in enumerate(group)]
            heapq.heapify(heap)
            while heap:
                i, pos = heap[0][2], heap[0][3]
                entries, lca, advantage = group[i]
                w = entries[pos][2]
                if lca is not None and not _still_valid(
                        tree, incoming, (w, _classify(tree, incoming, w, advantage), lca), borrowing):
                    heapq.heappop(heap)
                    continue
                tree.remove_usage(w)
                targets.append(w)
                reach += w.gpus
                if reach >= gpus and tree.fits(queue, flavor, gpus, borrowing) and (room is None or room(targets)):
                    return _fill_back(tree, incoming, targets, borrowing, room)
                if pos + 1 < len(entries):
                    heapq.heapreplace(heap, (entries[pos + 1][0], entries[pos + 1][1], i, pos + 1))
                else:
                    heapq.heappop(heap)
    return None


_ROUNDING = 1e-6  # (GPU amounts are whole or dyadic, so exact; a margin in case a trace's are not)


# -- fair-sharing preemption ---------------------------------------------------------------------------


def _fair_candidates(tree: QuotaTree, incoming: Workload) -> dict[str, list[Workload]]:
    """``findCandidates``: the queue's own per withinClusterQueue; those of borrowing ClusterQueues of the
    whole tree per reclaimWithinCohort; by queue, each queue's in ``CandidatesOrdering`` (the order between
    queues is :class:`_FairOrdering`'s)."""
    cq, flavor = tree.queue_node(incoming.cluster_queue), incoming.flavor
    rules = cq.spec.preemption
    found: dict[str, list[Workload]] = {}
    own = tree.in_preemption_order(cq.name, flavor, rules.within_cluster_queue, incoming)
    if own:
        found[cq.name] = [entry[2] for entry in own]
    if cq.parent is not None and rules.reclaim_within_cohort != "Never":
        for other in tree.borrowers(cq.name, flavor):
            theirs = tree.in_preemption_order(other.name, flavor, rules.reclaim_within_cohort, incoming)
            if other is not cq and theirs:
                found[other.name] = [entry[2] for entry in theirs]
    return found


def _fits_without_incoming(tree: QuotaTree, incoming: Workload) -> bool:
    """``workloadFitsForFairSharing``: the fit check with the incoming's simulated usage taken out."""
    with tree.trial():
        tree.remove_usage(incoming)
        return tree.fits(incoming.cluster_queue, incoming.flavor, incoming.gpus)


def _fair_preemptions(tree: QuotaTree, incoming: Workload, strategies: tuple[str, ...],
                      room: Room | None = None) -> list[Workload] | None:
    """``fairPreemptions``: with the incoming's usage simulated, the first strategy over the queues in
    ``TargetClusterQueueOrdering``; if it falls short and a second is configured, rule S2-b
    (LessThanInitialShare) over the candidates the first passed by; then fill back.  The incoming fits where its
    quota does and ``room`` holds for the targets so far."""
    candidates = _fair_candidates(tree, incoming)
    if not candidates:
        return None
    strategies = strategies or FAIR_SHARING_STRATEGIES
    tree.add_usage(incoming)
    fits, targets, retry = _first_strategy(tree, incoming, candidates, strategies[0], room)
    if not fits and len(strategies) > 1:
        fits = _second_strategy(tree, incoming, retry, targets, room)
    tree.remove_usage(incoming)
    if not fits:
        return None
    return _fill_back(tree, incoming, targets, True, room)


def _take(tree: QuotaTree, incoming: Workload, w: Workload, targets: list[Workload], room: Room | None = None) -> bool:
    """Remove ``w`` as a target; does the incoming fit now (its quota, then ``room``)?"""
    tree.remove_usage(w)
    targets.append(w)
    return _fits_without_incoming(tree, incoming) and (room is None or room(targets))


def _first_strategy(tree: QuotaTree, incoming: Workload, candidates: dict[str, list[Workload]], strategy: str,
                    room: Room | None = None) -> tuple[bool, list[Workload], dict[str, Workload]]:
    """``runFirstFsStrategy``: own-queue candidates go unconditionally, and so do others' while the
    preemptor stays within nominal (FairSharingPreemptWithinNominal, on by default); otherwise a candidate
    goes when ``strategy`` holds on the almost-lowest-common-ancestors' shares.  Returns whether the incoming
    fits, the targets, and each queue's first candidate passed by (the second strategy reads no other): a
    queue's candidates passed by are stepped over, not listed, since a busy queue has hundreds."""
    ordering = _FairOrdering(tree, incoming, candidates)
    targets: list[Workload] = []
    retry: dict[str, Workload] = {}  # queue → its first candidate passed by
    within_nominal = not tree.would_borrow(incoming.cluster_queue, incoming.flavor, 0)
    for queue in ordering:
        if queue.name == incoming.cluster_queue or within_nominal:
            if _take(tree, incoming, ordering.pop(queue), targets, room):
                return True, targets, retry
            continue
        preemptor_new, target_old = ordering.shares(queue)
        name = queue.name
        listed = ordering.queue_of.get(name, [])
        at = ordering.next_of[name]
        if preemptor_new.key()[0] == 1 and target_old.key()[0] == 0:  # fsStrategyUnsatisfiable: all passed by
            if at < len(listed):
                retry.setdefault(name, listed[at])
            ordering.next_of[name] = len(listed)
            continue
        holds_after: dict[float, bool] = {}  # GPUs evicted → whether the strategy holds (usage is unchanged here)
        chosen = None
        while at < len(listed):
            w = listed[at]
            at += 1
            holds = holds_after.get(w.gpus)
            if holds is None:
                with tree.trial():
                    tree.remove_usage(w)
                    target_new = ordering.target_share(queue)
                holds = holds_after[w.gpus] = _strategy_holds(strategy, preemptor_new, target_old, target_new)
            if holds:
                chosen = w
                break
            retry.setdefault(name, w)
        ordering.next_of[name] = at
        if chosen is not None and _take(tree, incoming, chosen, targets, room):
            return True, targets, retry
        # (taken or not, the shares changed: the ordering may now pick another queue)
    return False, targets, retry


def _second_strategy(tree: QuotaTree, incoming: Workload, retry: dict[str, Workload], targets: list[Workload],
                     room: Room | None = None) -> bool:
    """``runSecondFsStrategy`` (rule S2-b): per queue in order, its first retry candidate goes if the
    preemptor's new share is below the target's current one; then the queue is dropped (so a queue's first
    retry candidate is all it is given)."""
    ordering = _FairOrdering(tree, incoming, {name: [w] for name, w in retry.items()})
    for queue in ordering:
        preemptor_new, target_old = ordering.shares(queue)
        w = ordering.pop(queue)
        passes = _strategy_holds("LessThanInitialShare", preemptor_new, target_old, target_old)
        if passes and _take(tree, incoming, w, targets, room):
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

    def __init__(self, tree: QuotaTree, incoming: Workload, candidates: dict[str, list[Workload]]) -> None:
        self.tree = tree
        self.preemptor = tree.queue_node(incoming.cluster_queue)
        self.on_path = set(self.preemptor.ancestors())
        self.order = _candidate_order(incoming.cluster_queue)
        self.queue_of = candidates  # queue → its candidates in order, read from self.next_of[queue] on
        self.next_of: dict[str, int] = dict.fromkeys(candidates, 0)
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
        return self.next_of.get(queue.name, 0) < len(self.queue_of.get(queue.name, ()))

    def first(self, queue: QuotaNode) -> Workload:
        return self.queue_of[queue.name][self.next_of[queue.name]]

    def pop(self, queue: QuotaNode) -> Workload:
        w = self.first(queue)
        self.next_of[queue.name] += 1
        return w

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
                if self.order(self.first(cq)) < self.order(self.first(best_cq)):
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

    def target_share(self, queue: QuotaNode) -> Share:
        """The second of :meth:`shares` alone."""
        lca = next(a for a in queue.ancestors() if a in self.on_path)
        return dominant_resource_share(_almost(queue, lca))


def _almost(cq: QuotaNode, lca: QuotaNode) -> QuotaNode:
    """``getAlmostLCA``: the node on ``cq``'s path whose parent is ``lca``."""
    node = cq
    while node.parent is not lca:
        node = node.parent
    return node
