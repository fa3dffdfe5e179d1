"""What the loader understood of a trace, as ``lucid-sim trace inspect`` shows it before a long run:
which column holds each field and in what unit, the delimiter, how submit times were read and the
wall-clock span they cover, durations, the job-size histogram, the loader's doubts, and for a job log the
offered and realised load of each VC (``lucid-sim trace check --json``; :mod:`simcluster.traces.realised`).

>>> import pandas as pd
>>> from simcluster.traces.joblog import trace_from_frame
>>> jobs = pd.DataFrame({"when": [0, 3600], "gpus": [1, 8], "minutes": [1.5, 90]})
>>> seen = inspect_trace(trace_from_frame(jobs, columns="submit_time=when,gpu_num=gpus,duration=minutes",
...                                       duration_unit="min", nodes=1))
>>> seen["columns"]["duration"], seen["durations"]["p50"], seen["gpu_histogram"]
({'column': 'minutes', 'unit': 'min'}, 2745.0, {'1': 1, '8': 1})
>>> seen["load"]["cluster"]  # 90 s of 1 GPU and nothing of the 8-GPU job run within the hour, on 8 GPUs
{'gpus': 8, 'offered': 1.503125, 'realised': 0.003125}
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from simcluster.traces.base import Trace
from simcluster.traces.columns import CUSTOM, FIELDS, KNOWN_FORMATS
from simcluster.traces.csvfile import describe_delimiter
from simcluster.traces.joblog import JobLog
from simcluster.traces.realised import realised_by_vc
from simcluster.traces.stats import run_vc_gpus, trace_stats

PERCENTILES = (10, 50, 90, 99)
HETERO_COLUMNS = {
    "gavel": {"submit_time": ("arrival_time", "s"), "gpu_num": ("scale_factor", "GPUs"),
              "duration": ("total_steps", "iterations"), "job_type": ("job_type", "")},
    "openb": {"submit_time": ("creation_time", "s"), "gpu_num": ("num_gpu", "GPUs"),
              "duration": ("deletion_time − creation_time", "s"), "job_id": ("name", "")},
}


def inspect_trace(trace: Trace, gpus_per_node: int = 8) -> dict[str, Any]:
    """A plain (JSON-ready) record of how ``trace`` was read (its VCs' nodes of ``gpus_per_node`` GPUs)."""
    frame = trace.frame
    submit = frame["submit_time"].astype(float)
    record: dict[str, Any] = {"source": trace.source, "jobs": len(frame)}
    if isinstance(trace, JobLog):
        described = {f.name: f.description for f in (*KNOWN_FORMATS, CUSTOM)}
        record |= {"format": trace.format, "format_description": described.get(trace.format, "CSV job log"),
                   "delimiter": describe_delimiter(trace.delimiter),
                   "columns": {name: {"column": trace.columns.get(name), "unit": _unit(name, trace.duration_unit)}
                               for name in FIELDS if name in trace.columns},
                   "submit_times": trace.time_rule, "epoch": trace.epoch, "cluster": trace.sizing}
        durations = frame["duration"].astype(float)
    else:
        record |= {"format": trace.format, "format_description": f"{trace.format} trace (fixed columns)",
                   "delimiter": describe_delimiter("\t" if trace.format == "gavel" else ","),
                   "columns": {name: {"column": column, "unit": unit}
                               for name, (column, unit) in HETERO_COLUMNS[trace.format].items()},
                   "submit_times": "seconds, as given", "epoch": None,
                   "cluster": trace.cluster.describe() if trace.cluster is not None else "given by --cluster"}
        durations = frame["total_steps"].astype(float)  # (openb: seconds; Gavel: iterations)
    record["submitted"] = {"first": _when(submit.min(), record["epoch"]), "last": _when(submit.max(), record["epoch"]),
                           "span_seconds": float(submit.max() - submit.min())}
    record["durations"] = {"mean": float(durations.mean()),
                           **{f"p{p}": float(np.percentile(durations, p)) for p in PERCENTILES},
                           "max": float(durations.max())}
    record["gpu_histogram"] = {str(int(g)): int(n) for g, n in frame["gpu_num"].value_counts().sort_index().items()}
    if isinstance(trace, JobLog):
        record["load"] = load_record(frame, trace.vc_nodes, gpus_per_node, run_vc_gpus(trace, gpus_per_node))
    record["skipped"] = dict(trace.skipped)
    record["warnings"] = list(trace.warnings)
    return record


def load_record(frame: pd.DataFrame, vc_nodes: dict[str, int], gpus_per_node: int,
                vc_gpus: dict[str, int] | None = None) -> dict[str, Any]:
    """Each VC's and the cluster's GPUs, offered load (GPU-seconds asked ÷ (GPUs × span)) and realised load
    (the part of that work run within the span, had every job started when submitted); None where no size
    is known.  ``vc_gpus``: each VC's GPUs where they are not its nodes × ``gpus_per_node`` (a trace's own
    cluster, as a run counts it: :func:`~simcluster.traces.stats.run_vc_gpus`)."""
    stats = trace_stats(frame, vc_nodes, gpus_per_node, vc_gpus=vc_gpus or None)
    realised = realised_by_vc(frame, vc_gpus, 1) if vc_gpus else realised_by_vc(frame, vc_nodes, gpus_per_node)
    return {"window_seconds": realised["window_seconds"],
            "vcs": {v.name: {"gpus": v.gpus, "offered": v.load, "realised": realised["vcs"].get(v.name)}
                    for v in stats.vcs},
            "cluster": {"gpus": stats.total.gpus, "offered": stats.total.load,
                        "realised": realised["cluster"]}}


def _unit(name: str, duration_unit: str) -> str:
    return {"duration": duration_unit, "gpu_num": "GPUs", "submit_time": "time"}.get(name, "")


def _when(seconds: float, epoch: str | None) -> str:
    """Seconds from the epoch, with the wall-clock time when the epoch is known."""
    text = f"{seconds:,.0f} s"
    if epoch:
        text += f" ({pd.Timestamp(epoch) + pd.Timedelta(seconds=float(seconds))})"
    return text
