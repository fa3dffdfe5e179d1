"""``lucid-sim trace convert``: any supported trace → our canonical folder format.

The folder holds ``cluster_full_log.csv`` (``job_id, user, vc, gpu_num, submit_time, duration``,
plus the workload and profile columns when the input has them), ``vc_config.csv`` (``vc,num``) and
``conversion.json`` (where it came from: source, format, time rule, epoch, sizing, GPUs per node,
rows skipped).  Submit times are written as whole seconds from the epoch the input was read with,
so the folder loads back to exactly the same jobs (a column of numbers below 10⁹ is relative
seconds); ``conversion.json`` keeps the epoch's wall-clock time.

Heterogeneous traces lose what a job log cannot say: a Gavel job's duration is its run time on its
fastest GPU type alone (``total_steps`` ÷ that throughput, rounded up), an openb pod's its lifetime;
fractional-GPU pods become whole-GPU jobs; job types and GPU types are dropped (``conversion.json``
lists these notes).

The folder is written atomically, by the rules of every folder simcluster writes
(:func:`simcluster.results.check_output`): an earlier conversion is replaced, a folder holding anyone
else's files only with ``overwrite``, the input's own folder never.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from simcluster.cluster_spec import ONE_VC
from simcluster.errors import TraceError
from simcluster.results import check_output, write_folder
from simcluster.throughputs import job_key, load_throughputs
from simcluster.traces.joblog import JobLog
from simcluster.traces.venus import PROFILE, WORKLOAD

FILES = ("cluster_full_log.csv", "vc_config.csv", "conversion.json")
COLUMNS = ["job_id", "user", "vc", "gpu_num", "submit_time", "duration"]


def check_target(out: Path, source: Path, overwrite: bool) -> Path:
    """Refuse, before any work, a target whose replacement would destroy the input or anyone's files:
    the rules of every folder simcluster writes (:func:`simcluster.results.check_output`)."""
    return check_output(out, "trace", [source], overwrite)


def job_log(trace: Any, gpus_per_node: int, nodes: int | None = None, cluster_gpus: int | None = None,
            throughputs: str | None = None) -> tuple[pd.DataFrame, dict[str, int], list[str]]:
    """The canonical job log, the VC sizes and notes on what was lost, for any loaded trace."""
    if isinstance(trace, JobLog):
        if not trace.vc_nodes:
            raise ValueError(f"{trace.source}: the job log has no VCs and no size; give --nodes, --cluster or --load")
        keep = COLUMNS + [c for c in (*WORKLOAD, *PROFILE) if c in trace.frame]
        return trace.frame[keep].copy(), dict(trace.vc_nodes), []
    return _from_hetero(trace, gpus_per_node, nodes, cluster_gpus, throughputs)


def _from_hetero(trace: Any, gpus_per_node: int, nodes: int | None, cluster_gpus: int | None,
                 throughputs: str | None) -> tuple[pd.DataFrame, dict[str, int], list[str]]:
    f = trace.frame
    notes = ["job types and GPU types dropped: every job runs at the same speed on every GPU"]
    if trace.kind == "gavel":
        durations = hetero_durations(trace, throughputs)
        notes.append("duration = total_steps ÷ the job's throughput on its fastest GPU type alone, rounded up")
    else:
        durations = f["total_steps"].to_numpy(dtype=float)
        notes.append("duration = the pod's lifetime (deletion − creation)")
    if (f["gpu_milli"] < 1000).any():
        notes.append(f"{int((f['gpu_milli'] < 1000).sum()):,} fractional-GPU pods become whole-GPU jobs")
    if nodes is None:
        gpus = cluster_gpus or (trace.cluster.total_gpus if trace.cluster is not None else None)
        if gpus is None:
            raise ValueError(f"{trace.source}: a {trace.kind} trace names no cluster size; give --nodes or --cluster")
        nodes = math.ceil(gpus / gpus_per_node)
        notes.append(f"{gpus:,} GPUs in {nodes:,} nodes of {gpus_per_node}")
    frame = pd.DataFrame({
        "job_id": f["job_id"].astype(str), "user": "", "vc": ONE_VC, "gpu_num": f["gpu_num"].astype(np.int64),
        "submit_time": np.floor(f["submit_time"].to_numpy(dtype=float)).astype(np.int64),
        "duration": np.ceil(durations).astype(np.int64)})
    return frame, {ONE_VC: int(nodes)}, notes


def hetero_durations(trace: Any, throughputs: str | None = None) -> np.ndarray:
    """Seconds each job of a heterogeneous trace runs alone on its fastest GPU type."""
    if trace.uniform:
        return trace.frame["total_steps"].to_numpy(dtype=float)
    table = load_throughputs(throughputs)
    out = np.empty(len(trace.frame))
    for i, (job_type, scale, steps, line) in enumerate(
            trace.frame[["job_type", "gpu_num", "total_steps", "line"]].itertuples(index=False)):
        speeds = table.speeds(job_key(str(job_type), int(scale)))
        if speeds is None:
            raise TraceError(trace.source, f"job type {job_type!r} with scale factor {scale} is not in the throughput "
                             f"table ({table.source})", line=int(line), field="job_type")
        out[i] = float(steps) / speeds.rate
    return out


def write_canonical(out: Path, frame: pd.DataFrame, vc_nodes: dict[str, int], provenance: dict[str, Any], *,
                    inputs: tuple[Path, ...] = (), overwrite: bool = False) -> Path:
    config = pd.DataFrame({"vc": list(vc_nodes), "num": list(vc_nodes.values())})
    return write_folder(out, {"cluster_full_log.csv": frame, "vc_config.csv": config},
                        {"conversion.json": json.dumps(provenance, indent=2, default=str) + "\n"},
                        kind="trace", inputs=inputs, overwrite=overwrite)
