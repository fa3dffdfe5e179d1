"""From a heterogeneous trace and a configuration to the results contract (jobs, timeline, summary)."""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd

from simcluster.config import SimConfig
from simcluster.hetero.cluster import HeteroCluster, parse_cluster
from simcluster.hetero.engine import RoundEngine
from simcluster.hetero.mechanism import Mechanism
from simcluster.hetero.policies import HETERO_POLICIES, PolicyOptions
from simcluster.hetero.throughputs import ThroughputTable, job_key, load_throughputs
from simcluster.hetero.trace import FRAME_COLUMNS, VC, HeteroJob, HeteroTrace
from simcluster.metrics import ClusterTimeline
from simcluster.metrics.summary import JOB_COLUMNS, summarize
from simcluster.traces.errors import TraceError


def wants_rounds(trace: Any, config: SimConfig) -> bool:
    """The round-based engine runs heterogeneous traces, and any trace under a Gavel-only policy."""
    from simcluster.policies import POLICIES

    return isinstance(trace, HeteroTrace) or (config.policy in HETERO_POLICIES and config.policy not in POLICIES)


def from_venus(trace: Any) -> HeteroTrace:
    """A Venus trace as a heterogeneous one: 1 iteration/s everywhere (steps = duration in seconds)."""
    f = trace.frame
    frame = pd.DataFrame({
        "job_id": f["job_id"].astype(str), "job_type": "unknown", "gpu_num": f["gpu_num"].astype(int),
        "gpu_milli": 1000, "total_steps": f["duration"].clip(lower=1).astype(float), "priority_weight": 1.0,
        "slo": -1.0, "submit_time": f["submit_time"].astype(float), "gpu_spec": "", "line": np.arange(len(f)) + 2,
    })[FRAME_COLUMNS]
    return HeteroTrace(trace.source, frame, getattr(trace, "format", "venus"), None, True, trace.skipped,
                       trace.load_cpu_seconds,
                       ["Venus trace: 1 iteration/s on every GPU type; VCs merged into one cluster"])


def resolve_cluster(trace: HeteroTrace, config: SimConfig, venus_gpus: int = 0) -> HeteroCluster:
    if config.cluster:
        return parse_cluster(config.cluster)
    if trace.cluster is not None:
        return trace.cluster
    if venus_gpus:
        return parse_cluster(f"gpu:{venus_gpus}", gpus_per_node=config.gpus_per_node)
    raise ValueError(f"{trace.source}: give the cluster with --cluster, e.g. --cluster v100:4,p100:4,k80:4 "
                     "(GPU counts per type) or a node-list CSV")


def make_jobs(trace: HeteroTrace, table: ThroughputTable, cluster: HeteroCluster) -> list[HeteroJob]:
    """Validated jobs: every job type must be in the table and fit on some GPU type of the cluster."""
    jobs: list[HeteroJob] = []
    types = cluster.types
    cap = np.asarray(cluster.counts)
    for i, (jid, jtype, scale, milli, steps, weight, slo, submit, spec, line) in enumerate(
            trace.frame[FRAME_COLUMNS].itertuples(index=False, name=None)):
        key = job_key(str(jtype), int(scale))
        tput = table.solo_for(key, types)
        if tput is None:
            raise TraceError(trace.source, f"job type {jtype!r} with scale factor {scale} is not in the throughput "
                             f"table ({table.source})", line=int(line), field="job_type")
        if spec:
            allowed = set(str(spec).split("|"))
            unknown = allowed - set(types)
            if unknown == allowed:
                raise TraceError(trace.source, f"asks for GPU model(s) {spec!r}, none of which the cluster has "
                                 f"({', '.join(types)})", line=int(line), field="gpu_spec")
            tput = tput * np.array([t in allowed for t in types])
        room = (tput > 0) & (cap >= int(scale))
        if not room.any():
            field = "scale_factor" if (tput > 0).any() else "job_type"
            raise TraceError(trace.source, f"job needs {scale} GPU(s) of a type it runs on; the cluster "
                             f"({cluster.describe()}) has none", line=int(line), field=field)
        best = float(tput.max())
        jobs.append(HeteroJob(index=i, job_id=str(jid), job_type=str(jtype), key=key, gpu_num=int(scale),
                              milli=int(milli), total_steps=float(steps), weight=float(weight), slo=float(slo),
                              submit_time=float(submit), throughput=tput, duration=float(steps) / best))
    return jobs


