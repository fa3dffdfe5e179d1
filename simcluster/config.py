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
    estimator: str = setting("oracle", "Duration estimator: oracle, history, file or ebm.")
    estimates: str | None = setting(None, "CSV of job_id,priority (estimated duration, s) for --estimator file.")
    retrain_interval: float = setting(7 * 86400.0, "Seconds of simulated time between re-trainings of learned estimators.")

    # GPU sharing
    colocation: str = setting(
        "default", "Colocation tables: 'default' (ours: measured if committed, else analytic), 'lucid' (the public "
        "RTX 3090 table from the shared data), or a folder with single.csv and pair.csv."
    )
    gpu_memory: float = setting(24576.0, "MiB of memory per GPU; jobs share a GPU only while their memory fits.")
    max_jobs_per_gpu: int = setting(2, "Most jobs one GPU may hold when a policy shares GPUs.")

    def preemption_overhead(self, gpu_num: int) -> float:
        return self.preempt_overhead_small if gpu_num <= 8 else self.preempt_overhead_large

    def as_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}
