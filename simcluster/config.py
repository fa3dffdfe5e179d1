"""Simulation settings: one dataclass, every field with the help text the CLI shows."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any


def setting(default: Any, help: str) -> Any:
    return field(default=default, metadata={"help": help})


@dataclass(frozen=True)
class SimConfig:
    policy: str = setting("fifo", "Scheduling policy (see `lucid-sim policies`).")
    placement: str = setting("consolidate", "Placement (see `lucid-sim placements`).")
    gpus_per_node: int = setting(8, "GPUs in every node.")
    seed: int = setting(0, "Seed for every random choice (placement, failures).")
    node_mtbf: float = setting(0.0, "Mean seconds between failures of a node; 0 = nodes never fail.")
    node_repair: float = setting(3600.0, "Seconds a failed node is down before it is repaired.")
    checkpoint_interval: float = setting(
        0.0, "Seconds of progress between periodic checkpoints; a failure loses the work since the last one "
        "(0 = only preemptions checkpoint)."
    )
    preempt_overhead_small: float = setting(40.0, "Checkpoint/restore seconds charged per preemption, ≤ 8 GPUs.")
    preempt_overhead_large: float = setting(60.0, "Checkpoint/restore seconds charged per preemption, > 8 GPUs.")

    # tiresias
    quantum: float = setting(60.0, "Seconds between scheduling decisions of quantum-based policies (tiresias).")
    thresholds: tuple[float, ...] = setting(
        (18000.0,), "Attained-service thresholds (GPU-seconds) between tiresias' priority queues; K queues need K-1."
    )
    promote_knob: float = setting(
        0.0, "Tiresias' starvation guard: a job waiting longer than knob × its last run goes to the top queue (0: off)."
    )
    # estimate-driven policies (qssf)
    estimator: str = setting(
        "auto", "Duration estimator: oracle, history, file or ebm; auto = the policy's own (qssf: oracle, lucid: ebm)."
    )
    estimates: str | None = setting(None, "CSV of job_id,priority (estimated duration, s) for --estimator file.")
    retrain_interval: float = setting(7 * 86400.0, "Seconds of simulated time between re-trainings of learned estimators.")

    # GPU sharing
    colocation: str = setting(
        "default", "Colocation tables: 'default' (ours: measured if committed, else analytic), 'lucid' (the public "
        "RTX 3090 table from the shared data), or a folder with single.csv and pair.csv."
    )
    gpu_memory: float = setting(24576.0, "MiB of memory per GPU; jobs share a GPU only while their memory fits.")
    max_jobs_per_gpu: int = setting(2, "Most jobs one GPU may hold when a policy shares GPUs.")

    # heterogeneous clusters: round-based engine and Gavel's policies (simcluster/hetero)
    cluster: str | None = setting(
        None, "Heterogeneous cluster: GPU counts per type, e.g. 'v100:4,p100:4,k80:4' (optionally TYPE:COUNT:MEMORY_MIB), "
        "or a node-list CSV (sn,...,gpu,model as openb's). Default: the trace's own node list."
    )
    round_seconds: float = setting(360.0, "Round length (s) of the round-based mechanism for heterogeneous clusters.")
    throughputs: str | None = setting(
        None, "Throughput table for heterogeneous clusters: Gavel's simulation_throughputs.json or a folder with "
        "single.csv/pair.csv carrying a gpu_type column. Default: the shared data's Gavel table."
    )
    realloc_interval: float = setting(
        0.0, "Round-based engine: least seconds between allocation recomputations (0: whenever the job set "
        "changed; Gavel's simulator uses 1920)."
    )
    midround_release: bool = setting(
        True, "Round-based engine: a job finishing mid-round frees its GPUs at once for waiting jobs, and arrivals "
        "take idle GPUs at once (False: as Gavel, they wait for the next round; a round ends early once all its "
        "jobs are done)."
    )

    # lucid
    profiler_nodes: int = setting(2, "lucid: nodes in the profiling partition (beside the VCs); 0 = no profiling.")
    profile_seconds: float = setting(300.0, "lucid: seconds a new job runs on the profiling partition at most.")
    profiler_factor: float = setting(
        0.5, "lucid: jobs asking for more than factor × the partition's GPUs skip profiling."
    )
    lucid_sharing: str = setting(
        "adaptive", "lucid: when jobs may pair on GPUs — adaptive (only while the forecast load is high), "
        "always or never."
    )
    share_load_quantile: float = setting(
        0.5, "lucid adaptive sharing: pair jobs while the forecast of next hour's GPU-job submissions is at least "
        "this quantile of the hourly submissions the forecaster was trained on."
    )
    throughput_history: str | None = setting(
        None, "lucid: CSV of 10-minute submission bins (time, submit_gpu_job) to train the throughput forecaster "
        "on (its bins before the trace starts); default: cluster_throughput.csv beside the trace, else the "
        "trace's own earlier bins, retrained daily."
    )
    pair_priority_ratio: float = setting(
        2.0, "lucid: a waiting job may pair with a running one only if its priority is at most this × the partner's."
    )
    max_score_sum: int = setting(2, "lucid: most the two jobs' sharing scores (0 good … 2 bad) may sum to.")
    packing_thresholds: tuple[float, float] = setting(
        (0.85, 0.95), "lucid: a configuration whose mean speed when sharing is below the first is labelled 2 "
        "(shares badly), below the second 1, else 0."
    )

    def preemption_overhead(self, gpu_num: int) -> float:
        return self.preempt_overhead_small if gpu_num <= 8 else self.preempt_overhead_large

    def as_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}
