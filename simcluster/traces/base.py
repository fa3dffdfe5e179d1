"""What every trace loader returns: one :class:`Trace` protocol, whatever the format.

Two classes implement it: :class:`~simcluster.traces.joblog.JobLog` (job logs: Venus, Philly, any CSV, the
synthetic ones) and :class:`~simcluster.traces.hetero.HeteroTrace` (jobs with per-GPU-type speeds: Gavel's
traces, openb's pod lists).  A run reads a trace only through this protocol (:func:`simcluster.api.simulate`).
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Protocol

import pandas as pd

from simcluster.errors import TraceError

if TYPE_CHECKING:  # pragma: no cover
    from simcluster.cluster_spec import ClusterSpec
    from simcluster.job import Job
    from simcluster.throughputs import ThroughputTable


class Trace(Protocol):
    """A validated trace: its jobs, its cluster if it names one, and how it was read.

    >>> from simcluster import load_trace
    >>> trace = load_trace(pd.DataFrame({"submit_time": [0, 9], "gpu_num": [1, 2], "duration": [5, 6]}), nodes=1)
    >>> trace.format, trace.heterogeneous, [job.gpu_num for job in trace.make_jobs()]
    ('csv', False, [1, 2])
    """

    source: str  # the file or folder it was read from (or what made it)
    frame: pd.DataFrame  # one row per job
    skipped: Counter[str]  # rows left out, by reason (--skip-invalid)
    load_cpu_seconds: float

    @property
    def format(self) -> str:
        """Which format it was read as (summary.json's trace_format): venus, philly, csv, gavel, openb..."""

    @property
    def sizing(self) -> str:
        """Where its VCs' sizes came from ("" where the trace has no VCs of its own)."""

    @property
    def cluster(self) -> ClusterSpec | None:
        """Its nodes by GPU type, where it names them (a typed VC config, openb's node list)."""

    @property
    def vc_nodes(self) -> dict[str, int]:
        """Nodes per VC."""

    @property
    def throughput_history(self) -> str | None:
        """The cluster's own submission log beside the trace, if any (lucid's forecast reads it)."""

    @property
    def notes(self) -> list[str]:
        """What the loader assumed, for the run's summary (trace_notes)."""

    @property
    def warnings(self) -> list[str]:
        """Where the data looks misread (:mod:`simcluster.traces.doubts`)."""

    @property
    def heterogeneous(self) -> bool:
        """Jobs of job types with per-GPU-type speeds (Gavel, openb): jobs.csv gets their columns."""

    @property
    def needs_throughputs(self) -> bool:
        """Its jobs' speeds come from the throughput table (:meth:`make_jobs` needs it)."""

    @property
    def vcs_checked(self) -> bool:
        """The loader checked that every job fits its VC."""

    @property
    def given_table(self) -> pd.DataFrame | None:
        """The table job i's own columns are copied from as they are (row i), or None where jobs are made otherwise."""

    def __len__(self) -> int: ...

    def make_jobs(self, throughputs: ThroughputTable | None = None) -> list[Job]:
        """Fresh jobs (a simulation consumes them; a trace can be replayed)."""


def row_error(trace: Trace, row: int, field: str, why: str) -> TraceError:
    """An error about job ``row`` of ``trace`` (0-based, trace order): its file, its line where the trace kept
    lines, the field, and the job named.

    >>> from simcluster.traces.synth import SynthSpec, synthesize
    >>> row_error(synthesize(SynthSpec(jobs=2)), 1, "priority", "too high").message
    'job s0-1: too high'
    """
    frame = trace.frame
    line = int(frame["line"].iloc[row]) if "line" in frame else None
    return TraceError(trace.source, f"job {frame['job_id'].iloc[row]}: {why}", line=line, field=field)

