"""One call from a loaded trace to results: what the CLI, sweeps, tests and Python users call.

:func:`load_trace` reads a trace from a file or folder (any format ``lucid-sim run --trace`` takes) or
from a pandas DataFrame; :func:`simulate` replays it under a :class:`~simcluster.config.SimConfig`.
"""

from __future__ import annotations

import gc
import math
import os
import time
from array import array
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Self, cast
from warnings import warn

import numpy as np
import pandas as pd

from simcluster.cluster_spec import ONE_VC, ClusterSpec, parse_cluster
from simcluster.colocation.loader import ColocationModel
from simcluster.config import SimConfig
from simcluster.doubts import fallbacks_warning, table_warnings
from simcluster.engine import Simulation
from simcluster.engine.reliability import reliability_mode
from simcluster.faults import (  # noqa: F401  (the fault-log API, as `lucid-sim faults` runs it)
    FailureModel,
    FaultFit,
    FaultLog,
    LogReplay,
    RateModel,
    Repair,
    daly_interval,
    ettr,
    fit_faults,
    fit_log,
    load_fit,
    optimal_interval,
    read_fault_log,
    young_interval,
)
from simcluster.job import Job, JobState
from simcluster.metrics import ClusterTimeline, NodeFailures, Observer
from simcluster.metrics.elastic import (
    AllocationTimeline,
    cluster_efficiency,
    deadline_column,
    deadline_figures,
    elastic_columns,
    judged_column,
)
from simcluster.metrics.fairness import finish_time_fairness, users_table
from simcluster.metrics.fragmentation import FragmentationTimeline
from simcluster.metrics.gpu_types import TypeSeconds
from simcluster.metrics.reliability import CauseTimeline, node_gpus
from simcluster.metrics.reliability import job_columns as reliability_columns
from simcluster.metrics.reliability import run_figures as reliability_figures
from simcluster.metrics.summary import jobs_frame, summarize
from simcluster.plugins import Origin, display_name, origin_of, resolve, resolved_config
from simcluster.policies import Policy
from simcluster.policies.base import describe_settings, settings_as_dict
from simcluster.scope import check_settings, has_job_types
from simcluster.tables import load_tables
from simcluster.throughputs import ThroughputTable
from simcluster.traces import Trace, TraceError
from simcluster.traces import load_trace as load_file
from simcluster.traces.deadlines import job_deadlines
from simcluster.traces.joblog import trace_from_frame


@dataclass
class RunResult:
    """A run's results, as ``lucid-sim run`` writes them: ``jobs``, ``timeline`` and ``summary``.

    >>> jobs = pd.DataFrame({"submit_time": [0, 5], "gpu_num": [8, 8], "duration": [60, 30]})
    >>> result = simulate(load_trace(jobs, nodes=1))
    >>> result.jobs["jct"].tolist(), result.summary["makespan"], sorted(result.tables())
    ([60.0, 85.0], 90.0, ['jobs', 'timeline', 'users'])
    """

    jobs: pd.DataFrame  # one row per job (jobs.csv)
    timeline: pd.DataFrame  # the cluster after every scheduling instant (timeline.csv)
    summary: dict[str, Any]  # the figures, the settings and the warnings (summary.json)
    allocations: pd.DataFrame | None = None  # elastic runs: each job's GPU count over time (allocations.csv)

    def tables(self) -> dict[str, pd.DataFrame]:
        """The run folder's tables: jobs, timeline, users (per-user figures, :func:`users_table`) and, for a run
        of elastic jobs, allocations (:class:`~simcluster.metrics.elastic.AllocationTimeline`)."""
        tables = {"jobs": self.jobs, "timeline": self.timeline, "users": users_table(self.jobs)}
        if self.allocations is not None:
            tables["allocations"] = self.allocations
        return tables


