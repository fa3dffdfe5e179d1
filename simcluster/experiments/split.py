"""Splitting one run by VC: each VC simulated on its own, the parts merged into exactly the whole run.

VCs never share GPUs, so where the policy keeps its state per VC (it declares ``vc_independent``) a VC's jobs
run the same whether the other VCs are simulated beside them or not.  Each part is a sub-trace of one
VC; merging puts the jobs back in trace order, sums the timelines as step functions and recomputes the
summary over the merged jobs (:func:`simcluster.metrics.summary.summarize`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from simcluster.api import RunResult, simulate
from simcluster.config import SimConfig
from simcluster.experiments.runs import (
    SYNTH_PREFIX,
    RunSpec,
    failed_row,
    load_trace_arg,
    ok_row,
    synth_spec,
    with_identity,
)
from simcluster.metrics.fairness import RHO_FIGURES
from simcluster.metrics.summary import summarize
from simcluster.plugins import PluginError, resolve_policy
from simcluster.results import write_run
from simcluster.settings.reliability import reliability_mode
from simcluster.traces import JobLog
from simcluster.traces.synth import vc_nodes_of


@dataclass
class Part:
    """One VC of a split run: its jobs (with their positions in the whole trace) and timeline."""

    vc: str
    jobs: pd.DataFrame
    timeline: pd.DataFrame
    summary: dict[str, Any]
    wall_seconds: float
    # what the merge needs of the whole trace, so that the parent never loads it (10M jobs: gigabytes)
    trace_vcs: tuple[str, ...] = ()
    trace_format: str = "venus"
    trace_sizing: str = ""


def execute_part(spec: RunSpec, vc: str) -> Part:
    t0 = time.perf_counter()
    trace = load_trace_arg(spec.trace, spec.config.gpus_per_node, spec.vc_config)
    mask = (trace.frame["vc"] == vc).to_numpy()
    sub = JobLog(trace.source, trace.frame[mask], {vc: trace.vc_nodes[vc]}, trace.skipped, trace.load_cpu_seconds)
    result = simulate(sub, spec.config)
    jobs = result.jobs.assign(_position=np.flatnonzero(mask))  # jobs_frame keeps the sub-trace's order
    return Part(vc, jobs, result.timeline, result.summary, time.perf_counter() - t0, tuple(trace.vc_nodes),
                trace.format, trace.sizing)


def splittable(config: SimConfig) -> bool:
    """True when the run's VCs can be simulated apart and merged into exactly the whole run."""
    if config.cluster:  # --cluster merges the trace's VCs into one
        return False
    try:
        allowed = resolve_policy(config.policy).vc_independent
    except PluginError:
        return False
    # random placement draws from one stream for all VCs; node failures and the --until horizon are timed
    # from the start of the simulation, which for a part is its own VC's first submission; a fault model is
    # replayed onto the whole cluster's nodes (and its costs are figures a merge does not make)
    return (bool(allowed) and config.placement != "random" and config.node_mtbf == 0 and not config.until
            and not reliability_mode(config))


def vcs_of(spec: RunSpec) -> list[str]:
    """The VCs a run may be split into: a job log's own, untyped (a part is rebuilt from its VC's node count).
    A synthetic trace's come from its spec: its jobs are not drawn here."""
    if spec.trace.startswith(SYNTH_PREFIX):
        return list(vc_nodes_of(synth_spec(spec.trace, spec.config.gpus_per_node)))
    trace = load_trace_arg(spec.trace, spec.config.gpus_per_node, spec.vc_config)
    return list(trace.vc_nodes) if isinstance(trace, JobLog) and trace.cluster is None else []


def merge_parts(spec: RunSpec, parts: Sequence[Part], out: Path) -> dict[str, Any]:
    """Write the whole run's folder from its VCs' parts; return its runs.csv row."""
    t0 = time.perf_counter()
    try:
        result = merge_results(spec, parts)
        summary = with_identity(spec, result.summary)
        write_run(out / "runs" / spec.run_id, result.tables(), summary, spec.fmt)
    except Exception as exc:  # noqa: BLE001 — as in execute_run
        return failed_row(spec, exc, out, time.perf_counter() - t0)
    wall = sum(p.wall_seconds for p in parts) + time.perf_counter() - t0
    return ok_row(spec, summary, wall)


def merge_results(spec: RunSpec, parts: Sequence[Part]) -> RunResult:
    by_vc = {p.vc: p for p in parts}
    parts = [by_vc[vc] for vc in parts[0].trace_vcs]  # the whole run's VC order
    jobs = (pd.concat([p.jobs for p in parts], ignore_index=True).sort_values("_position", kind="stable")
            .drop(columns="_position").reset_index(drop=True))
    # A part's simulation stops at its last completion, before sampling; the whole run samples that
    # instant (the VC now empty) unless it is the end of the whole run too.
    end = float(jobs["end_time"].max())
    timelines = []
    for p in parts:
        last = float(p.jobs["end_time"].max())
        t = p.timeline
        if last < end:
            t = pd.concat([t[t["time"] < last], pd.DataFrame({c: [last if c == "time" else 0] for c in t.columns})],
                          ignore_index=True).astype(t.dtypes.to_dict())
        timelines.append(t)
    timeline = merge_timelines(timelines)
    first = parts[0].summary
    vc_gpus = {p.vc: int(p.summary["gpus"]) for p in parts}
    report: dict[str, Any] = {}
    for p in parts:  # VC-independent policies report counts, which add up
        for key, value in p.summary.items():
            if key in _POLICY_REPORT_SKIP or not isinstance(value, int | float):
                continue
            report[key] = report.get(key, 0) + value
    summary = summarize(
        jobs, vc_gpus, None, policy=first["policy"], placement=first["placement"], trace=first["trace"],
        trace_format=parts[0].trace_format, trace_sizing=parts[0].trace_sizing,
        seed=first["seed"], gpus=sum(vc_gpus.values()), node_failures=report.pop("node_failures", 0),
        sim_cpu_seconds=report.pop("sim_cpu_seconds", 0.0), load_cpu_seconds=first["load_cpu_seconds"],
        skipped_rows=first["skipped_rows"], config=first["config"], **report,
        warnings=list(dict.fromkeys(w for p in parts for w in p.summary.get("warnings", []))),
    )
    return RunResult(jobs, timeline, summary)


_POLICY_REPORT_SKIP = {"seed", "gpus", "load_cpu_seconds", "jobs", "avg_jct", "avg_queue", "p50_jct", "p99_jct",
                       "p99_queue", "makespan", "gpu_utilization", "preemptions", "restarts",
                       "shared_gpu_fraction", "avg_run_slowdown", "jain_users", *RHO_FIGURES}


def merge_timelines(timelines: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """Sum step functions: at each instant any part sampled, each part's last state (0 before its first)."""
    times = np.unique(np.concatenate([t["time"].to_numpy() for t in timelines]))
    merged = pd.DataFrame({"time": times})
    columns = [c for c in timelines[0].columns if c != "time"]
    for c in columns:
        merged[c] = 0
    for t in timelines:
        at = np.searchsorted(t["time"].to_numpy(), times, side="right") - 1
        seen = at >= 0
        for c in columns:
            values = np.zeros(len(times), dtype=t[c].dtype)
            values[seen] = t[c].to_numpy()[at[seen]]
            merged[c] = merged[c].to_numpy() + values
    return merged
