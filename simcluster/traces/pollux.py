"""Pollux's workload traces (OSDI'21 artifact): ``pollux/workloads/<load>/workload-N.csv`` of the shared data.

``name,time,application,num_replicas,batch_size`` — one job per row: its name, submit time (seconds),
application (a folder of ``pollux/apps/``), and the GPUs and total batch its user asked for (what
fixed-size schedulers such as Tiresias run it at; Pollux chooses its own).  The trace has no
durations: a job trains until it has made its application's statistical progress, so its time
depends on its allocation and batch.  Its ``duration`` here is the modelled time (whole seconds,
rounded up) at the requested configuration (GPUs packed four to a node, the batch split as the authors'
simulator splits it: :meth:`~simcluster.elastic.pollux_apps.PolluxApp.run_time`), so that every
fixed-size policy can run the trace; elastic policies read ``application`` and ``batch_size`` instead.
(``lucid-sim trace convert`` keeps the GPUs per node it is given: ``--gpus-per-node 4`` for this one.)  The cluster is the
paper's, 16 nodes of 4 GPUs, unless ``nodes``/``gpus_per_node`` say otherwise.

>>> from simcluster.paths import shared_data_dir
>>> trace = load_pollux_trace(shared_data_dir() / "pollux/workloads/1.0/workload-6.csv")  # doctest: +SKIP
>>> len(trace), trace.cluster.describe(), sorted(trace.frame["application"].unique())[:2]  # doctest: +SKIP
(160, 'gpu:64', ['bert', 'cifar10'])
"""

from __future__ import annotations

import functools
import math
import time
from pathlib import Path

import numpy as np
import pandas as pd

from simcluster.cluster_spec import ONE_VC, ClusterSpec
from simcluster.elastic.pollux_apps import OutOfMeasuredRange, PolluxApp, load_pollux_apps
from simcluster.elastic.pollux_baselines import packed_layout
from simcluster.elastic.threads import one_blas_thread
from simcluster.errors import TraceError
from simcluster.paths import shared_data_dir
from simcluster.side_files import read_side_csv
from simcluster.traces.elastic_formats import POLLUX_COLUMNS as COLUMNS
from simcluster.traces.joblog import JobLog

NODES, GPUS_PER_NODE = 16, 4  # the paper's testbed: 16 × g4dn.12xlarge


def apps_beside(path: Path) -> Path:
    """``pollux/apps`` for a workload under ``pollux/workloads/<load>/``, else the shared data's."""
    for parent in path.resolve().parents:
        if (parent / "apps").is_dir() and parent.name == "pollux":
            return parent / "apps"
    return shared_data_dir() / "pollux" / "apps"


@functools.lru_cache(maxsize=4)
def cached_apps(folder: str) -> dict[str, PolluxApp]:
    """The applications of a folder, read once per process (their tables never change)."""
    return load_pollux_apps(folder)


def load_pollux_trace(path: str | Path, apps: str | Path | dict[str, PolluxApp] | None = None, *,
                      nodes: int = NODES, gpus_per_node: int = GPUS_PER_NODE) -> JobLog:
    """Read and check a Pollux workload CSV (see the module's docstring)."""
    t0 = time.process_time()
    path = Path(path)
    raw = read_side_csv(path, "Pollux workload", COLUMNS)
    known = apps if isinstance(apps, dict) else cached_apps(str((Path(apps) if apps else apps_beside(path)).resolve()))
    rows = []
    durations: dict[tuple[str, int, int], float] = {}  # (application, GPUs, batch) → modelled time
    for i, (name, submit, app_name, replicas, batch) in enumerate(zip(*(raw[c] for c in COLUMNS), strict=True)):
        line = i + 2
        if not name.strip():
            raise TraceError(path, "empty job name", line=line, field="name")
        numbers = {}
        for field, text, integer in (("time", submit, False), ("num_replicas", replicas, True),
                                     ("batch_size", batch, True)):
            try:
                value = float(text)
            except ValueError:
                raise TraceError(path, f"not a number: {text!r}", line=line, field=field) from None
            if not np.isfinite(value) or value < 0 or (integer and (value != int(value) or value < 1)):
                raise TraceError(path, f"must be a {'positive whole' if integer else 'non-negative'} number, "
                                 f"got {text!r}", line=line, field=field)
            numbers[field] = value
        app = known.get(app_name.strip())
        if app is None:
            raise TraceError(path, f"unknown application {app_name!r}; measured: {', '.join(sorted(known))}",
                             line=line, field="application")
        gpus, total = int(numbers["num_replicas"]), int(numbers["batch_size"])
        if gpus > nodes * gpus_per_node:
            raise TraceError(path, f"{gpus} GPUs is more than the cluster's {nodes * gpus_per_node}", line=line,
                             field="num_replicas")
        if total > app.max_batch_size:
            raise TraceError(path, f"batch size {total} is above {app.name}'s largest validated batch "
                             f"{app.max_batch_size}", line=line, field="batch_size")
        if (app.name, gpus, total) not in durations:
            try:
                atomic, accum = app.fixed_batch(total, gpus)
                with one_blas_thread():  # (the interpolator's first call, on a busy machine)
                    seconds = app.run_time(packed_layout(gpus, gpus_per_node), atomic, accum)
                durations[app.name, gpus, total] = float(math.ceil(seconds))  # whole seconds, as job logs
            except OutOfMeasuredRange as exc:
                raise TraceError(path, f"the requested configuration is outside the measurements: {exc}", line=line,
                                 field="batch_size") from None
        duration = durations[app.name, gpus, total]
        rows.append((name.strip(), numbers["time"], app.name, gpus, total, duration))
    if not rows:
        raise TraceError(path, "no jobs in the workload")
    frame = pd.DataFrame(rows, columns=["job_id", "submit_time", "application", "gpu_num", "batch_size", "duration"])
    repeated = frame["job_id"].duplicated()
    if repeated.any():
        row = int(np.flatnonzero(repeated.to_numpy())[0])
        raise TraceError(path, f"duplicate job name {frame['job_id'].iloc[row]!r}", line=row + 2, field="name")
    frame.insert(1, "vc", ONE_VC)
    frame.insert(2, "user", "")
    frame = frame.sort_values("submit_time", kind="stable").reset_index(drop=True)
    cluster = ClusterSpec.uniform({ONE_VC: nodes}, gpus_per_node, str(path))
    return JobLog(str(path), frame, {ONE_VC: nodes}, load_cpu_seconds=time.process_time() - t0, format="pollux",
                 time_rule="seconds from the start of the trace", sizing=f"{nodes} nodes × {gpus_per_node} GPUs "
                 "(the Pollux paper's testbed)", cluster=cluster,
                 columns={"job_id": "name", "submit_time": "time", "gpu_num": "num_replicas", "duration": None})