def load_trace(trace: str | os.PathLike[str] | pd.DataFrame,
               vc_config: str | os.PathLike[str] | Mapping[str, int] | None = None,
               **options: Any) -> Trace:
    """A validated trace, read as ``lucid-sim run --trace`` reads it: the same options, defaults and errors.

    ``trace``: a path (a Venus folder or CSV, any CSV job log, a Gavel .trace file, an openb pod list), a
    name in the shared data (``venus_sept``, ``gavel_traces/t100.trace``: :func:`simcluster.paths.resolve_data`),
    or a DataFrame with a job log's columns (a known format's, or ``submit_time, gpu_num, duration`` and
    optionally ``job_id, vc, user`` and Venus' workload columns).  ``vc_config``: the VC config CSV, or for
    a DataFrame the nodes per VC (``{"vc0": 4}``); a log without a ``vc`` column is one VC sized by
    ``nodes``, ``cluster`` or ``load``.  ``options`` are the CLI's trace options by their names with
    ``_``: ``gpus_per_node`` (8), ``skip_invalid``, ``epoch``, ``columns``, ``nodes``, ``cluster``,
    ``load``, ``duration_unit`` (s), ``time_format`` (the rule), ``delimiter`` (the header's).

    Bad input raises :class:`~simcluster.errors.TraceError` naming the file or row and the field; data that
    looks misread (durations in minutes read as seconds...) loads with a :class:`TraceWarning` for each
    doubt (also in ``trace.warnings``).

    >>> jobs = pd.DataFrame({"submit_time": [0, 5], "gpu_num": [8, 16], "duration": [60, 30]})
    >>> trace = load_trace(jobs, nodes=2)
    >>> trace.vc_nodes, trace.format
    ({'cluster': 2}, 'csv')
    >>> load_trace(jobs.assign(vc="vc0"), {"vc0": 1})
    Traceback (most recent call last):
    ...
    simcluster.errors.TraceError: DataFrame row 1, field 'gpu_num': job asks for 16 GPUs but VC 'vc0' has 8
    """
    if isinstance(trace, pd.DataFrame):
        loaded: Trace = trace_from_frame(trace, vc_config, **options)
    else:
        if isinstance(vc_config, Mapping):
            raise TypeError("vc_config for a trace file is the VC config CSV's path")
        # the file loaders read any os.PathLike, through Path(); their annotation says str | Path
        loaded = load_file(trace, vc_config, **options)  # type: ignore[arg-type]
    for doubt in loaded.warnings:
        warn(f"{loaded.source}: {doubt}", TraceWarning, stacklevel=2)
    return loaded


class TraceWarning(UserWarning):
    """A trace that loaded but looks misread (:mod:`simcluster.traces.doubts`): the message says what was seen
    and which option reads the data otherwise.

    >>> import warnings
    >>> jobs = pd.DataFrame({"submit_time": [0, 5], "gpu_num": [1, 1], "minutes": [90, 30]})
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     trace = load_trace(jobs, columns={"duration": "minutes"}, nodes=1)
    >>> caught[0].category.__name__, "--duration-unit min" in str(caught[0].message)
    ('TraceWarning', True)
    """


