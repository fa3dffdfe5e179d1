"""How the elastic-job traces are told by their header: Pollux's workloads and ElasticFlow's traces.

Kept apart from their loaders so that :mod:`simcluster.traces.files` can tell a file's format without
importing the loaders (which import the job-log reader, which imports ``files``).

ElasticFlow's simulator reads every trace it ships with one reader (``add_job`` in ``scheduler/jobs.py``),
which takes whichever of two spellings a file has: ``submission_time`` or ``submit_time``, ``deadline`` or
``ddl``, ``num_iteration`` or ``iteration`` (``iteration`` first where both are there, ``submission_time``
and ``deadline`` first likewise); an optional ``best_effort`` of 1 makes a job best-effort.  Its ITP traces
(``elasticflow/traces/clusterNN.csv``) use the first spellings; its Philly-derived trace
(``philly_103959.csv``: ``job_id,submit_time,real_iteration,model_name,ddl,batch_size,num_gpu,
real_duration,duration,iteration``) and the traces of its generator the second.  :func:`elasticflow_columns`
picks them the same way.

>>> looks_like_pollux(["name", "time", "application", "num_replicas", "batch_size"])
True
>>> looks_like_elasticflow(["job_id", "submission_time", "duration", "num_gpu"])  # a plain ITP log
False
>>> philly = ["job_id", "submit_time", "real_iteration", "model_name", "ddl", "batch_size", "num_gpu",
...           "real_duration", "duration", "iteration"]
>>> looks_like_elasticflow(philly), elasticflow_columns(philly)["num_iteration"]
(True, 'iteration')
"""

from __future__ import annotations

from collections.abc import Sequence

POLLUX_COLUMNS = ("name", "time", "application", "num_replicas", "batch_size")
ELASTICFLOW_COLUMNS = ("job_id", "submission_time", "num_iteration", "model_name", "deadline", "batch_size",
                       "num_gpu", "duration")
ELASTICFLOW_IDENTIFY = ("submission_time", "num_iteration", "model_name", "deadline")
# the Philly-derived trace of ElasticFlow's repository (traces_for_ElasticFlow/philly_103959.csv)
ELASTICFLOW_PHILLY_COLUMNS = ("job_id", "submit_time", "real_iteration", "model_name", "ddl", "batch_size", "num_gpu",
                              "real_duration", "duration", "iteration")
# our field → the artifact's spellings, in the order its reader prefers them
SPELLINGS: dict[str, tuple[str, ...]] = {
    "submission_time": ("submission_time", "submit_time"),
    "num_iteration": ("iteration", "num_iteration"),
    "deadline": ("deadline", "ddl"),
}
PLAIN = ("job_id", "model_name", "batch_size", "num_gpu", "duration")


def looks_like_pollux(header: Sequence[str]) -> bool:
    return set(header).issuperset(POLLUX_COLUMNS)


def looks_like_elasticflow(header: Sequence[str]) -> bool:
    """Any spelling ElasticFlow's reader takes: a submit time, iterations, a model and a deadline."""
    names = set(header)
    return "model_name" in names and all(names.intersection(SPELLINGS[f]) for f in SPELLINGS)


def elasticflow_columns(header: Sequence[str]) -> dict[str, str]:
    """Our field → the file's column, for every field the loader reads (a missing one maps to its usual
    spelling, so that the reader reports it missing under the name of the file's own family)."""
    names = set(header)
    philly_family = "submit_time" in names or "ddl" in names
    mapping = {}
    for field, spellings in SPELLINGS.items():
        have = [s for s in spellings if s in names]
        mapping[field] = have[0] if have else spellings[1 if philly_family and field != "num_iteration" else 0]
    mapping.update({f: f for f in PLAIN})
    return mapping
