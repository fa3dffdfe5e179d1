"""Spot nodes (docs/tiers.md, "Spot nodes"): capacity the provider lends and takes back, as Alibaba's and Kueue's
clusters run preemptible work on it.

``--spot-nodes K`` (or ``25%``) makes the last K nodes of each VC spot, or a ``spot`` column of the VC config or
node list names them (:meth:`~simcluster.cluster_spec.ClusterSpec.spot_positions`); only preemptible jobs (a trace
column ``preemptible``) run there, spot nodes first, unless ``--spot-jobs any`` lets guaranteed ones on them too.
``--spot-reclaims`` says what takes them back (the fault model's machinery: ``mtbf=1d,repair=1h`` per spot node, or
a replayed availability log); a reclaim evicts the node's jobs, which lose their work since their last checkpoint,
owe ``--eviction-cost`` and wait again.  The engine's side is :mod:`simcluster.engine.spot`; this feature checks
the options against the run, and adds each job's evictions by reclaims to ``jobs.csv`` and the spot figures to
``summary.json`` (``spot``).

>>> from simcluster.cluster_spec import ClusterSpec
>>> spot_counts(ClusterSpec.uniform({"a": 4, "b": 2}), "50%")
{'a': 2, 'b': 1}
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from simcluster.engine.spot import SpotCapacity
from simcluster.errors import TraceError
from simcluster.faults.models import MAX_HORIZON_S
from simcluster.features.base import Contribution, Ended, Feature
from simcluster.limits import LimitError
from simcluster.settings.fields import ConfigError
from simcluster.settings.spot import SpotOptions, has_spot_nodes, spot_count, spot_nodes_of
from simcluster.traces.base import row_error

if TYPE_CHECKING:
    from collections.abc import Iterable

    import pandas as pd

    from simcluster.cluster_spec import ClusterSpec
    from simcluster.faults.models import FailureModel
    from simcluster.job import Job
    from simcluster.run.resolved import ResolvedRun

RECLAIM_SEED = 0x5B07  # the reclaims' own random stream, apart from a failure model's on the same seed


class Spot(Feature):
    name = "spot"
    settings = SpotOptions

    def in_play(self, run: ResolvedRun) -> bool:
        options = spot_options(run.config)
        return (has_spot_nodes(run.config) or run.cluster.has_spot or bool(options.spot_reclaims)
                or options.spot_jobs != SpotOptions.spot_jobs)

    def plan(self, run: ResolvedRun) -> SpotPlan:
        """The spot nodes per VC, the reclaims' model, and who may run on spot nodes, checked against the run."""
        options = spot_options(run.config)
        positions = spot_nodes_of_run(run.cluster, options)
        _refuse_what_is_not_modelled(run)
        anywhere = options.spot_jobs == "any"
        if not anywhere:
            _check_guaranteed_jobs_fit(run, positions)
        return SpotPlan(positions, reclaims_model(options.spot_reclaims, run.config.seed), anywhere)

    def start(self, plan: SpotPlan, jobs: list[Job], run: ResolvedRun) -> Contribution:
        config = run.config
        horizon = config.until if config.until > 0 else MAX_HORIZON_S
        start = float(min((job.submit_time for job in jobs), default=0.0))
        capacity = SpotCapacity(plan.positions, plan.model, float(config.eviction_cost), plan.guaranteed_anywhere,
                                horizon, int(config.seed) ^ RECLAIM_SEED, start)
        return SpotResults(capacity, run)


@dataclass(frozen=True, eq=False)
class SpotPlan:
    """Spot nodes per VC (their positions there), what reclaims them (None: nothing), whether guaranteed jobs may
    use them."""

    positions: dict[str, list[int]]
    model: FailureModel | None
    guaranteed_anywhere: bool


def spot_options(config: Any) -> SpotOptions:
    """The spot settings of ``config`` (their defaults where it has no such field)."""
    return SpotOptions(**{name: getattr(config, name, getattr(SpotOptions, name, ""))
                          for name in ("spot_nodes", "spot_reclaims", "spot_jobs")})


