"""One call from a loaded trace to results: what the CLI, sweeps, tests and Python users call.

:func:`load_trace` reads a trace from a file or folder (any format ``lucid-sim run --trace`` takes) or
from a pandas DataFrame; :func:`simulate` replays it under a :class:`~simcluster.config.SimConfig`.
"""

from __future__ import annotations

import gc
import os
import time
from collections.abc import Iterable, Mapping
from typing import Any, Self
from warnings import warn

import pandas as pd

from simcluster.colocation.loader import ColocationModel
from simcluster.config import SimConfig
from simcluster.engine import Simulation
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
from simcluster.features.base import engine_hooks
from simcluster.metrics import ClusterTimeline, NodeFailures, Observer
from simcluster.run import ResolvedRun, RunResult, collect, resolve_run
from simcluster.throughputs import ThroughputTable
from simcluster.traces import Trace
from simcluster.traces import load_trace as load_file
from simcluster.traces.joblog import trace_from_frame

__all__ = ["ResolvedRun", "RunResult", "SimConfig", "TraceWarning", "load_trace", "resolve_run", "simulate",
           "simulate_resolved"]


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
    run = resolve_run(trace, config, colocation=colocation, throughputs=throughputs, faults=faults)
    return simulate_resolved(run, observers, kernel)


def simulate_resolved(run: ResolvedRun, observers: Iterable[Observer] = (), kernel: str | None = None) -> RunResult:
    """One simulation of a resolved run (:func:`~simcluster.run.resolve_run`): its jobs made, each feature in play
    started on them, the engine run with the features' observers, and the results collected.  The record is not
    changed: simulating it again gives the same results.

    >>> jobs = pd.DataFrame({"submit_time": [0, 5], "gpu_num": [8, 8], "duration": [60, 30]})
    >>> run = resolve_run(load_trace(jobs, nodes=1), SimConfig(policy="sjf"))
    >>> simulate_resolved(run).jobs["jct"].tolist() == simulate_resolved(run).jobs["jct"].tolist() == [60.0, 85.0]
    True
    """
    failures, timeline = NodeFailures(), ClusterTimeline()
    cpu0 = time.process_time()
    with _quiet_gc() as quiet:  # from the jobs' making on: tens of thousands of objects that live as long as the run
        jobs = run.make_jobs()
        quiet.jobs_made()
        parts = [part.feature.start(part.plan, jobs, run) for part in run.features]
        watchers = [failures, timeline, *(o for part in parts for o in part.observers), *observers]
        outcome = Simulation(jobs, run, watchers, kernel=kernel, **engine_hooks(parts)).run()
    return collect(run, jobs, outcome, parts, timeline, failures, time.process_time() - cpu0)


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
