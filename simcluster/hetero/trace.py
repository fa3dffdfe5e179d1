"""Heterogeneous-cluster traces (Gavel's format, the openb pod list) and their jobs.

A :class:`HeteroTrace` is what :func:`simcluster.traces.load_trace` returns for a Gavel ``.trace``
file or an openb pod list; :func:`simcluster.api.simulate` sends it to the round-based engine.
Work is counted in iterations (``total_steps``); a job's speed is its throughput on the GPU type it
holds.
"""

from __future__ import annotations

import enum
from collections import Counter
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from simcluster.hetero.cluster import HeteroCluster
from simcluster.hetero.throughputs import JobKey

VC = "cluster"  # one VC: per-VC reports work unchanged
FRAME_COLUMNS = ["job_id", "job_type", "gpu_num", "gpu_milli", "total_steps", "priority_weight", "slo",
                 "submit_time", "gpu_spec", "line"]


class HeteroState(enum.Enum):
    PENDING = "pending"
    RUNNING = "running"
    FINISHED = "finished"


@dataclass(slots=True, eq=False)
class HeteroJob:
    """One job and its life in the round-based engine (plain fields; the engine moves them)."""

    index: int
    job_id: str
    job_type: str
    key: JobKey
    gpu_num: int  # Gavel's scale factor
    milli: int  # thousandths of each GPU it needs (1000 = whole GPUs; openb pods may ask less)
    total_steps: float
    weight: float
    slo: float
    submit_time: float
    throughput: np.ndarray  # iterations/s alone on each GPU type (0: cannot run there)
    duration: float = 0.0  # seconds on its fastest GPU type, alone (reference duration)
    vc: str = VC
    user: str = ""
    state: HeteroState = HeteroState.PENDING
    steps_done: float = 0.0
    start_time: float | None = None
    end_time: float | None = None
    busy_time: float = 0.0
    shared_seconds: float = 0.0
    preemptions: int = 0
    migrations: int = 0
    type_seconds: np.ndarray = field(default_factory=lambda: np.zeros(0))

    @property
    def remaining(self) -> float:
        return max(self.total_steps - self.steps_done, 0.0)

    @property
    def share(self) -> float:
        """GPUs it occupies (fractional for openb pods that share a GPU by fraction)."""
        return self.gpu_num * self.milli / 1000.0


@dataclass
class HeteroTrace:
    """A validated heterogeneous trace: one row per job (``FRAME_COLUMNS``), sorted by submit time."""

    source: str
    frame: pd.DataFrame
    kind: str  # "gavel", "openb" or "venus" (converted)
    cluster: HeteroCluster | None = None  # the trace's own cluster (openb's node list), if any
    uniform: bool = False  # no workload types: 1 iteration/s on every GPU type
    skipped: Counter[str] = field(default_factory=Counter)
    load_cpu_seconds: float = 0.0
    notes: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if "vc" not in self.frame.columns:  # one VC, so per-VC views (reports, the live view) work
            self.frame["vc"] = VC

    def __len__(self) -> int:
        return len(self.frame)

    @property
    def vc_nodes(self) -> dict[str, int]:
        return {VC: len({n for per in self.cluster.node_of_gpu for n in per}) if self.cluster else 1}

    def describe(self) -> str:
        f = self.frame
        scales = Counter(f["gpu_num"].tolist())
        mix = ", ".join(f"{n} × {g} GPU" for g, n in sorted(scales.items()))
        span = float(f["submit_time"].max() - f["submit_time"].min()) if len(f) else 0.0
        text = (f"{self.source}: {len(f):,} valid jobs ({self.kind} format; {mix}); "
                f"{f['job_type'].nunique()} job types; submit span {span:,.0f} s; "
                f"{float(f['total_steps'].sum()):,.0f} iterations in all")
        if self.cluster is not None:
            text += f"; cluster from the trace: {self.cluster.describe()}"
        return text
