"""The features of a run, each one module contributing through the run's hooks (:mod:`~.base`).

:data:`FEATURES` is the registry, in the order their contributions are asked (their columns and figures appear
in that order); adding a feature is a module and one line here (docs/architecture.md, "Adding a feature").
"""

from simcluster.features.base import Contribution, Ended, Feature
from simcluster.features.colocation import Colocation
from simcluster.features.deadlines import Deadlines
from simcluster.features.elastic import ElasticJobs
from simcluster.features.fairness import Fairness
from simcluster.features.fragmentation import Fragmentation
from simcluster.features.gpu_types import GpuTypes
from simcluster.features.links import LinkContentionFeature
from simcluster.features.reliability import Reliability
from simcluster.features.spot import Spot
from simcluster.features.tiers import Tiers
from simcluster.features.topology import ClusterTopologyFeature

FEATURES: tuple[Feature, ...] = (
    Deadlines(),
    ElasticJobs(),
    Fairness(),
    Reliability(),
    Colocation(),
    Fragmentation(),
    GpuTypes(),
    Tiers(),  # (before the topology: it pools the VCs' nodes, which the topology then matches)
    Spot(),
    ClusterTopologyFeature(),
    LinkContentionFeature(),
)

__all__ = ["FEATURES", "Contribution", "Ended", "Feature"]