def simulate(trace: Trace, config: SimConfig | None = None, observers: Iterable[Observer] = (),
             colocation: ColocationModel | None = None, throughputs: ThroughputTable | None = None,
             kernel: str | None = None, faults: FailureModel | None = None) -> RunResult:
    """Replay ``trace`` under ``config``: every policy on every trace and cluster shape, one engine.

    The cluster is the trace's own (its VCs; an openb node list), or ``config.cluster`` (``--cluster
    v100:4,p100:4``: one VC of those GPUs, into which a trace's VCs are merged, with a warning).
    ``colocation`` and ``throughputs`` override the model and table that ``config`` names; ``kernel``
    picks the engine's kernel ("fast", "reference"; None: the fast one where it can run).  ``faults``: a failure
    model (:class:`~simcluster.faults.RateModel`, :class:`~simcluster.faults.LogReplay`, anything with its
    ``outages``) to replay instead of the one ``config.faults`` names.

    >>> from simcluster.traces.synth import SynthSpec, synthesize
    >>> result = simulate(synthesize(SynthSpec(jobs=50, nodes=4, vcs=2, seed=1)), SimConfig(policy="sjf"))
    >>> result.summary["jobs"], result.summary["policy"]
    (50, 'sjf')
    """
    config = resolved_config(config or SimConfig())  # plug-ins loaded, the policy's own settings checked
    warnings = check_settings(config, has_job_types(trace))  # a given setting the run would ignore: error or warning
    config = files_beside_trace(config, trace)
    if config.throughput_history is None and trace.throughput_history:  # the cluster's own log, for lucid
        config = replace(config, throughput_history=trace.throughput_history)
    spec, merged = cluster_of(trace, config)
    if merged:
        warnings.append(merged)
    found, origin = resolve(config.policy, "policy")
    policy_class = cast("type[Policy]", found)
    tables = load_tables(trace, config, policy_class.shares_gpus, throughputs, colocation, spec.gpu_types)
    load_cpu = trace.load_cpu_seconds + tables.load_cpu_seconds
    cpu0 = time.process_time()
    failures, timeline = NodeFailures(), ClusterTimeline()
    costed = reliability_mode(config) or faults is not None
    down = CauseTimeline(node_gpus(spec, config.gpus_per_node), config.gpus_per_node) if costed else None
    per_type = TypeSeconds(spec.gpu_types) if spec.typed else None
    with _quiet_gc() as quiet:  # from the jobs' making on: tens of thousands of objects that live as long as the run
        jobs = trace.make_jobs(tables.throughputs)
        quiet.jobs_made()
        if merged:
            for job in jobs:
                job.vc = job.queue_vc = ONE_VC
        if spec.typed or merged or not trace.vcs_checked:
            check_fits(trace, jobs, spec, policy_class.one_type_per_job)
        deadlines = job_deadlines(trace.frame, config.deadlines, config.seed)
        if deadlines is not None:
            for job in jobs:
                value = deadlines[job.index]
                job.deadline = None if math.isnan(value) else float(value)
        allocations = None
        if policy_class.elastic:
            from simcluster.elastic.work import (
                attach_models,  # (scipy: only runs of elastic policies load it)
            )

            attach_models(trace, jobs, display_name(config.policy))
            allocations = AllocationTimeline()
        frag = FragmentationTimeline(jobs, spec) if any(j.gpu_milli < 1000 for j in jobs) else None
        watchers = [failures, timeline, *([per_type] if per_type else []), *([frag] if frag else []),
                    *([down] if down else []),
                    *([allocations] if allocations else []), *observers]
        outcome = Simulation(jobs, spec, config, watchers, tables.colocation, tables.throughputs, kernel=kernel,
                             faults=faults).run()
    sim_cpu = time.process_time() - cpu0

    # finished jobs in trace order, listed now rather than collected by a hook as each finished: no call per job
    # during the run, and the jobs table's sort by trace index finds them in order
    declined = outcome.declined
    if outcome.finished_every_job:  # the usual run: no pass over the jobs to tell
        left, done = [], jobs
    else:  # the run stopped at --until, gave up on jobs or declined them
        left = [job for job in outcome.unfinished if job not in declined]
        done = [job for job in jobs if job.state is JobState.FINISHED]
    given = trace.given_table if not merged else None  # merged: the VCs are not the trace's
    end = outcome.end
    reported = done + left + list(declined)
    frame = jobs_frame(reported, now=end, left_at={**outcome.abandoned, **declined}, trace=given)
    series = pd.DataFrame(  # (copy=False: not copied again into one block, while the jobs are still held)
        {"time": _numbers(timeline.time), "busy_gpus": _numbers(timeline.used_gpus),
         "shared_gpus": _numbers(timeline.shared_gpus), "running_jobs": _numbers(timeline.running),
         "pending_jobs": _numbers(timeline.pending)}, copy=False
    )
    if frag is not None:  # sampled with the timeline: one value per row
        series["frag_gpus"] = _numbers(frag.frag_gpus)
        series["frag_pct_of_idle"] = _numbers(frag.frag_pct_of_idle)
    vc_gpus, partition_gpus = outcome.vc_gpus, sum(outcome.partition_gpus.values())
    extra: dict[str, Any] = {}
    if deadlines is not None or declined:
        frame["deadline"], frame["declined"] = deadline_column(reported, declined)
        if outcome.judged_ends:  # (a policy judging some deadlines by another time than the job's end)
            frame["judged_end"] = judged_column(frame, outcome.judged_ends)
        extra |= deadline_figures(frame)
    if policy_class.elastic:
        frame = elastic_columns(frame, reported, end)
    frame["rho"] = finish_time_fairness(frame, vc_gpus)
    if outcome.reliability is not None:
        frame = reliability_columns(frame, reported, outcome.reliability, end)
    if outcome.colocation is not None:
        extra = {"colocation": outcome.colocation["source"],
                 "colocation_provenance": outcome.colocation["provenance"],
                 "colocation_fallbacks": outcome.colocation["fallbacks"],
                 "colocation_answered_by": outcome.colocation["answered_by"]}
        warnings += colocation_warnings(tables.colocation, outcome.colocation["fallbacks"])
    elif tables.throughputs is not None and (frame["shared_seconds"] > 0).any():
        extra = {"colocation": f"throughput table pairs ({tables.throughputs.source})"}
    if frag is not None:
        extra["fragmentation"] = frag.summary(end)
    if trace.heterogeneous or spec.typed:
        frame, typed = typed_columns(frame, done + left, per_type, end)
        extra |= typed | {"cluster": spec.as_dict()}
    if tables.throughputs is not None:
        extra["throughputs"] = tables.throughputs.source
    if trace.notes:
        extra["trace_notes"] = trace.notes
    if outcome.notes:
        extra["engine_notes"] = outcome.notes
    warnings += outcome.warnings  # what the guard of a plug-in saw (GPUs left idle with no timer set)
    extra |= plugin_figures(policy_class, outcome.policy_settings, origin, config)
    stopped: dict[str, Any] = {}
    if left or config.until:
        stopped = {"stopped_at": end, "unfinished_jobs": len(left),
                   "unsubmitted_jobs": len(jobs) - len(done) - len(left),
                   "abandoned_jobs": [j.job_id for j in sorted(outcome.abandoned, key=lambda j: j.index)]}
    summary = summarize(
        frame, vc_gpus, outcome.vc_sharing, partition_gpus, end if left else None,
        policy=display_name(config.policy),  # a plug-in by its name; its spec and hash are in policy_source
        placement=policy_class.own_placement or display_name(config.placement, "placement"), trace=trace.source,
        trace_format=trace.format, trace_sizing=trace.sizing, seed=config.seed,
        gpus=sum(vc_gpus.values()) + partition_gpus, node_failures=failures.count,
        sim_cpu_seconds=sim_cpu, load_cpu_seconds=load_cpu,
        skipped_rows=dict(trace.skipped), config=config.as_dict(), **outcome.policy_report(), **extra, **stopped,
        warnings=warnings,
    )
    if outcome.reliability is not None and down is not None:
        summary |= reliability_figures(frame, outcome.reliability, down.total(end), int(summary["gpus"]),
                                       float(summary["makespan"]))
        first = float(frame["submit_time"].min()) if len(frame) else 0.0
        over_time = down.series(frame, reported, int(summary["gpus"]), first, first + float(summary["makespan"]))
        if over_time is not None:
            summary["gpu_time_by_cause_over_time"] = over_time
    if policy_class.elastic:
        summary["cluster_efficiency"] = cluster_efficiency(reported, sum(vc_gpus.values()) + partition_gpus,
                                                           float(summary["makespan"]))
    return RunResult(frame, series, summary, allocations.frame() if allocations is not None else None)


