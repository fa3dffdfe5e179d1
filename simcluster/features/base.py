"""What a feature is: a capability that touches a whole run, contributing through the run's hooks.

Deadlines, elastic jobs, fragmentation, GPU types, colocation, reliability and finish-time fairness are each one
module of :mod:`simcluster.features`: a :class:`Feature` says whether it is in play for a run and what it makes
of the run's inputs (resolved once, :func:`simcluster.run.resolve_run`); each time the run is simulated it gives
a :class:`Contribution`, which prepares the jobs, adds its observers to the engine's and, once the run is over,
its columns to ``jobs.csv`` and ``timeline.csv``, its figures and warnings to ``summary.json`` and its own tables
(and, where its jobs slow each other without sharing GPUs, speed terms to the engine: :mod:`simcluster.engine.terms`).
The hub (:func:`simcluster.api.simulate`) loops over the features in play and never names one (pytest's own
features are plugins on the hook specifications outside plugins use: the model here).

>>> from simcluster.features import FEATURES
>>> [feature.name for feature in FEATURES]
['deadlines', 'elastic', 'fairness', 'reliability', 'colocation', 'fragmentation', 'gpu_types', 'tiers', 'spot',
 'topology', 'links']
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    import pandas as pd

    from simcluster.cluster import Cluster
    from simcluster.cluster_spec import ClusterSpec
    from simcluster.config import SimConfig
    from simcluster.engine.context import PassStep
    from simcluster.engine.simulation import RunOutcome, Simulation
    from simcluster.engine.terms import SpeedTerm
    from simcluster.job import Job
    from simcluster.metrics.observer import Observer
    from simcluster.placement import Placement
    from simcluster.run.resolved import ResolvedRun
    from simcluster.traces.base import Trace


class Feature:
    """A capability of a run, registered by name in :data:`simcluster.features.FEATURES` (one line).

    ``settings``: the group of settings it reads (:mod:`simcluster.settings`), shown under its panel of ``lucid-sim
    run --help``.  :meth:`cluster`, :meth:`in_play` and :meth:`plan` are asked once, as the run is resolved;
    :meth:`start` each time the run is simulated.
    """

    name: ClassVar[str] = "?"
    settings: ClassVar[type | None] = None

    def cluster(self, spec: ClusterSpec, config: SimConfig, trace: Trace | None) -> ClusterSpec:
        """What the feature makes of the run's cluster before anything else reads it (a topology above its nodes),
        asked once as the run is resolved, whether or not the feature is in play; by default the cluster as it is.
        """
        return spec

    def in_play(self, run: ResolvedRun) -> bool:
        """Whether the feature takes part in ``run`` (its settings, policy, cluster and tables resolved)."""
        return True

    def plan(self, run: ResolvedRun) -> Any:
        """What the feature makes of ``run``'s inputs, resolved once and kept in the run (immutable: e.g. each
        job's drawn deadline); None where it needs nothing."""
        return None

    def start(self, plan: Any, jobs: list[Job], run: ResolvedRun) -> Contribution:
        """Before a simulation of ``run``: prepare ``jobs`` (made anew for each simulation) by ``plan``, and give
        this simulation's :class:`Contribution`."""
        return Contribution()


class Contribution:
    """What a feature adds to one simulation: observers during it, columns, figures and tables after it.

    Every hook has a default that adds nothing, so a feature defines only what it adds (Ciw's observers).  The
    hooks are called in the order of :data:`simcluster.features.FEATURES`, each with the run's :class:`Ended`.
    """

    observers: Sequence[Observer] = ()
    speed_terms: Sequence[SpeedTerm] = ()  # what slows running jobs through the other jobs running (the engine's)
    # what orders waiting jobs before the policy's own key; given only where its class lets it (Policy.priority_first)
    queue_rank: Callable[[Job], Any] | None = None
    pass_steps: Sequence[PassStep] = ()  # what acts on a VC after each of the policy's passes there (evictions)
    # SimPy processes started with the run, each given the engine (what takes spot nodes away and gives them back)
    processes: Sequence[Callable[[Simulation], Generator[Any, Any, None]]] = ()
    # the run's placement wrapped, given the engine's cluster (what keeps some jobs off some nodes: spot nodes)
    wrap_placement: Callable[[Placement, Cluster], Placement] | None = None

    def columns(self, ended: Ended, jobs: pd.DataFrame) -> pd.DataFrame:
        """``jobs.csv`` with this feature's columns added (one row per job, in trace order)."""
        return jobs

    def timeline(self, ended: Ended, timeline: pd.DataFrame) -> pd.DataFrame:
        """``timeline.csv`` with this feature's columns added (one value per sample)."""
        return timeline

    def figures(self, ended: Ended, jobs: pd.DataFrame) -> dict[str, Any]:
        """This feature's figures of ``summary.json``, listed before the run's own (the jobs table complete)."""
        return {}

    def warnings(self, ended: Ended) -> list[str]:
        """Doubts about the run's results that this feature saw (e.g. colocation answers that were guesses)."""
        return []

    def run_figures(self, ended: Ended, jobs: pd.DataFrame, summary: dict[str, Any]) -> dict[str, Any]:
        """Figures that build on the run's own (its GPUs, its makespan: ``summary``), listed after them."""
        return {}

    def tables(self, ended: Ended) -> dict[str, pd.DataFrame]:
        """Tables of the run folder of this feature's own (``allocations.csv``), by name."""
        return {}


def engine_hooks(parts: Sequence[Contribution]) -> dict[str, Any]:
    """What the contributions give the engine itself, as :class:`~simcluster.engine.Simulation` takes it: their speed
    terms, pass steps and processes, the one rank of waiting jobs (two features ranking them would contradict each
    other) and the one wrapper of the placement (likewise).

    >>> engine_hooks([Contribution()])["processes"], engine_hooks([])["wrap_placement"]
    ([], None)
    """
    ranks = [part.queue_rank for part in parts if part.queue_rank is not None]
    if len(ranks) > 1:
        raise ValueError(f"{len(ranks)} features rank the waiting jobs: at most one may")
    wrappers = [part.wrap_placement for part in parts if part.wrap_placement is not None]
    if len(wrappers) > 1:
        raise ValueError(f"{len(wrappers)} features wrap the placement: at most one may")
    return {"speed_terms": [term for part in parts for term in part.speed_terms],
            "pass_steps": [step for part in parts for step in part.pass_steps],
            "queue_rank": ranks[0] if ranks else None,
            "processes": [process for part in parts for process in part.processes],
            "wrap_placement": wrappers[0] if wrappers else None}


@dataclass(frozen=True)
class Ended:
    """How a simulation of a run ended: what the contributions' result hooks read."""

    run: ResolvedRun
    outcome: RunOutcome
    jobs: list[Job]  # every job of the run, in trace order
    done: list[Job]  # finished
    left: list[Job]  # submitted and not finished (a horizon, or given up on), declined ones not included
    reported: list[Job]  # the jobs of jobs.csv: done, left and declined

    @property
    def end(self) -> float:
        """The clock when the run stopped."""
        return self.outcome.end

    @property
    def gpus(self) -> int:
        """The run's GPUs: its VCs' and its policy's own partitions'."""
        return sum(self.outcome.vc_gpus.values()) + sum(self.outcome.partition_gpus.values())