def spot_counts(spec: ClusterSpec, text: str) -> dict[str, int]:
    """Spot nodes per VC of ``spec`` under ``--spot-nodes`` ``text``; a VC with fewer nodes than asked for is refused
    in words.

    >>> from simcluster.cluster_spec import ClusterSpec
    >>> spot_counts(ClusterSpec.uniform({"a": 2}), "3")
    Traceback (most recent call last):
    ...
    simcluster.settings.fields.ConfigError: --spot-nodes 3: VC 'a' has 2 nodes; give at most 2 (nodes of each VC), or a share of each VC's nodes such as 50%
    """
    counts = {vc: spot_nodes_of(text, nodes) for vc, nodes in spec.vc_nodes.items()}
    over = [vc for vc, count in counts.items() if count > spec.vc_nodes[vc]]
    if over:
        smallest = min(over, key=spec.vc_nodes.__getitem__)
        nodes = spec.vc_nodes[smallest]
        raise ConfigError(f"--spot-nodes {text}: VC {smallest!r} has {nodes} node{'s' if nodes != 1 else ''}; give at "
                          f"most {min(spec.vc_nodes.values())} (nodes of each VC), or a share of each VC's nodes such "
                          "as 50%")
    return counts


def spot_nodes_of_run(spec: ClusterSpec, options: SpotOptions) -> dict[str, list[int]]:
    """The spot nodes per VC, by position: those a spot column of the cluster names, or ``--spot-nodes``'s (each
    VC's last ones).  Both, or spot options without spot nodes, are refused in words.

    >>> from simcluster.cluster_spec import ClusterSpec, NodeGroup
    >>> spot_nodes_of_run(ClusterSpec.uniform({"a": 4}), SpotOptions(spot_nodes="50%"))
    {'a': [2, 3]}
    >>> column = ClusterSpec((NodeGroup("a", "gpu", 4, 8, spot=1),), "vcs.csv")
    >>> spot_nodes_of_run(column, SpotOptions())
    {'a': [3]}
    >>> spot_nodes_of_run(column, SpotOptions(spot_nodes="2"))
    Traceback (most recent call last):
    ...
    simcluster.settings.fields.ConfigError: --spot-nodes 2: vcs.csv names the spot nodes already (its spot column); give one or the other
    """
    column = spec.spot_positions()
    given = spot_count(options.spot_nodes)[0] > 0
    if column and given:
        raise ConfigError(f"--spot-nodes {options.spot_nodes}: {spec.source or 'the cluster'} names the spot nodes "
                          "already (its spot column); give one or the other")
    if column:
        return column
    counts = spot_counts(spec, options.spot_nodes)
    positions = {vc: list(range(spec.vc_nodes[vc] - count, spec.vc_nodes[vc])) for vc, count in counts.items()
                 if count > 0}
    if not positions:
        given_options = [f"--{name.replace('_', '-')}" for name in ("spot_reclaims", "spot_jobs")
                         if getattr(options, name) != getattr(SpotOptions, name)]
        raise ConfigError(f"{' and '.join(given_options) or '--spot-nodes'} appl{'y' if len(given_options) > 1 else 'ies'}"
                          " only to runs with spot nodes: give --spot-nodes K (or a share such as 25%), or a spot "
                          "column in the VC config or node list")
    return positions


def reclaims_model(spec: str, seed: int) -> FailureModel | None:
    """The failure model ``--spot-reclaims`` names (None: none given), read by the fault model's parser; its errors
    name ``--spot-reclaims``.

    >>> reclaims_model("mtbf=1d,repair=1h", 0).classes[0].repair
    Repair.fixed(3600)
    >>> reclaims_model("mtbf=soon", 0)
    Traceback (most recent call last):
    ...
    simcluster.limits.LimitError: --spot-reclaims mtbf must be a time: seconds, or with units largest first (30m, 1h30m, 54d), got 'soon'
    """
    if not spec:
        return None
    from simcluster.faults.spec import failure_model

    try:
        return failure_model(spec, seed=seed)
    except LimitError as exc:
        raise LimitError(str(exc).replace("--faults", "--spot-reclaims")) from None
    except TraceError as exc:
        raise TraceError(exc.path, f"--spot-reclaims: {exc.message}", exc.line, exc.field) from None