def plugin_figures(policy: type[Policy], settings: Any, origin: Origin, config: SimConfig) -> dict[str, Any]:
    """What a summary records of plug-ins: where each came from (spec, file, its SHA-256), so that a result names
    the code that made it, and the policy's own ``settings`` as the run used them (defaults included)."""
    figures: dict[str, Any] = {}
    if origin.source != "built-in":
        figures["policy_source"] = origin.as_dict()
    placement = origin_of(config.placement, "placement")
    if placement.source != "built-in":
        figures["placement_source"] = placement.as_dict()
    if describe_settings(policy):
        figures["policy_settings"] = settings_as_dict(settings)
    return figures


def _numbers(values: array) -> np.ndarray | array:
    """A typed array as a NumPy array over its memory, not copied (pandas would read an ``array.array`` value
    by value: seconds for a long timeline; and a copy would be held beside it at the run's peak); an empty
    one as it is, which pandas makes a float column whatever its type.

    >>> _numbers(array("q", [1, 2])).dtype, _numbers(array("q")).typecode
    (dtype('int64'), 'q')
    """
    return np.frombuffer(values, values.typecode) if len(values) else values


def cluster_of(trace: Trace, config: SimConfig) -> tuple[ClusterSpec, str]:
    """The cluster a run simulates, and a warning when ``--cluster`` merges the trace's VCs into one.

    ``--cluster`` always wins (one VC); otherwise a job log's VCs (typed when its VC config has a
    ``gpu_type`` column), an openb pod list's node list; a Gavel trace has no cluster of its own."""
    own = trace.cluster
    if config.cluster:
        spec = parse_cluster(config.cluster, config.gpus_per_node)
        vcs = list(own.vcs if own is not None else trace.vc_nodes)
        if vcs != [ONE_VC]:
            return spec, (f"--cluster {config.cluster}: the trace's {len(vcs)} VC(s) ({', '.join(vcs[:5])}"
                          f"{', …' if len(vcs) > 5 else ''}) are merged into one VC '{ONE_VC}' of {spec.describe()}")
        return spec, ""
    if own is not None:
        return own, ""
    if trace.heterogeneous:  # a Gavel trace has no cluster of its own
        raise ValueError(f"{trace.source}: give the cluster with --cluster, e.g. --cluster v100:4,p100:4,k80:4 "
                         "(GPU counts per type) or a node-list CSV")
    return ClusterSpec.uniform(trace.vc_nodes, config.gpus_per_node, trace.source), ""


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


