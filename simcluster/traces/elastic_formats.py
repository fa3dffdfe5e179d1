"""How the elastic-job traces are told by their header: Pollux's workloads and ElasticFlow's ITP traces.

Kept apart from their loaders so that :mod:`simcluster.traces.files` can tell a file's format without
importing the loaders (which import the job-log reader, which imports ``files``).

>>> looks_like_pollux(["name", "time", "application", "num_replicas", "batch_size"])
True
>>> looks_like_elasticflow(["job_id", "submission_time", "duration", "num_gpu"])  # a plain ITP log
False
"""

from __future__ import annotations

from collections.abc import Sequence

POLLUX_COLUMNS = ("name", "time", "application", "num_replicas", "batch_size")
ELASTICFLOW_COLUMNS = ("job_id", "submission_time", "num_iteration", "model_name", "deadline", "batch_size",
                       "num_gpu", "duration")
ELASTICFLOW_IDENTIFY = ("submission_time", "num_iteration", "model_name", "deadline")


def looks_like_pollux(header: Sequence[str]) -> bool:
    return set(header).issuperset(POLLUX_COLUMNS)


def looks_like_elasticflow(header: Sequence[str]) -> bool:
    return set(header).issuperset(ELASTICFLOW_IDENTIFY)
