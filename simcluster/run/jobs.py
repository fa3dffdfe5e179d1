"""A run's jobs as it simulates them: made from the trace with the run's tables, in the run's VCs, checked to fit."""

from __future__ import annotations

from typing import TYPE_CHECKING

from simcluster.cluster_spec import ONE_VC, ClusterSpec
from simcluster.errors import TraceError
from simcluster.job import Job

if TYPE_CHECKING:
    from simcluster.run.resolved import ResolvedRun
    from simcluster.traces.base import Trace


def make_jobs(run: ResolvedRun) -> list[Job]:
    """The jobs of ``run``'s trace, made anew (a simulation changes them): in ``--cluster``'s one VC where it
    merged the trace's, and each checked to fit its VC where the trace's loader could not check it."""
    trace = run.trace
    if trace is None:
        raise ValueError("a run resolved without a trace has no jobs of its own: give Simulation its jobs")
    jobs = trace.make_jobs(run.tables.throughputs)
    if run.merged:
        for job in jobs:
            job.vc = job.queue_vc = ONE_VC
    if run.cluster.typed or run.merged or not trace.vcs_checked:
        check_fits(trace, jobs, run.cluster, run.policy.cls.one_type_per_job)
    return jobs


def check_fits(trace: Trace, jobs: list[Job], spec: ClusterSpec, one_type: bool) -> None:
    """Every job must fit in its VC on GPU types it runs on (on one such type when ``one_type``: a round
    policy runs a job on GPUs of one type); else a TraceError naming the job (and its line)."""
    lines = trace.frame["line"].tolist() if "line" in trace.frame else None
    room: dict[tuple[int, str], tuple[int, str]] = {}
    for job in jobs:
        key = (id(job.speeds), job.queue_vc)
        if key not in room:
            gpus = {t: n for t, n in spec.type_gpus(job.queue_vc).items() if job.speed_on(t) > 0}
            room[key] = (max(gpus.values(), default=0) if one_type else sum(gpus.values()), ", ".join(gpus))
        if job.gpu_num <= room[key][0]:
            continue
        line = lines[job.index] if lines is not None else None
        described = spec.describe() if len(spec.vcs) == 1 else f"VC {job.queue_vc!r}"
        if not room[key][1]:
            asked = f"asks for GPU model(s) {'|'.join(job.speeds.speeds) if job.speeds else '?'!r}, none of which"
            raise TraceError(trace.source, f"job {job.job_id} {asked} the cluster has ({described})", line=line,
                             field="gpu_spec" if job.speeds is not None and job.speeds.key is None else "job_type")
        where = "of one type it runs on" if one_type else "of types it runs on"
        raise TraceError(trace.source, f"job {job.job_id} needs {job.gpu_num} GPU(s) {where}; the cluster "
                         f"({described}) has {room[key][0]}", line=line,
                         field="scale_factor" if trace.heterogeneous else "gpu_num")
