"""Duration estimators for estimate-driven policies.  One file each, registered by name."""

from simcluster.estimators import ebm, from_file, history, oracle  # noqa: F401  (registers)
from simcluster.estimators.base import ESTIMATORS, EstimateQuality, Estimator, make_estimator

__all__ = ["ESTIMATORS", "EstimateQuality", "Estimator", "make_estimator"]