def typed_columns(frame: pd.DataFrame, jobs: list[Job], per_type: TypeSeconds | None,
                  now: float) -> tuple[pd.DataFrame, dict[str, Any]]:
    """jobs.csv's columns for traces of job types and clusters of GPU types, and the summary's figures."""
    rows = sorted(jobs, key=lambda j: j.index)
    frame = frame.copy()
    frame["job_type"] = [j.job_type for j in rows]
    frame["total_steps"] = [j.total_steps for j in rows]
    frame["steps_done"] = [j.progress * (j.speeds.rate if j.speeds is not None else 1.0) for j in rows]
    frame["priority_weight"] = [j.priority_weight for j in rows]
    frame["gpu_milli"] = [j.gpu_milli for j in rows]
    frame["migrations"] = [j.migrations for j in rows]
    figures: dict[str, Any] = {"migrations": int(sum(j.migrations for j in rows))}
    if per_type is not None:
        per_type.close_all(now)
        for gpu_type in per_type.types:
            frame[f"seconds_{gpu_type}"] = [per_type.of(j)[gpu_type] for j in rows]
        figures["gpu_seconds_per_type"] = dict(per_type.gpu_seconds)
    return frame, figures


def colocation_warnings(model: Any, fallbacks: dict[str, int]) -> list[str]:
    """Doubts about a sharing run's colocation answers: mostly guesses (``fallbacks``: how many lookups each
    fallback step answered), or tables that cannot be right."""
    found = table_warnings(model)
    if (line := fallbacks_warning(fallbacks)) is not None:
        found.append(line)
    return found


SIDE_FILES = ("estimates", "tie_order", "sharing_labels")  # settings naming a file that may sit beside the trace


def files_beside_trace(config: SimConfig, trace: Trace) -> SimConfig:
    """``config`` with each relative side-file path that is not found from here but is beside the trace
    made to point there (so a preset can name ``reference_estimates/…`` of the trace it reproduces)."""
    folder = Path(trace.source).parent
    changes: dict[str, Any] = {}
    for name in SIDE_FILES:
        value = getattr(config, name)
        if value and not Path(value).is_absolute() and not Path(value).exists() and (folder / value).is_file():
            changes[name] = str(folder / value)
    return replace(config, **changes) if changes else config


class _quiet_gc:
    """No collection while the jobs are made, then freeze them with what exists and collect rarely.

    The run allocates many short-lived events and tuples; CPython's default generation-0 threshold (700)
    would make the collector rescan the whole trace's jobs again and again, and the jobs themselves live as
    long as the run, so a collection while they are made would only walk them (figures:
    docs/architecture.md, performance notes).
    """

    def __enter__(self) -> Self:
        self._threshold, self._enabled = gc.get_threshold(), gc.isenabled()
        gc.disable()
        return self

    def jobs_made(self) -> None:
        """From here on the run: what exists is frozen, and the young generation is collected every 100,000."""
        gc.freeze()
        gc.set_threshold(100_000, 50, 100)
        if self._enabled:
            gc.enable()

    def __exit__(self, *exc: object) -> None:
        gc.set_threshold(*self._threshold)
        gc.unfreeze()
        if self._enabled:
            gc.enable()


# the reliability study (`lucid-sim reliability`), last: simcluster.experiments imports this module
from simcluster.experiments.reliability import ReliabilityStudy, reliability_study  # noqa: F401
