"""One call from a loaded trace to results: what the CLI, sweeps, tests and Python users call.

:func:`load_trace` reads a trace from a file or folder (any format ``lucid-sim run --trace`` takes) or
from a pandas DataFrame; :func:`simulate` replays it under a :class:`~simcluster.config.SimConfig`.
"""

from __future__ import annotations

import gc
import os
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pandas as pd

from simcluster.colocation.loader import ColocationModel
from simcluster.config import SimConfig
from simcluster.engine import Simulation
from simcluster.metrics import ClusterTimeline, FinishedJobs, Observer
from simcluster.metrics.fairness import finish_time_fairness, users_table
from simcluster.metrics.summary import jobs_frame, summarize
from simcluster.scope import ROUNDS, check_settings, engine_of
from simcluster.traces import Trace


@dataclass
class RunResult:
    """A run's results, as ``lucid-sim run`` writes them: ``jobs``, ``timeline`` and ``summary``."""

    jobs: pd.DataFrame  # one row per job (jobs.csv)
    timeline: pd.DataFrame  # the cluster after every scheduling instant (timeline.csv)
    summary: dict[str, Any]  # the figures, the settings and the warnings (summary.json)

    def tables(self) -> dict[str, pd.DataFrame]:
        """The run folder's tables: jobs, timeline, and users (per-user figures, :func:`users_table`)."""
        return {"jobs": self.jobs, "timeline": self.timeline, "users": users_table(self.jobs)}


def load_trace(trace: str | os.PathLike[str] | pd.DataFrame,
               vc_config: str | os.PathLike[str] | Mapping[str, int] | None = None, **options: Any) -> Trace:
    """A validated trace from a path (a Venus folder or CSV, a Gavel .trace file, an openb pod list) or
    from a DataFrame with the job log's columns (``job_id, vc, gpu_num, submit_time, duration``; ``user``
    and workload columns optional).

    ``vc_config``: the VC config CSV, or for a DataFrame the nodes per VC (``{"vc0": 4}``).  ``options``:
    ``gpus_per_node`` (8), ``skip_invalid`` (False), ``epoch`` (time zero of timestamps).  Bad input
    raises :class:`~simcluster.traces.TraceError` naming the file or row and the field.

    >>> jobs = pd.DataFrame({"job_id": ["a", "b"], "vc": "vc0", "gpu_num": [8, 16], "submit_time": [0, 5],
    ...                      "duration": [60, 30]})
    >>> load_trace(jobs, {"vc0": 1})
    Traceback (most recent call last):
    ...
    simcluster.traces.errors.TraceError: DataFrame row 1, field 'gpu_num': job asks for 16 GPUs but VC 'vc0' has 8
    """
    if isinstance(trace, pd.DataFrame):
        from simcluster.traces.venus import load_vc_config, trace_from_frame

        if vc_config is None:
            raise TypeError("a DataFrame trace needs its VCs: load_trace(frame, {'vc0': NODES, ...})")
        nodes = dict(vc_config) if isinstance(vc_config, Mapping) else load_vc_config(Path(vc_config))
        return trace_from_frame(trace, nodes, **options)
    from simcluster.traces import load_trace as load_file

    if isinstance(vc_config, Mapping):
        raise TypeError("vc_config for a trace file is the VC config CSV's path")
    return load_file(trace, vc_config, **options)


