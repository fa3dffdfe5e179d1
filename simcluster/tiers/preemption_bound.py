"""A cheap test of whether preemption could make a workload fit at all, before Kueue's search for targets.

Kueue's preemption search (:meth:`~simcluster.tiers.quota_tree.QuotaTree.preemption_targets`) lists and orders every
candidate of the cohort tree: on a busy cluster a head that cannot fit costs a walk over thousands of admitted
workloads at every pass, and most heads cannot (their queue borrows already and has nothing of lower priority to
evict).  Evicting workloads of F GPUs raises what a queue may take by at most F, so a workload that needs more than
its queue's available GPUs plus every GPU its queue's rules could ever evict has no targets; the search is skipped.
The GPUs that could be evicted are kept per queue, flavor and priority as workloads are admitted and released, so
the test costs the queues of the tree and their priority levels, not their workloads.

>>> from simcluster.tiers.model import ClusterQueueSpec, FlavorQuota, KueueConfig, Preemption
>>> from simcluster.tiers.quota_tree import QuotaTree, Workload
>>> rules = Preemption(within_cluster_queue="LowerPriority")
>>> config = KueueConfig({"a": ClusterQueueSpec("a", quotas=(FlavorQuota("f", 8),), preemption=rules)})
>>> tree = QuotaTree(config); bound = PreemptionBound(tree)
>>> low = Workload("low", "a", "f", 8, priority=0); tree.admit(low); bound.admit(low)
>>> bound.could_fit(Workload("high", "a", "f", 8, priority=5)), bound.could_fit(Workload("same", "a", "f", 8))
(True, False)
"""

from __future__ import annotations

from collections import defaultdict

from simcluster.tiers.quota_tree import QuotaTree, Workload


class PreemptionBound:
    """GPUs admitted per (ClusterQueue, flavor) and priority in ``tree``, and the test they give."""

    def __init__(self, tree: QuotaTree) -> None:
        self.tree, self.kueue = tree, tree.config
        self.gpus: dict[tuple[str, str], dict[int, float]] = defaultdict(lambda: defaultdict(float))
        self.tree_mates = {queue: tree.tree_mates(queue) for queue in self.kueue.cluster_queues}
        # admissions and releases told, per cohort tree (its first queue stands for it): an answer, which reads
        # one tree only, holds while that tree's count and the tree itself hold
        self._tree_of = {queue: mates[0] for queue, mates in self.tree_mates.items()}
        self.changes: dict[str, int] = dict.fromkeys(self._tree_of.values(), 0)
        # each queue's tree mates but itself, with their nodes and nominal quotas (read at every test)
        self._others = {queue: [(mate, tree.queue_node(mate), tree.queue_node(mate).quotas) for mate in mates
                                if mate != queue] for queue, mates in self.tree_mates.items()}

    def admit(self, w: Workload) -> None:
        self.changes[self._tree_of[w.cluster_queue]] += 1
        self.gpus[w.cluster_queue, w.flavor][w.priority] += w.gpus

    def release(self, w: Workload) -> None:
        self.changes[self._tree_of[w.cluster_queue]] += 1
        by_priority = self.gpus[w.cluster_queue, w.flavor]
        by_priority[w.priority] -= w.gpus
        if by_priority[w.priority] <= 1e-9:
            del by_priority[w.priority]

    def _evictable(self, queue: str, flavor: str, policy: str, priority: int) -> float:
        """The GPUs of ``queue``'s workloads on ``flavor`` that ``policy`` lets a workload of ``priority`` evict."""
        by_priority = self.gpus.get((queue, flavor))
        if not by_priority or policy == "Never":
            return 0.0
        if policy == "Any":
            return sum(by_priority.values())
        if policy == "LowerOrNewerEqualPriority":
            return sum(g for p, g in by_priority.items() if p <= priority)
        return sum(g for p, g in by_priority.items() if p < priority)  # LowerPriority

    def could_fit(self, incoming: Workload, fair_sharing: bool = False) -> bool:
        """Whether evicting everything ``incoming``'s queue may evict could make room for it (False: it cannot
        fit by preemption; True: the search may find targets).  Under fair sharing a queue that borrows may
        reclaim too (by the shares), so the nominal-quota rule of classical preemption is not applied.  The answer
        is remembered among the tree's facts (:meth:`QuotaTree.facts`) until the cohort tree or this bound's count
        of it changes: a busy queue's heads ask it again at every pass, and at every change in another tree."""
        facts = self.tree.facts(incoming.cluster_queue)
        queue = incoming.cluster_queue
        asked = ("could fit", self.changes[self._tree_of[queue]], queue, incoming.flavor, incoming.gpus,
                 incoming.priority, fair_sharing)
        known = facts.get(asked)
        if known is None:
            known = facts[asked] = self._could_fit(incoming, fair_sharing)
        return known

    def _could_fit(self, incoming: Workload, fair_sharing: bool) -> bool:
        tree, queue, flavor, gpus = self.tree, incoming.cluster_queue, incoming.flavor, incoming.gpus
        spec = self.kueue.cluster_queues[queue]
        rules = spec.preemption
        room = tree.available(queue, flavor)
        own = self._evictable(queue, flavor, rules.within_cluster_queue, incoming.priority)
        if room + own >= gpus:
            return True
        if spec.cohort is None or rules.reclaim_within_cohort == "Never":
            return False
        # another queue's workloads are evicted only for a queue that stays within its nominal quota, unless
        # borrowWithinCohort allows it (Kueue's getTargets), where the tree is one cohort and its queues
        nested = tree.parent(spec.cohort) is not None
        within_nominal = tree.usage(queue, flavor) - own + gpus <= tree.nominal(queue, flavor)
        if not fair_sharing and not nested and not within_nominal and rules.borrow_within_cohort == "Never":
            return False
        policy, priority = rules.reclaim_within_cohort, incoming.priority
        others = sum([self._evictable(mate, flavor, policy, priority) for mate, node, quotas in self._others[queue]
                      if node.usage.get(flavor, 0.0) > (quotas[flavor].nominal if flavor in quotas else 0.0)])
        return room + own + others >= gpus  # (only borrowers, above their nominal quota, are reclaimed)

