"""What a cluster's Kueue objects say, as far as the simulator models them: one resource, GPUs
(``nvidia.com/gpu``), quota per flavor.  Made by :func:`simcluster.tiers.kueue_yaml.read_kueue`; read by the
quota tree (:mod:`simcluster.tiers.quota_tree`) and the ``kueue`` policy.

Names follow Kueue's API (``v1beta1``/``v1beta2``): a :class:`ClusterQueueSpec` holds quota per flavor and sits in
a cohort; a :class:`CohortSpec` may have a parent cohort and quota of its own (hierarchical cohorts, KEP-79);
a :class:`LocalQueueSpec` (namespaced) points at a ClusterQueue; jobs name a LocalQueue.

>>> cq = ClusterQueueSpec("team-a", cohort="org", quotas=(FlavorQuota("h100", 8, borrowing_limit=4),))
>>> cq.quota("h100").nominal, cq.quota("a100") is None, cq.preemption.within_cluster_queue
(8.0, True, 'Never')
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

GPU = "nvidia.com/gpu"  # the one resource whose quota the simulator models

WITHIN_CLUSTER_QUEUE = ("Never", "LowerPriority", "LowerOrNewerEqualPriority")
RECLAIM_WITHIN_COHORT = ("Never", "LowerPriority", "Any")
BORROW_WITHIN_COHORT = ("Never", "LowerPriority")
QUEUEING_STRATEGIES = ("BestEffortFIFO", "StrictFIFO")
FAIR_SHARING_STRATEGIES = ("LessThanOrEqualToFinalShare", "LessThanInitialShare")


@dataclass(frozen=True)
class FlavorQuota:
    """One flavor's GPU quota in a ClusterQueue or a Cohort: ``nominal`` GPUs; at most ``borrowing_limit`` more
    borrowed from the cohort (None: no limit); at most ``lending_limit`` of its own lent to it (None: all).
    """

    flavor: str
    nominal: float
    borrowing_limit: float | None = None
    lending_limit: float | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "nominal", float(self.nominal))


@dataclass(frozen=True)
class Preemption:
    """A ClusterQueue's ``spec.preemption``, Kueue's defaults where unset.

    ``borrow_within_cohort_max_priority``: ``borrowWithinCohort.maxPriorityThreshold`` (None: no threshold).
    """

    within_cluster_queue: str = "Never"
    reclaim_within_cohort: str = "Never"
    borrow_within_cohort: str = "Never"
    borrow_within_cohort_max_priority: int | None = None


@dataclass(frozen=True)
class ClusterQueueSpec:
    """A ClusterQueue: its quotas in flavor order (Kueue tries its flavors in this order), its cohort (None:
    alone), queueing strategy, preemption rules and fair-sharing weight."""

    name: str
    cohort: str | None = None
    quotas: tuple[FlavorQuota, ...] = ()
    queueing_strategy: str = "BestEffortFIFO"
    preemption: Preemption = Preemption()
    fair_weight: float = 1.0

    def quota(self, flavor: str) -> FlavorQuota | None:
        return next((q for q in self.quotas if q.flavor == flavor), None)

    @property
    def flavors(self) -> tuple[str, ...]:
        return tuple(q.flavor for q in self.quotas)


@dataclass(frozen=True)
class CohortSpec:
    """A Cohort object (or a cohort only named by ClusterQueues: no quota, no parent, weight 1)."""

    name: str
    parent: str | None = None
    quotas: tuple[FlavorQuota, ...] = ()
    fair_weight: float = 1.0

    def quota(self, flavor: str) -> FlavorQuota | None:
        return next((q for q in self.quotas if q.flavor == flavor), None)


@dataclass(frozen=True)
class LocalQueueSpec:
    """A LocalQueue: ``namespace/name`` sends its workloads to ``cluster_queue``."""

    name: str
    namespace: str
    cluster_queue: str

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True)
class FlavorSpec:
    """A ResourceFlavor: the node labels that select its nodes (a GPU type's, e.g. ``nvidia.com/gpu.product``),
    and the Topology it is placed by (TAS), if any."""

    name: str
    node_labels: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    topology_name: str | None = None


@dataclass(frozen=True)
class FairSharing:
    """Fair sharing as Kueue's ``Configuration`` sets it: on or off, and the preemption strategies in order."""

    enabled: bool = False
    preemption_strategies: tuple[str, ...] = FAIR_SHARING_STRATEGIES


@dataclass(frozen=True)
class KueueConfig:
    """Everything read from an operator's Kueue YAML that the simulator models, and notes on what it does not
    (one line per kind of thing left out: "taints on ResourceFlavor spot", "cpu and memory quotas in 3
    ClusterQueues"), for the run's notes."""

    cluster_queues: Mapping[str, ClusterQueueSpec]
    cohorts: Mapping[str, CohortSpec] = field(default_factory=lambda: MappingProxyType({}))
    local_queues: Mapping[str, LocalQueueSpec] = field(default_factory=lambda: MappingProxyType({}))  # by key
    flavors: Mapping[str, FlavorSpec] = field(default_factory=lambda: MappingProxyType({}))
    priority_classes: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    topologies: Mapping[str, tuple[str, ...]] = field(default_factory=lambda: MappingProxyType({}))  # levels' labels
    fair_sharing: FairSharing | None = None  # None: no Configuration document among the files
    not_modeled: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()

    def cluster_queue_of(self, local_queue: str) -> str | None:
        """The ClusterQueue a job naming ``local_queue`` (``namespace/name``, or a bare name that one namespace
        holds) reaches, or None."""
        found = self.local_queues.get(local_queue)
        if found is None and "/" not in local_queue:
            named = [q for q in self.local_queues.values() if q.name == local_queue]
            found = named[0] if len(named) == 1 else None
        return found.cluster_queue if found is not None else None
