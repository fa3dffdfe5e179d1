"""From a simulation's end to its results: the jobs table, the timeline and the summary, with what each feature in
play adds (:class:`~simcluster.features.base.Contribution`).

The run's own columns and figures come first (:func:`~simcluster.metrics.summary.jobs_frame`,
:func:`~simcluster.metrics.summary.summarize`); each contribution then adds its columns, timeline columns,
figures, warnings and tables in the order of :data:`simcluster.features.FEATURES`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from simcluster.features.base import Contribution, Ended
from simcluster.job import Job, JobState
from simcluster.metrics.observer import ClusterTimeline, NodeFailures
from simcluster.metrics.summary import jobs_frame, summarize
from simcluster.policies.base import describe_settings, settings_as_dict
from simcluster.run.result import RunResult

if TYPE_CHECKING:
    from simcluster.engine.simulation import RunOutcome
    from simcluster.run.resolved import ResolvedRun
    from simcluster.traces.base import Trace


def collect(run: ResolvedRun, jobs: list[Job], outcome: RunOutcome, contributions: Sequence[Contribution],
            timeline: ClusterTimeline, failures: NodeFailures, cpu_seconds: float) -> RunResult:
    """The results of one simulation of ``run`` (``jobs``: its jobs, in trace order; ``cpu_seconds``: what the
    simulation took)."""
    trace = run.trace
    if trace is None:
        raise ValueError("results are collected for a run of a trace; a run of jobs made by hand has its jobs")
    ended = _ended(run, jobs, outcome)
    given = trace.given_table if not run.merged else None  # merged: the VCs are not the trace's
    left_at = {**outcome.abandoned, **outcome.declined}
    frame = jobs_frame(ended.reported, now=ended.end, left_at=left_at, trace=given)
    series = timeline.frame()
    for part in contributions:
        frame = part.columns(ended, frame)
    for part in contributions:
        series = part.timeline(ended, series)
    extra: dict[str, Any] = {}
    for part in contributions:
        extra |= part.figures(ended, frame)
    warnings = [*run.warnings, *(w for part in contributions for w in part.warnings(ended)), *outcome.warnings]
    if trace.notes:
        extra["trace_notes"] = trace.notes
    if outcome.notes:
        extra["engine_notes"] = outcome.notes
    extra |= plugin_figures(run, outcome.policy_settings)
    summary = summarize(
        frame, outcome.vc_gpus, outcome.vc_sharing, sum(outcome.partition_gpus.values()),
        ended.end if ended.left else None,
        policy=run.policy.name,  # a plug-in by its name; its spec and hash are in policy_source
        placement=run.placement_name, trace=trace.source, trace_format=trace.format, trace_sizing=_sizing(trace, run),
        seed=run.config.seed, gpus=ended.gpus, node_failures=failures.count, sim_cpu_seconds=cpu_seconds,
        load_cpu_seconds=trace.load_cpu_seconds + run.tables.load_cpu_seconds, skipped_rows=dict(trace.skipped),
        config=run.config.as_dict(), **outcome.policy_report(), **extra, **_stopped(run, ended), warnings=warnings,
    )
    for part in contributions:
        summary |= part.run_figures(ended, frame, summary)
    more = {name: table for part in contributions for name, table in part.tables(ended).items()}
    return RunResult(frame, series, summary, more)


def _ended(run: ResolvedRun, jobs: list[Job], outcome: RunOutcome) -> Ended:
    """Finished jobs in trace order, listed now rather than collected by a hook as each finished: no call per job
    during the run, and the jobs table's sort by trace index finds them in order."""
    declined = outcome.declined
    if outcome.finished_every_job:  # the usual run: no pass over the jobs to tell
        left, done = [], jobs
    else:  # the run stopped at --until, gave up on jobs or declined them
        left = [job for job in outcome.unfinished if job not in declined]
        done = [job for job in jobs if job.state is JobState.FINISHED]
    return Ended(run, outcome, jobs, done, left, done + left + list(declined))


def _stopped(run: ResolvedRun, ended: Ended) -> dict[str, Any]:
    """Where a run stopped short of finishing every job (``--until``, abandoned jobs): when, and what was left."""
    if not (ended.left or run.config.until):
        return {}
    abandoned = ended.outcome.abandoned
    return {"stopped_at": ended.end, "unfinished_jobs": len(ended.left),
            "unsubmitted_jobs": len(ended.jobs) - len(ended.done) - len(ended.left),
            "abandoned_jobs": [j.job_id for j in sorted(abandoned, key=lambda j: j.index)]}


def plugin_figures(run: ResolvedRun, settings: Any) -> dict[str, Any]:
    """What a summary records of plug-ins: where each came from (spec, file, its SHA-256), so that a result names
    the code that made it, and the policy's own ``settings`` as the run used them (defaults included)."""
    figures: dict[str, Any] = {}
    if not run.policy.builtin:
        figures["policy_source"] = run.policy.origin.as_dict()
    if not run.placement.builtin:
        figures["placement_source"] = run.placement.origin.as_dict()
    if describe_settings(run.policy.cls):
        figures["policy_settings"] = settings_as_dict(settings)
    return figures


def _sizing(trace: Trace, run: ResolvedRun) -> str:
    """How the trace's cluster was sized: the trace's own words, or, for a log loaded without a size, what sized it
    (a topology file: :func:`simcluster.features.topology.sized_by_topology`)."""
    if trace.vc_nodes or not run.cluster.source:
        return trace.sizing
    return f"one VC of {sum(run.cluster.vc_nodes.values()):,} nodes, sized by {run.cluster.source}"