def _refuse_what_is_not_modelled(run: ResolvedRun) -> None:
    """Spot nodes with what does not place through the run's placement, or with spare servers for failed nodes,
    are refused in words."""
    policy, config, cluster = run.policy.cls, run.config, run.cluster
    name = run.policy.label.removeprefix("policy ")
    why = (f"policy {name} resizes its jobs while they run" if getattr(policy, "elastic", False) else
           f"policy {name} places its jobs itself" if getattr(policy, "own_placement", None) else
           f"policy {name} shares GPUs" if getattr(policy, "shares_gpus", False) else
           "the cluster has a topology" if cluster.topology is not None else
           "--spare-nodes: a spare server standing in for a spot node is not modelled" if config.spare_nodes else
           "--exclude-after: a spot node's server taken out for good is not modelled" if config.exclude_after else
           "the trace's jobs take fractions of GPUs" if _fractional(run) else None)
    if why is not None:
        raise ConfigError(f"--spot-nodes: {why}; spot nodes are modelled with whole-GPU jobs placed by the run's "
                          "placement, with node failures but without spares, on a cluster without a topology")


def _fractional(run: ResolvedRun) -> bool:
    frame = run.trace.frame if run.trace is not None else None
    return frame is not None and "gpu_milli" in frame and bool((frame["gpu_milli"] < 1000).any())


def _check_guaranteed_jobs_fit(run: ResolvedRun, positions: dict[str, list[int]]) -> None:
    """A guaranteed job larger than its VC's nodes off spot could never run (and the reclaims would go on for ever):
    refused, naming the trace's row."""
    trace = run.trace
    if trace is None:
        return
    frame = trace.frame
    on_demand = {vc: _gpus_off_spot(run.cluster, vc, positions.get(vc, ())) for vc in run.cluster.vcs}
    guaranteed = ~frame["preemptible"].to_numpy(bool) if "preemptible" in frame else np.ones(len(frame), bool)
    room = frame["vc"].map(on_demand).fillna(np.inf).to_numpy(float) if "vc" in frame else np.full(len(frame), np.inf)
    too_big = np.flatnonzero(guaranteed & (frame["gpu_num"].to_numpy(float) > room))
    if len(too_big):
        row = int(too_big[0])
        vc = frame["vc"].iloc[row]
        raise row_error(trace, row, "gpu_num", f"a guaranteed job of {int(frame['gpu_num'].iloc[row])} GPUs, more than "
                        f"VC {vc!r} has off its spot nodes ({int(room[row])}): only preemptible jobs run on spot nodes "
                        "(give fewer --spot-nodes, or --spot-jobs any)")


def _gpus_off_spot(spec: ClusterSpec, vc: str, spot: Iterable[int]) -> int:
    """The GPUs of ``vc``'s nodes but those at positions ``spot`` (in the order the cluster builds them).

    >>> from simcluster.cluster_spec import ClusterSpec
    >>> _gpus_off_spot(ClusterSpec.uniform({"a": 3}), "a", [2])
    16
    """
    per_node = [gpus for name, gpus in spec.node_gpus.items() if name.startswith(f"{vc}/")]
    return sum(per_node) - sum(per_node[i] for i in spot if i < len(per_node))


class SpotResults(Contribution):
    """The engine's side of the spot nodes (:class:`~simcluster.engine.spot.SpotCapacity`), and its results: a
    ``spot_evictions`` column (evictions by reclaims) and the ``spot`` figures."""

    def __init__(self, capacity: SpotCapacity, run: ResolvedRun) -> None:
        self.capacity = capacity
        self.observers = (capacity,)
        self.wrap_placement = capacity.wrap
        self.processes = (capacity.reclaims_process,) if capacity.model is not None else ()
        frame = run.trace.frame if run.trace is not None else None
        self.no_preemptible = frame is None or "preemptible" not in frame or not frame["preemptible"].any()

    def columns(self, ended: Ended, jobs: pd.DataFrame) -> pd.DataFrame:
        evicted = self.capacity.evicted
        jobs["spot_evictions"] = [evicted.get(job, 0) for job in ended.reported]
        return jobs

    def figures(self, ended: Ended, jobs: pd.DataFrame) -> dict[str, Any]:
        return {"spot": self.capacity.figures(float(ended.end))}

    def warnings(self, ended: Ended) -> list[str]:
        if self.capacity.guaranteed_anywhere:
            return []
        if self.no_preemptible:
            return [("--spot-nodes: no job is preemptible (a trace column preemptible), so no job ran on the spot "
                    "nodes; give --spot-jobs any to let guaranteed jobs use them")]
        return []

