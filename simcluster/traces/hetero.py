"""Traces made for heterogeneous clusters: Gavel's format and the openb pod list.

A :class:`HeteroTrace` is what :func:`simcluster.traces.load_trace` returns for a Gavel ``.trace``
file or an openb pod list: one VC (``cluster``), jobs counted in iterations (``total_steps``).  Its
:meth:`~HeteroTrace.make_jobs` turns rows into the simulator's :class:`~simcluster.job.Job`: a
Gavel job's work is its isolated duration on its fastest GPU type (``total_steps`` ÷ its best
throughput) and its speed on each type its throughput there ÷ that best
(:meth:`simcluster.throughputs.ThroughputTable.speeds`); an openb pod runs at 1 iteration/s on
every GPU type its ``gpu_spec`` allows.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import ClassVar

import pandas as pd

from simcluster.cluster_spec import ONE_VC as VC
from simcluster.cluster_spec import ClusterSpec
from simcluster.errors import TraceError
from simcluster.job import Job, TypeSpeeds, Workload
from simcluster.throughputs import ThroughputTable, job_key

FRAME_COLUMNS = ["job_id", "job_type", "gpu_num", "gpu_milli", "total_steps", "priority_weight", "slo",
                 "submit_time", "gpu_spec", "line"]


@dataclass
class HeteroTrace:
    """A validated heterogeneous trace: one row per job (``FRAME_COLUMNS``), sorted by submit time.

    A :class:`~simcluster.traces.base.Trace`: what every loader returns.

    >>> pod = ("p0", "unknown", 1, 500, 600, 1.0, -1.0, 0.0, "", 2)  # half a GPU for 600 s (openb)
    >>> trace = HeteroTrace("pods.csv", pd.DataFrame([pod], columns=FRAME_COLUMNS), "openb", uniform=True)
    >>> [(job.gpu_num, job.gpu_milli, job.duration) for job in trace.make_jobs()]
    [(1, 500, 600.0)]
    """

    source: str
    frame: pd.DataFrame
    kind: str  # "gavel" or "openb"
    cluster: ClusterSpec | None = None  # the trace's own cluster (openb's node list), if any
    uniform: bool = False  # no workload types: 1 iteration/s on every GPU type (openb)
    skipped: Counter[str] = field(default_factory=Counter)
    load_cpu_seconds: float = 0.0
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    # the Trace protocol's (simcluster.traces.base): jobs with per-type speeds, in one VC the run sizes
    heterogeneous: ClassVar[bool] = True
    vcs_checked: ClassVar[bool] = False  # the run checks each job against the cluster (simcluster.run.jobs.check_fits)
    sizing: ClassVar[str] = ""
    throughput_history: ClassVar[str | None] = None
    given_table: ClassVar[pd.DataFrame | None] = None  # the jobs' columns are made, not copied

    @property
    def format(self) -> str:
        return self.kind

    @property
    def needs_throughputs(self) -> bool:
        return not self.uniform

    def __post_init__(self) -> None:
        if "vc" not in self.frame.columns:  # one VC, so per-VC views (reports, the live view) work
            self.frame["vc"] = VC

    def __len__(self) -> int:
        return len(self.frame)

    @property
    def vc_nodes(self) -> dict[str, int]:
        return self.cluster.vc_nodes if self.cluster else {VC: 1}

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

    def make_jobs(self, table: ThroughputTable | None = None) -> list[Job]:
        """Fresh jobs (a simulation consumes them).  ``table``: the throughput table (not read for a
        trace without workload types); a job type missing from it is a TraceError naming the line."""
        jobs: list[Job] = []
        shared: dict[tuple, TypeSpeeds | None] = {}  # one speeds object per job type and GPU restriction
        for i, (jid, jtype, scale, milli, steps, weight, _slo, submit, spec, line) in enumerate(
                self.frame[FRAME_COLUMNS].itertuples(index=False, name=None)):
            allowed = tuple(str(spec).split("|")) if spec else None
            key = job_key(str(jtype), int(scale))
            if (key, allowed) not in shared:
                shared[(key, allowed)] = self._speeds(key, allowed, table, int(line))
            speeds = shared[(key, allowed)]
            rate = speeds.rate if speeds is not None else 1.0
            workload = None if self.uniform else Workload(key[0], "", key[1], 0)
            jobs.append(Job(index=i, job_id=str(jid), vc=VC, gpu_num=int(scale), submit_time=float(submit),
                            duration=float(steps) / rate, workload=workload, speeds=speeds, gpu_milli=int(milli),
                            job_type=str(jtype), total_steps=float(steps), priority_weight=float(weight)))
        return jobs

    def _speeds(self, key: tuple[str, int, int], allowed: tuple[str, ...] | None, table: ThroughputTable | None,
                line: int) -> TypeSpeeds | None:
        if self.uniform:
            return None if allowed is None else TypeSpeeds(dict.fromkeys(allowed, 1.0))
        assert table is not None, "a trace with job types needs the throughput table"
        speeds = table.speeds(key, allowed)
        if speeds is None:
            raise TraceError(self.source, f"job type {key[0]!r} with scale factor {key[2]} is not in the throughput "
                             f"table ({table.source})", line=line, field="job_type")
        return speeds
