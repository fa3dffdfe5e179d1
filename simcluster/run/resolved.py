"""A run resolved once: everything a simulation of it needs, each named, loaded and checked exactly once.

:func:`~simcluster.run.resolve.resolve_run` builds a :class:`ResolvedRun` from what the user said (a trace and
a :class:`~simcluster.config.SimConfig`, whether it came from options, ``--set``, TOML or Python);
:class:`~simcluster.engine.Simulation` and the collection of results (:mod:`simcluster.run.collect`) read it and
never resolve a spec, a name or a file again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from simcluster.run.jobs import make_jobs

if TYPE_CHECKING:
    from simcluster.cluster_spec import ClusterSpec
    from simcluster.config import SimConfig
    from simcluster.faults.models import FailureModel
    from simcluster.features.base import Feature
    from simcluster.job import Job
    from simcluster.plugins import Kind, Origin
    from simcluster.tables import RunTables
    from simcluster.traces.base import Trace


@dataclass(frozen=True)
class Plugin:
    """A policy or placement class as the run resolved it: the class, where it came from, and its name in tables
    and messages (a built-in's name, else the plug-in's ``name`` or class name)."""

    cls: Any  # type[Policy] or type[Placement]
    origin: Origin
    name: str
    kind: Kind

    @property
    def builtin(self) -> bool:
        """Whether it is one of simcluster's own (the tests hold it: it runs without the plug-in guard)."""
        return self.origin.source == "built-in"

    @property
    def label(self) -> str:
        """How messages name it: ``policy srtf``, ``placement ./mine.py``'s name."""
        return f"{self.kind} {self.name}"


@dataclass(frozen=True)
class ResolvedSettings:
    """The settings with the plug-ins they name resolved: a run before its trace is known (what ``lucid-sim run``
    names its results folder by, before it reads the trace)."""

    config: SimConfig  # plug-in specs absolute, the policy's own settings typed
    policy: Plugin
    placement: Plugin


@dataclass(frozen=True)
class InPlay:
    """A feature taking part in the run, and what it made of the run's inputs (:meth:`Feature.plan`)."""

    feature: Feature
    plan: Any


@dataclass(frozen=True)
class ResolvedRun:
    """Everything a run is made of, resolved: its settings, plug-ins, cluster, tables, failures and features.

    >>> from simcluster.config import SimConfig
    >>> from simcluster.run import resolve_run
    >>> from simcluster.traces.synth import SynthSpec, synthesize
    >>> run = resolve_run(synthesize(SynthSpec(jobs=5, nodes=2, vcs=1)), SimConfig(policy="srtf"))
    >>> run.policy.name, run.policy.cls.__name__, run.cluster.total_gpus, [p.feature.name for p in run.features]
    ('srtf', 'ShortestRemainingTimeFirst', 16, ['deadlines', 'fairness'])
    """

    config: SimConfig  # plug-in specs absolute, the policy's own settings typed, side files found
    policy: Plugin
    placement: Plugin
    cluster: ClusterSpec  # the trace's VCs, or --cluster's one VC (the policy's own partitions are added as it runs)
    tables: RunTables  # the throughput table of traces of job types, the colocation model of sharing policies
    trace: Trace | None = None  # None: a run of jobs made by hand (Simulation's tests)
    merged: bool = False  # --cluster merged the trace's VCs into its one VC
    reliability: bool = False  # the reliability options are on: failures by model, their costs, spares, exclusion
    fault_model: FailureModel | None = None  # whose outages the engine replays (None: --node-mtbf's node lives)
    features: tuple[InPlay, ...] = ()  # in the order of simcluster.features.FEATURES
    warnings: tuple[str, ...] = ()  # settings the run ignores, VCs merged

    @property
    def placement_name(self) -> str:
        """The placement as summary.json names it: the policy's own where it places jobs itself."""
        return str(self.policy.cls.own_placement or self.placement.name)

    def make_jobs(self) -> list[Job]:
        """The trace's jobs, made anew for one simulation (:func:`~simcluster.run.jobs.make_jobs`)."""
        return make_jobs(self)
