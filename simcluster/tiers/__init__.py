"""Tiers of work as operators configure them: Kueue's ClusterQueues, cohorts, LocalQueues, flavors and priority
classes (:mod:`~simcluster.tiers.model`), read from Kueue's own YAML (:mod:`~simcluster.tiers.kueue_yaml`), and
the arithmetic Kueue decides with: quota, borrowing and lending in the cohort tree
(:mod:`~simcluster.tiers.quota_tree`), dominant resource shares and the fair-sharing tournament
(:mod:`~simcluster.tiers.fair_sharing`), preemption targets (:mod:`~simcluster.tiers.preemption`, with a cheap
test first: :mod:`~simcluster.tiers.preemption_bound`).  The ``kueue`` policy and the ``tiers`` feature read them;
nothing here knows the engine.
"""
