"""What a trace holds, as ``lucid-sim trace check`` shows it: jobs and GPUs per VC, offered load, the
GPU-count histogram, duration percentiles and the submission span.

Offered load (per VC and overall) = GPU-seconds asked ÷ (GPUs × span), with one span for all VCs:
the log's first to last submission (:func:`simcluster.traces.sizing.offered_load`).  For a log
without VCs that has no size yet, :func:`sizes_for_loads` says which ``--nodes`` gives which load.

>>> import pandas as pd
>>> frame = pd.DataFrame({"vc": ["a", "a", "b"], "gpu_num": [1, 2, 8], "duration": [100, 50, 10],
...                       "submit_time": [0, 50, 100]})
>>> stats = trace_stats(frame, {"a": 1, "b": 1}, gpus_per_node=8)
>>> [(v.name, v.jobs, v.gpu_seconds, v.load) for v in stats.vcs]
[('a', 2, 200.0, 0.25), ('b', 1, 80.0, 0.1)]
>>> stats.gpu_histogram
[(1, 1), (2, 1), (8, 1)]
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from simcluster.traces.sizing import nodes_for_load, offered_load

PERCENTILES = (10, 50, 90, 99)
TARGET_LOADS = (0.5, 0.8, 1.0)


@dataclass(frozen=True)
class VcStats:
    name: str
    nodes: int | None  # None: not sized yet
    gpus: int | None
    jobs: int
    gpu_seconds: float
    largest_job: int
    load: float | None


@dataclass
class TraceStats:
    jobs: int
    vcs: list[VcStats]
    total: VcStats
    gpu_histogram: list[tuple[int, int]]  # (GPUs asked, jobs)
    durations: dict[str, float]  # mean, p10 … p99, max (seconds)
    first_submit: float
    last_submit: float
    notes: list[str] = field(default_factory=list)

    @property
    def span(self) -> float:
        return self.last_submit - self.first_submit


def trace_stats(frame: pd.DataFrame, vc_nodes: dict[str, int], gpus_per_node: int,
                total_gpus: int | None = None) -> TraceStats:
    """``frame``: one row per job with ``vc, gpu_num, duration, submit_time`` (GPU counts may be
    fractional); ``vc_nodes`` may be empty (not sized); ``total_gpus`` overrides nodes × GPUs per node
    for the whole (a heterogeneous cluster)."""
    first, last = float(frame["submit_time"].min()), float(frame["submit_time"].max())
    span = last - first
    asked = frame["gpu_num"].astype(float) * frame["duration"].astype(float)
    by_vc = asked.groupby(frame["vc"], sort=False).sum()
    jobs = frame["vc"].value_counts(sort=False)
    largest = frame.groupby("vc", sort=False)["gpu_num"].max()
    names = list(vc_nodes) + [v for v in by_vc.index if v not in vc_nodes]
    vcs = []
    for name in names:
        nodes = vc_nodes.get(name)
        gpus = nodes * gpus_per_node if nodes is not None else None
        seconds = float(by_vc.get(name, 0.0))
        vcs.append(VcStats(name, nodes, gpus, int(jobs.get(name, 0)), seconds, int(np.ceil(largest.get(name, 0))),
                           offered_load(seconds, gpus, span) if gpus else None))
    sized = all(v.nodes is not None for v in vcs)
    nodes = sum(v.nodes or 0 for v in vcs) if sized else None
    gpus = total_gpus if total_gpus is not None else (nodes * gpus_per_node if nodes is not None else None)
    seconds = float(asked.sum())
    total = VcStats("all", nodes, gpus, len(frame), seconds, int(np.ceil(frame["gpu_num"].max())),
                    offered_load(seconds, gpus, span) if gpus else None)
    counts = frame["gpu_num"].value_counts().sort_index()
    histogram = [(_number(g), int(n)) for g, n in counts.items()]
    d = frame["duration"].astype(float)
    durations = {"mean": float(d.mean()), **{f"p{p}": float(np.percentile(d, p)) for p in PERCENTILES},
                 "max": float(d.max())}
    return TraceStats(len(frame), vcs, total, histogram, durations, first, last)


def sizes_for_loads(stats: TraceStats, gpus_per_node: int, loads: tuple[float, ...] = TARGET_LOADS
                    ) -> list[tuple[float, int, float]]:
    """(target load, --nodes, the offered load it gives) for a log run as one VC."""
    rows: list[tuple[float, int, float]] = []
    if stats.span <= 0 or stats.total.gpu_seconds <= 0:
        return rows
    for target in loads:
        nodes = nodes_for_load(stats.total.gpu_seconds, stats.span, target, gpus_per_node, stats.total.largest_job)
        rows.append((target, nodes, offered_load(stats.total.gpu_seconds, nodes * gpus_per_node, stats.span) or 0.0))
    return rows


def _number(value: Any) -> Any:
    value = float(value)
    return int(value) if value == int(value) else value
