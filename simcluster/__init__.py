"""simcluster: a trace-driven, event-driven simulator of multi-tenant GPU clusters.

The Python API, in five lines: a trace as a DataFrame (or a path), a policy, the results.

>>> import pandas as pd
>>> from simcluster import SimConfig, load_trace, simulate
>>> jobs = pd.DataFrame({"job_id": ["a", "b", "c"], "vc": "vc0", "gpu_num": [8, 4, 4],
...                      "submit_time": [0, 10, 20], "duration": [3600, 600, 60]})
>>> result = simulate(load_trace(jobs, {"vc0": 1}), SimConfig(policy="srtf"))
>>> result.jobs.set_index("job_id")["jct"].to_dict(), round(result.summary["avg_jct"])
({'a': 4240.0, 'b': 600.0, 'c': 60.0}, 1633)

(srtf preempts ``a`` for the shorter ``b`` and ``c``; ``a`` resumes after them, 40 s of checkpoint and
restore later.)

:func:`simulate` resolves the run once (:func:`resolve_run`: its plug-ins, cluster, tables, failure model and
features, into a :class:`ResolvedRun`) and simulates it (:func:`simulate_resolved`, which may be called again on
the same record); it returns a :class:`~simcluster.api.RunResult`: ``jobs`` (one row per job), ``timeline``
and ``summary`` (what ``lucid-sim run`` writes to ``jobs.csv``, ``timeline.csv`` and ``summary.json``;
``summary["warnings"]`` lists settings the run ignored and doubts about its inputs).  :class:`SimConfig`
holds every setting of ``lucid-sim run`` by its option's name with ``_``; :class:`Observer` is how code
outside the model watches a run; :func:`load_trace` reads what ``--trace`` reads, with the same options
(returning a :class:`Trace` or, for Gavel and openb, a :class:`HeteroTrace`; bad input raises
:class:`TraceError`, data that looks misread warns with :class:`TraceWarning`); :func:`run_sweep` runs the
grid :func:`build_grid` makes, as ``lucid-sim sweep`` does; :func:`topology_study` compares placements and
topology requests over replicas, as ``lucid-sim topology`` does.  The names load on first use, so ``import
simcluster`` stays light.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from simcluster.api import RunResult, TraceWarning, load_trace, simulate, simulate_resolved
    from simcluster.config import SimConfig
    from simcluster.errors import TraceError
    from simcluster.experiments.sweep import build_grid, run_sweep
    from simcluster.experiments.topology import topology_study
    from simcluster.metrics.observer import Observer
    from simcluster.run import ResolvedRun, resolve_run
    from simcluster.traces.base import Trace
    from simcluster.traces.hetero import HeteroTrace

_EXPORTS = {
    "simulate": "simcluster.api",
    "simulate_resolved": "simcluster.api",
    "resolve_run": "simcluster.run",
    "ResolvedRun": "simcluster.run",
    "load_trace": "simcluster.api",
    "RunResult": "simcluster.api",
    "TraceWarning": "simcluster.api",
    "SimConfig": "simcluster.config",
    "Observer": "simcluster.metrics.observer",
    "Trace": "simcluster.traces.base",
    "HeteroTrace": "simcluster.traces.hetero",
    "TraceError": "simcluster.errors",
    "run_sweep": "simcluster.experiments.sweep",
    "build_grid": "simcluster.experiments.sweep",
    "topology_study": "simcluster.experiments.topology",
}
__all__ = ["HeteroTrace", "Observer", "ResolvedRun", "RunResult", "SimConfig", "Trace", "TraceError", "TraceWarning",
           "build_grid", "load_trace", "resolve_run", "run_sweep", "simulate", "simulate_resolved", "topology_study"]


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'simcluster' has no attribute {name!r}")
    value = getattr(import_module(_EXPORTS[name]), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])