def simulate(trace: Trace, config: SimConfig | None = None, observers: Iterable[Observer] = (),
             colocation: ColocationModel | None = None) -> RunResult:
    """Replay ``trace`` under ``config``.

    >>> from simcluster.traces.synth import SynthSpec, synthesize
    >>> result = simulate(synthesize(SynthSpec(jobs=50, nodes=4, vcs=2, seed=1)), SimConfig(policy="sjf"))
    >>> result.summary["jobs"], result.summary["policy"]
    (50, 'sjf')
    """
    config = config or SimConfig()
    warnings = check_settings(trace, config)  # a given setting the run would ignore: error or warning
    if engine_of(trace, config) == ROUNDS:  # heterogeneous clusters, Gavel's policies
        from simcluster.hetero.run import simulate_hetero

        if config.until or config.spread_penalty:  # the round-based engine has neither (yet): never silently
            raise ValueError("--until and --spread-penalty apply to event-driven runs only, not to the round-based "
                             "engine of heterogeneous clusters and Gavel's policies")
        result = RunResult(*simulate_hetero(trace, config, observers))
        result.summary["warnings"] = warnings
        return result
    config = files_beside_trace(config, trace)
    throughput_log = getattr(trace, "throughput_log", None)
    if config.throughput_history is None and throughput_log:  # the cluster's own log, for lucid's forecast
        config = replace(config, throughput_history=throughput_log)
    cpu0 = time.process_time()
    jobs = trace.make_jobs()
    finished, timeline = FinishedJobs(), ClusterTimeline()
    sim = Simulation(jobs, trace.vc_nodes, config, [finished, timeline, *observers], colocation)
    with _quiet_gc():
        sim.run()
    sim_cpu = time.process_time() - cpu0

    left = sim.unfinished()  # only when the run stopped at --until or gave up on jobs
    frame = jobs_frame(finished.jobs + left, now=sim.env.now, left_at=sim.abandoned)
    series = pd.DataFrame(
        {"time": timeline.time, "busy_gpus": timeline.used_gpus, "shared_gpus": timeline.shared_gpus,
         "running_jobs": timeline.running, "pending_jobs": timeline.pending}
    )
    partitions = sim.policy.partitions()
    vc_gpus = {name: vc.total_gpus for name, vc in sim.cluster.vcs.items() if name not in partitions}
    partition_gpus = sum(vc.total_gpus for name, vc in sim.cluster.vcs.items() if name in partitions)
    frame["rho"] = finish_time_fairness(frame, vc_gpus)
    end = float(frame["end_time"].max()) if len(frame) and not left else sim.env.now
    vc_sharing = {name: vc.sharing_seconds(end) for name, vc in sim.cluster.vcs.items()}
    sharing = {}
    if sim.colocation is not None:
        sharing = {"colocation": sim.colocation.source,
                   "colocation_provenance": getattr(sim.colocation, "provenance", None)
                   or {"kind": "tables", "description": sim.colocation.source},
                   "colocation_fallbacks": sim.colocation.fallback_counts()}
        warnings += colocation_warnings(config.colocation, sim.colocation.fallback_counts())
    stopped: dict[str, Any] = {}
    if left or config.until:
        stopped = {"stopped_at": sim.env.now, "unfinished_jobs": len(left),
                   "unsubmitted_jobs": len(jobs) - len(finished.jobs) - len(left),
                   "abandoned_jobs": [j.job_id for j in sorted(sim.abandoned, key=lambda j: j.index)]}
    summary = summarize(
        frame, vc_gpus, vc_sharing, partition_gpus, sim.env.now if left else None,
        policy=config.policy, placement=config.placement, trace=trace.source,
        trace_format=getattr(trace, "format", "venus"), trace_sizing=getattr(trace, "sizing", ""), seed=config.seed,
        gpus=sum(vc_gpus.values()) + partition_gpus, node_failures=finished.node_failures,
        sim_cpu_seconds=sim_cpu, load_cpu_seconds=trace.load_cpu_seconds,
        skipped_rows=dict(trace.skipped), config=config.as_dict(), **sim.policy.report(), **sharing, **stopped,
        warnings=warnings,
    )
    return RunResult(frame, series, summary)


def colocation_warnings(spec: str, fallbacks: dict[str, int]) -> list[str]:
    """Doubts about a sharing run's colocation answers: mostly guesses, or tables that cannot be right."""
    from simcluster.doubts import fallbacks_warning, table_warnings

    found = table_warnings(spec)
    if (line := fallbacks_warning(fallbacks)) is not None:
        found.append(line)
    return found


SIDE_FILES = ("estimates", "tie_order", "sharing_labels")  # settings naming a file that may sit beside the trace


def files_beside_trace(config: SimConfig, trace: Trace) -> SimConfig:
    """``config`` with each relative side-file path that is not found from here but is beside the trace
    made to point there (so a preset can name ``reference_estimates/…`` of the trace it reproduces)."""
    folder = Path(trace.source).parent
    changes = {}
    for name in SIDE_FILES:
        value = getattr(config, name)
        if value and not Path(value).is_absolute() and not Path(value).exists() and (folder / value).is_file():
            changes[name] = str(folder / value)
    return replace(config, **changes) if changes else config


class _quiet_gc:
    """Freeze what exists and collect rarely while simulating.

    The run allocates many short-lived events and tuples; CPython's default
    generation-0 threshold (700) makes the collector rescan the whole trace's
    jobs again and again, which costs about a third of the run.
    """

    def __enter__(self) -> None:
        self._threshold = gc.get_threshold()
        gc.freeze()
        gc.set_threshold(100_000, 50, 100)

    def __exit__(self, *exc: object) -> None:
        gc.set_threshold(*self._threshold)
        gc.unfreeze()
