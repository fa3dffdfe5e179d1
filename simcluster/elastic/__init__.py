"""Elastic jobs: what Pollux (OSDI'21) and ElasticFlow (ASPLOS'23) need beyond a fixed-size engine.

The floors, bottom up: :mod:`~simcluster.elastic.tables` (numeric CSVs, checked);
:mod:`~simcluster.elastic.pollux_apps` and :mod:`~simcluster.elastic.elasticflow_model` (the scaling models
from the public measurements); :mod:`~simcluster.elastic.goodput` (Pollux's throughput and efficiency
model, its fit and the batch it picks) and :mod:`~simcluster.elastic.timeline` (the free GPUs over the
future that deadline planners share); then the policies' cores, which need no engine:
:mod:`~simcluster.elastic.pollux_job` (one job's learned model), :mod:`~simcluster.elastic.pollux_alloc`
(the cluster-wide allocation), :mod:`~simcluster.elastic.pollux_baselines` (Optimus+Oracle, two-queue
Tiresias), :mod:`~simcluster.elastic.elasticflow_plan` (minimum satisfactory shares, admission, spare GPUs)
and :mod:`~simcluster.elastic.edf`.  docs/elastic.md is the manual's page.
"""
