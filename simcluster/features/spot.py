"""Spot nodes (docs/tiers.md, "Spot nodes"): capacity the provider lends and takes back, as Alibaba's and Kueue's
clusters run preemptible work on it.

``--spot-nodes K`` (or ``25%``) makes the last K nodes of each VC spot; only preemptible jobs (a trace column
``preemptible``) run there, spot nodes first, unless ``--spot-jobs any`` lets guaranteed ones on them too.
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
from simcluster.settings.spot import SpotOptions, has_spot_nodes, spot_nodes_of
from simcluster.traces.base import row_error

if TYPE_CHECKING:
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
        return has_spot_nodes(run.config)

    def plan(self, run: ResolvedRun) -> SpotPlan:
        """The spot nodes per VC, the reclaims' model, and who may run on spot nodes, checked against the run."""
        options = spot_options(run.config)
        _refuse_what_is_not_modelled(run)
        counts = spot_counts(run.cluster, options.spot_nodes)
        anywhere = options.spot_jobs == "any"
        if not anywhere:
            _check_guaranteed_jobs_fit(run, counts)
        return SpotPlan(counts, reclaims_model(options.spot_reclaims, run.config.seed), anywhere)

    def start(self, plan: SpotPlan, jobs: list[Job], run: ResolvedRun) -> Contribution:
        config = run.config
        horizon = config.until if config.until > 0 else MAX_HORIZON_S
        start = float(min((job.submit_time for job in jobs), default=0.0))
        capacity = SpotCapacity(plan.counts, plan.model, float(config.eviction_cost), plan.guaranteed_anywhere,
                                horizon, int(config.seed) ^ RECLAIM_SEED, start)
        return SpotResults(capacity, run)


@dataclass(frozen=True, eq=False)
class SpotPlan:
    """Spot nodes per VC (its last ones), what reclaims them (None: nothing), whether guaranteed jobs may use them."""

    counts: dict[str, int]
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
    """Spot nodes with what does not place through the run's placement on single-type VCs, or takes nodes down
    itself, are refused in words."""
    policy, config, cluster = run.policy.cls, run.config, run.cluster
    name = run.policy.label.removeprefix("policy ")
    why = (f"policy {name} resizes its jobs while they run" if getattr(policy, "elastic", False) else
           f"policy {name} places its jobs itself" if getattr(policy, "own_placement", None) else
           f"policy {name} shares GPUs" if getattr(policy, "shares_gpus", False) else
           f"the cluster has several GPU types ({', '.join(cluster.gpu_types)})" if cluster.typed else
           "the cluster has a topology" if cluster.topology is not None else
           "nodes fail too (--faults or --node-mtbf: a node both failed and reclaimed)"
           if config.faults or config.node_mtbf > 0 else
           "the trace's jobs take fractions of GPUs" if _fractional(run) else None)
    if why is not None:
        raise ConfigError(f"--spot-nodes: {why}; spot nodes are modelled with whole-GPU jobs placed by the run's "
                          "placement on VCs of one GPU type, without node failures")


def _fractional(run: ResolvedRun) -> bool:
    frame = run.trace.frame if run.trace is not None else None
    return frame is not None and "gpu_milli" in frame and bool((frame["gpu_milli"] < 1000).any())


def _check_guaranteed_jobs_fit(run: ResolvedRun, counts: dict[str, int]) -> None:
    """A guaranteed job larger than its VC's nodes off spot could never run (and the reclaims would go on for ever):
    refused, naming the trace's row."""
    trace = run.trace
    if trace is None:
        return
    frame = trace.frame
    on_demand = {vc: _gpus_of_first(run.cluster, vc, run.cluster.vc_nodes[vc] - count) for vc, count in counts.items()}
    guaranteed = ~frame["preemptible"].to_numpy(bool) if "preemptible" in frame else np.ones(len(frame), bool)
    room = frame["vc"].map(on_demand).fillna(np.inf).to_numpy(float) if "vc" in frame else np.full(len(frame), np.inf)
    too_big = np.flatnonzero(guaranteed & (frame["gpu_num"].to_numpy(float) > room))
    if len(too_big):
        row = int(too_big[0])
        vc = frame["vc"].iloc[row]
        raise row_error(trace, row, "gpu_num", f"a guaranteed job of {int(frame['gpu_num'].iloc[row])} GPUs, more than "
                        f"VC {vc!r} has off its spot nodes ({int(room[row])}): only preemptible jobs run on spot nodes "
                        "(give fewer --spot-nodes, or --spot-jobs any)")


def _gpus_of_first(spec: ClusterSpec, vc: str, nodes: int) -> int:
    """The GPUs of the first ``nodes`` nodes of ``vc`` (in the order the cluster builds them)."""
    total = 0
    for _, count, per_node, _ in spec.groups_of(vc):
        take = min(count, nodes)
        total += take * per_node
        nodes -= take
    return total


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

