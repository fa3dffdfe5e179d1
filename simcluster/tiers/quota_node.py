"""The pieces Kueue's cohort tree is made of: a :class:`Workload` as quota sees it and a :class:`QuotaNode` (a
ClusterQueue or a cohort with its per-flavor quota and usage).  They sit below the tree
(:mod:`~simcluster.tiers.quota_tree`), fair sharing (:mod:`~simcluster.tiers.fair_sharing`) and preemption
(:mod:`~simcluster.tiers.preemption`), so that each of those can read them without importing the others.

>>> from simcluster.tiers.model import ClusterQueueSpec, CohortSpec, FlavorQuota
>>> org = QuotaNode("org", False, CohortSpec("org"))
>>> a = QuotaNode("a", True, ClusterQueueSpec("a", cohort="org", quotas=(FlavorQuota("h100", 8),)))
>>> a.parent = org
>>> a.root(), list(a.ancestors()), Workload("j1", "a", "h100", 2).gpus
(<cohort org>, [<cohort org>], 2)
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator
from dataclasses import dataclass

from simcluster.tiers.model import ClusterQueueSpec, CohortSpec, FlavorQuota


@dataclass(frozen=True)
class Workload:
    """A job as Kueue's quota sees it: GPUs on one flavor of one ClusterQueue.  ``admitted_at``: when its quota
    was reserved (an incoming workload: when it was queued); ``sequence`` orders admissions at one instant (a
    simulated clock admits several at once, where Kueue's timestamps would tell them apart: the later admitted is
    the more recent)."""

    key: Hashable
    cluster_queue: str
    flavor: str
    gpus: float
    priority: int = 0
    admitted_at: float = 0.0
    sequence: int = 0


class QuotaNode:
    """A ClusterQueue or a Cohort in the tree, with its per-flavor quota and usage (resource_node.go's
    ``resourceNode``): ``guaranteed`` is ``localQuota`` (what it keeps back from its parent)."""

    __slots__ = (
        "cohorts",
        "cqs",
        "guaranteed",
        "is_cq",
        "lendable",
        "name",
        "parent",
        "potential",
        "quotas",
        "spec",
        "subtree_quota",
        "usage",
        "weight",
    )

    def __init__(self, name: str, is_cq: bool, spec: ClusterQueueSpec | CohortSpec) -> None:
        self.name, self.is_cq, self.spec = name, is_cq, spec
        self.parent: QuotaNode | None = None
        self.cohorts: list[QuotaNode] = []
        self.cqs: list[QuotaNode] = []
        self.quotas: dict[str, FlavorQuota] = {q.flavor: q for q in spec.quotas}
        self.subtree_quota: dict[str, float] = {}
        self.guaranteed: dict[str, float] = {}
        self.usage: dict[str, float] = {}
        self.weight = float(spec.fair_weight)
        self.potential: dict[str, float] = {}
        self.lendable = 0.0  # Σ over the tree's flavors of potentialAvailable: the denominator of its children

    def ancestors(self) -> Iterator[QuotaNode]:
        node = self.parent
        while node is not None:
            yield node
            node = node.parent

    def root(self) -> QuotaNode:
        node = self
        while node.parent is not None:
            node = node.parent
        return node

    def within_quota(self, flavor: str) -> bool:
        """``IsWithinNominalInResources``: its usage does not exceed its subtree quota."""
        return self.usage.get(flavor, 0.0) <= self.subtree_quota.get(flavor, 0.0)

    def __repr__(self) -> str:
        return f"<{'cq' if self.is_cq else 'cohort'} {self.name}>"


def candidate_rank(w: Workload) -> tuple:
    """A workload's place among its ClusterQueue's preemption candidates (``CandidatesOrdering`` within one
    queue): lower priority first, then the most recently admitted, then the key.

    >>> old, new = Workload("o", "a", "f", 1, admitted_at=1.0), Workload("n", "a", "f", 1, admitted_at=2.0)
    >>> [w.key for w in sorted([old, new, Workload("h", "a", "f", 1, priority=3)], key=candidate_rank)]
    ['n', 'o', 'h']
    """
    return (w.priority, -w.admitted_at, -w.sequence, tiebreak(w.key))


def tiebreak(key: Hashable) -> tuple[int, object]:
    """A key's place among others of any type (Kueue breaks the last tie by UID).

    >>> sorted(["b", 2, "a", 1], key=tiebreak)
    [1, 2, 'a', 'b']
    """
    return (0, key) if isinstance(key, (int, float)) else (1, str(key))
