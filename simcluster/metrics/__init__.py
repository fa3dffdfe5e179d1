"""Metrics: observers that the engine notifies, and the summary built from them."""

from simcluster.metrics.observer import ClusterTimeline, FinishedJobs, NodeFailures, Observer

__all__ = ["ClusterTimeline", "FinishedJobs", "NodeFailures", "Observer"]