def simulate_hetero(trace: Any, config: SimConfig, observers: Iterable[Any] = (), audit: list | None = None,
                    table: ThroughputTable | None = None) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, Any]]:
    """Run ``trace`` on the round-based engine.  ``audit`` (a list) receives, after every scheduling
    decision, ``(time, busy GPUs per type, thousandths in use per type, fullest GPU per type)``;
    ``table`` overrides the throughput table (tests)."""
    venus_gpus = 0
    if not isinstance(trace, HeteroTrace):
        venus_gpus = sum(trace.vc_nodes.values()) * config.gpus_per_node
        trace = from_venus(trace)
    if config.policy not in HETERO_POLICIES:
        raise ValueError(f"policy {config.policy!r} does not run on heterogeneous traces; choose one of: "
                         f"{', '.join(HETERO_POLICIES.names())}")
    if not config.round_seconds > 0:
        raise ValueError(f"--round must be positive, got {config.round_seconds}")
    cluster = resolve_cluster(trace, config, venus_gpus)
    load0 = time.process_time()
    if table is None:
        table = ThroughputTable.uniform_table(cluster.types) if trace.uniform else load_throughputs(config.throughputs)
    cpu0 = time.process_time()  # reading the throughput table counts as loading, not simulating
    load_cpu = trace.load_cpu_seconds + cpu0 - load0
    jobs = make_jobs(trace, table, cluster)
    policy = HETERO_POLICIES.get(config.policy)(seed=config.seed, options=PolicyOptions.from_config(config))
    timeline = ClusterTimeline()
    engine = RoundEngine(jobs, cluster, table, policy, Mechanism.from_config(config), seed=config.seed,
                         observers=[timeline, *observers], audit=audit)
    engine.run()
    sim_cpu = time.process_time() - cpu0

    frame = hetero_jobs_frame(engine.finished, cluster.types)
    series = pd.DataFrame({"time": timeline.time, "busy_gpus": timeline.used_gpus, "shared_gpus": timeline.shared_gpus,
                           "running_jobs": timeline.running, "pending_jobs": timeline.pending})
    job_gpu_seconds = float((frame["busy_time"] * frame["gpu_num"]).sum()) if len(frame) else 0.0
    extra = max(job_gpu_seconds - engine.busy_gpu_seconds, 0.0)  # GPU-time counted twice by sharing jobs
    packing = policy.packing or bool((frame["shared_seconds"] > 0).any() if len(frame) else False)
    sharing: dict[str, Any] = {}
    if packing:
        sharing = {"colocation": f"throughput table pairs ({table.source})"}
    summary = summarize(
        frame, {VC: cluster.total_gpus}, {VC: (engine.shared_gpu_seconds, extra)},
        policy=config.policy, placement="rounds", trace=trace.source, trace_format=trace.kind, seed=config.seed,
        gpus=cluster.total_gpus,
        node_failures=0, sim_cpu_seconds=sim_cpu, load_cpu_seconds=load_cpu,
        skipped_rows=dict(trace.skipped), config=config.as_dict(), engine="rounds",
        cluster=cluster.as_dict(), throughputs=table.source, trace_notes=trace.notes,
        round_seconds=config.round_seconds, rounds=engine.rounds, allocations=engine.allocations,
        lp_solves=policy.solves, lease_extensions=engine.lease_extensions,
        lease_extension_opportunities=engine.lease_opportunities,
        migrations=int(frame["migrations"].sum()) if len(frame) else 0,
        gpu_seconds_per_type={t: float(frame[f"seconds_{t}"].mul(frame["gpu_num"]).sum()) for t in cluster.types},
        unfinished=len(jobs) - len(frame), **sharing,
    )
    return frame, series, summary


def hetero_jobs_frame(finished: list[HeteroJob], types: tuple[str, ...]) -> pd.DataFrame:
    """One row per finished job, in trace order, with the columns of ``jobs.csv`` and a few more."""
    rows = sorted(finished, key=lambda j: j.index)
    n = len(rows)

    def col(values: Iterable[Any], dtype: Any = float) -> np.ndarray:
        return np.fromiter(values, dtype, n)

    frame = pd.DataFrame({
        "job_id": [j.job_id for j in rows], "vc": [j.vc for j in rows], "user": [j.user for j in rows],
        "gpu_num": col((j.gpu_num for j in rows), np.int64),
        "submit_time": col(j.submit_time for j in rows),
        "start_time": col((j.start_time if j.start_time is not None else np.nan) for j in rows),
        "end_time": col((j.end_time if j.end_time is not None else np.nan) for j in rows),
        "duration": col(j.duration for j in rows),
        "preemptions": col((j.preemptions for j in rows), np.int64),
        "restarts": np.zeros(n, np.int64),
        "busy_time": col(j.busy_time for j in rows),
        "overhead": np.zeros(n), "lost_work": np.zeros(n),
        "shared_seconds": col(j.shared_seconds for j in rows),
    })
    frame["jct"] = frame["end_time"] - frame["submit_time"]
    frame["queue"] = frame["jct"] - frame["busy_time"]  # all time not holding GPUs
    frame["mean_speed"] = np.where(frame["busy_time"] > 0, frame["duration"] / frame["busy_time"].where(
        frame["busy_time"] > 0, 1.0), 1.0)
    frame = frame[JOB_COLUMNS].copy()
    frame["job_type"] = [j.job_type for j in rows]
    frame["total_steps"] = col(j.total_steps for j in rows)
    frame["steps_done"] = col(j.steps_done for j in rows)
    frame["priority_weight"] = col(j.weight for j in rows)
    frame["gpu_milli"] = col((j.milli for j in rows), np.int64)
    frame["migrations"] = col((j.migrations for j in rows), np.int64)
    for k, t in enumerate(types):
        frame[f"seconds_{t}"] = col(j.type_seconds[k] for j in rows)
    return frame
