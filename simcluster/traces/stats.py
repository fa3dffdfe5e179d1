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

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from simcluster.traces.sizing import nodes_for_load, offered_load

PERCENTILES = (10, 50, 90, 99)
TARGET_LOADS = (0.5, 0.8, 1.0)
HIGHEST_LOAD, LOWEST_LOAD = 10.0, 1e-3  # offered loads beyond these: a unit misread, not a busy cluster
FEWEST_JOBS = 100  # (fewer jobs: a small example, whose load says little)


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
                total_gpus: int | None = None, vc_gpus: Mapping[str, int] | None = None) -> TraceStats:
    """``frame``: one row per job with ``vc, gpu_num, duration, submit_time`` (GPU counts may be
    fractional); ``vc_nodes`` may be empty (not sized); ``total_gpus`` overrides nodes × GPUs per node
    for the whole (a heterogeneous cluster), ``vc_gpus`` each VC's (a trace's own cluster:
    :func:`run_vc_gpus`)."""
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
        gpus = (vc_gpus or {}).get(name, nodes * gpus_per_node if nodes is not None else None)
        seconds = float(by_vc.get(name, 0.0))
        vcs.append(VcStats(name, nodes, gpus, int(jobs.get(name, 0)), seconds, int(np.ceil(largest.get(name, 0))),
                           offered_load(seconds, gpus, span) if gpus else None))
    sized = all(v.nodes is not None for v in vcs)
    nodes = sum(v.nodes or 0 for v in vcs) if sized else None
    gpus = total_gpus if total_gpus is not None else (
        sum(v.gpus or 0 for v in vcs) if vc_gpus and sized else (nodes * gpus_per_node if nodes is not None else None))
    seconds = float(asked.sum())
    total = VcStats("all", nodes, gpus, len(frame), seconds, int(np.ceil(frame["gpu_num"].max())),
                    offered_load(seconds, gpus, span) if gpus else None)
    counts = frame["gpu_num"].value_counts().sort_index()
    histogram = [(_number(g), int(n)) for g, n in counts.items()]
    d = frame["duration"].astype(float)
    durations = {"mean": float(d.mean()), **{f"p{p}": float(np.percentile(d, p)) for p in PERCENTILES},
                 "max": float(d.max())}
    return TraceStats(len(frame), vcs, total, histogram, durations, first, last)


def run_vc_gpus(trace: Any, gpus_per_node: int) -> dict[str, int]:
    """Each VC's GPUs as a run of ``trace`` counts them (:func:`simcluster.run.cluster_of` without ``--cluster``):
    the trace's own cluster where it has one (a Pollux workload's 16 nodes of 4 GPUs, a VC config's GPU types),
    else its VCs' nodes of ``gpus_per_node`` GPUs; empty when it is not sized."""
    return vc_gpus_of(getattr(trace, "cluster", None), getattr(trace, "vc_nodes", None) or {}, gpus_per_node)


def vc_gpus_of(cluster: Any, vc_nodes: Mapping[str, int], gpus_per_node: int) -> dict[str, int]:
    """Each VC's GPUs: those of ``cluster`` (a :class:`~simcluster.cluster_spec.ClusterSpec`) when given, else
    ``vc_nodes`` × ``gpus_per_node``."""
    if cluster is not None:
        found: dict[str, int] = {}
        for group in cluster.groups:
            found[group.vc] = found.get(group.vc, 0) + group.nodes * group.gpus_per_node
        return found
    return {vc: nodes * gpus_per_node for vc, nodes in vc_nodes.items()}


def load_doubts(frame: pd.DataFrame, vc_gpus: Mapping[str, int]) -> list[str]:
    """A warning when the offered load on the cluster of ``vc_gpus`` (GPU-seconds asked ÷ (GPUs × span)) is beyond
    what a cluster sees — above :data:`HIGHEST_LOAD` (times in a coarser unit than seconds crowd the jobs into
    too short a span) or below :data:`LOWEST_LOAD` (milliseconds read as seconds stretch it) — saying what was
    seen and which option reads the data otherwise; none for fewer than :data:`FEWEST_JOBS` jobs.

    >>> jobs = pd.DataFrame({"gpu_num": 8, "duration": 36_000, "submit_time": range(0, 2_000, 10)})
    >>> load_doubts(jobs, {"a": 64})[0]  # doctest: +ELLIPSIS
    'offered load 452× the cluster: 200 jobs submitted within 33 minutes ask 16,000 GPU-hours of 64 GPUs; ...'
    """
    gpus = sum(vc_gpus.values())
    if len(frame) < FEWEST_JOBS or gpus <= 0:
        return []
    submit = frame["submit_time"].to_numpy(float)
    span = float(submit.max() - submit.min())
    asked = float((frame["gpu_num"].to_numpy(float) * frame["duration"].to_numpy(float)).sum())
    load = offered_load(asked, gpus, span)
    if load is None:
        return []
    seen = (f"{len(frame):,} jobs submitted within {_span_words(span)} ask {asked / 3600:,.0f} GPU-hours of "
            f"{gpus:,} GPUs")
    if load > HIGHEST_LOAD:
        return [(f"offered load {load:,.0f}× the cluster: {seen}; submit times in a coarser unit than seconds "
                "(minutes, kiloseconds) read as seconds? Convert them to seconds (or give --time-format for "
                "dates); durations in milliseconds read as seconds? give --duration-unit ms; or the cluster too "
                "small? (--vc-config, --nodes)")]
    if load < LOWEST_LOAD:
        return [(f"offered load {load:.2g} of the cluster: {seen}; submit times in milliseconds read as seconds? "
                "give --time-format epoch-ms (Unix milliseconds) or convert them to seconds; durations in "
                "minutes or hours read as seconds? give --duration-unit min or h")]
    return []


def _span_words(seconds: float) -> str:
    for unit, size in (("days", 86400.0), ("hours", 3600.0), ("minutes", 60.0)):
        if seconds >= 2 * size:
            return f"{seconds / size:,.0f} {unit}"
    return f"{seconds:,.0f} s"


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
