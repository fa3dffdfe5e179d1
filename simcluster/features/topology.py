"""Clusters with a topology: racks, NVLink domains and switch blocks above the nodes (docs/topology.md); in play
where a run is given ``--topology``.

As the run is resolved, the topology file is read and matched to the cluster's nodes (by their names, else by
order) and ``--topology-slowdown`` turned into each level's cost: the cluster carries both
(:class:`~simcluster.topology.costs.ClusterTopology`), so that the engine knows each node's domains and slows a
job by the levels it spans.  While the run goes, each job's highest spanned level is recorded at each start
with the GPU-time it held there; ``jobs.csv`` gets ``spanned_level``, ``summary.json`` a ``topology`` record: the
file, its levels and costs, how its rows matched, and the share of started jobs and of GPU-time that spanned
each level.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from simcluster.engine.speed import spanned_level
from simcluster.features.base import Contribution, Ended, Feature
from simcluster.metrics.observer import Observer
from simcluster.settings.fields import ConfigError
from simcluster.settings.topology import TopologyOptions
from simcluster.topology import NODE, kueue_topology_levels, read_topology
from simcluster.topology.costs import ClusterTopology, slowdown_costs
from simcluster.topology.request import TopologyRequest, pod_gpus

if TYPE_CHECKING:
    from simcluster.cluster_spec import ClusterSpec
    from simcluster.config import SimConfig
    from simcluster.job import Job
    from simcluster.run.resolved import ResolvedRun
    from simcluster.traces.base import Trace


class ClusterTopologyFeature(Feature):
    name = "topology"
    settings = TopologyOptions

    def cluster(self, spec: ClusterSpec, config: SimConfig, trace: Trace | None) -> ClusterSpec:
        if not config.topology:
            return spec
        topology = read_topology(config.topology, label_keys=label_keys(config.topology_levels))
        matched, note = topology.for_cluster(spec.node_names)
        costs = list(slowdown_costs(config.topology_slowdown, matched))
        if config.spread_penalty:  # today's node-level cost, spelt either way but not both
            if costs[-1]:
                raise ConfigError("give the cost of spanning nodes once: --spread-penalty or --topology-slowdown "
                                  "node=X, not both")
            costs[-1] = config.spread_penalty
        return replace(spec, topology=ClusterTopology(matched, tuple(costs), note))

    def in_play(self, run: ResolvedRun) -> bool:
        return run.cluster.topology is not None

    def plan(self, run: ResolvedRun) -> TopologyRequest | None:
        """The request of every job (``--topology-request``), checked against the topology's levels and the
        placement: one that does not read topology requests refuses them rather than ignore them."""
        text = run.config.topology_request
        if not text:
            return None
        assert run.cluster.topology is not None  # (in play)
        request = TopologyRequest.parse(text, run.cluster.topology.topology.levels)
        if not getattr(run.placement.cls, "topology_aware", False) or run.policy.cls.own_placement:
            raise ConfigError(f"--topology-request {text}: placement {run.placement_name} does not read topology "
                              "requests; choose a topology-aware one (tas-best-fit, tas-least-free, tas-balanced, "
                              "kueue-tas)")
        return request

    def start(self, plan: TopologyRequest | None, jobs: list[Job], run: ResolvedRun) -> Contribution:
        assert run.cluster.topology is not None  # (in play)
        if plan is not None and plan.mode == "required":
            check_required_fits(jobs, plan, run.cluster)
        for job in jobs:
            job.topology = plan
        return TopologyResults(run.cluster.topology)


def check_required_fits(jobs: list[Job], request: TopologyRequest, spec: ClusterSpec) -> None:
    """A job that no domain of its required level could ever hold (in pods of its size) would wait forever: an
    error before the run, naming the job and the largest domain."""
    assert spec.topology is not None
    topology = spec.topology.topology
    gpus = np.array([g.gpus_per_node for g in spec.groups for _ in range(g.nodes)], dtype=np.int64)
    per_node = max(g.gpus_per_node for g in spec.groups)
    rows = np.array([topology.node_index(name) for name in spec.node_names])  # (the cluster's nodes, its order)
    domains = topology.domain_array(request.level)[rows]
    most: dict[int, tuple[int, int]] = {}  # pod size → (GPUs the roomiest domain holds in such pods, that domain)
    for job in sorted(jobs, key=lambda j: -j.gpu_num):
        pod = pod_gpus(job.gpu_num, per_node)
        if pod not in most:
            held = np.bincount(domains, weights=(gpus // pod) * pod)
            most[pod] = (int(held.max()), int(held.argmax()))
        room, domain = most[pod]
        if job.gpu_num > room:
            name = topology.domains(request.level)[domain]
            raise ConfigError(f"job {job.job_id} ({job.gpu_num} GPUs, pods of {pod}) can never lie within one "
                              f"{request.level} (--topology-request required:{request.level}): the largest, "
                              f"{name}, holds {room} GPUs in such pods")


def label_keys(levels: str | None) -> list[str] | None:
    """``--topology-levels``: a Kueue Topology YAML's levels, or label keys given top-down, comma-separated."""
    if not levels:
        return None
    if levels.strip().lower().endswith((".yaml", ".yml")) or Path(levels).is_file():
        return kueue_topology_levels(levels)
    return [key.strip() for key in levels.split(",") if key.strip()]


class Spans(Observer):
    """Each job's highest spanned level at each start, as an index top-down (:func:`spanned_level`: the node level
    when its nodes share every domain; one past it on one node), and the GPU-seconds held at each."""

    def __init__(self, levels: int) -> None:
        self.one_node = levels + 1  # (the named levels, then the node level, then "on one node")
        self.highest: dict[Job, int] = {}  # the highest level any of its runs spanned
        self.gpu_seconds = [0.0] * (levels + 2)  # by the level spanned while held
        self._since: dict[Job, tuple[float, int]] = {}

    def on_start(self, job: Job, now: float) -> None:
        several = len({id(node) for node, _ in job.allocation}) > 1
        level = spanned_level(job) if several else self.one_node
        self.highest[job] = min(self.highest.get(job, level), level)
        self._since[job] = (now, level)

    def _stop(self, job: Job, now: float) -> None:
        since = self._since.pop(job, None)
        if since is not None:
            self.gpu_seconds[since[1]] += (now - since[0]) * job.gpu_num

    on_preempt = on_restart = on_finish = on_move = _stop

    def on_resize(self, job: Job, now: float) -> None:  # (an elastic job's nodes changed: a new span)
        self._stop(job, now)
        self.on_start(job, now)

    def close(self, now: float) -> None:
        """Count the runs still going at the run's end."""
        for job in list(self._since):
            self._stop(job, now)


class TopologyResults(Contribution):
    def __init__(self, topology: ClusterTopology) -> None:
        self.topology = topology
        self.spans = Spans(len(topology.topology.levels))
        self.observers = [self.spans]

    def columns(self, ended: Ended, jobs: pd.DataFrame) -> pd.DataFrame:
        names, spans = self.topology.topology.all_levels, self.spans
        rows = sorted(ended.reported, key=lambda j: j.index)
        jobs["spanned_level"] = [names[k] if (k := spans.highest.get(j, spans.one_node)) < spans.one_node else ""
                                 for j in rows]
        return jobs

    def figures(self, ended: Ended, jobs: pd.DataFrame) -> dict[str, Any]:
        spans, model = self.spans, self.topology.topology
        spans.close(ended.end)
        levels = model.all_levels
        started, held = len(spans.highest), sum(spans.gpu_seconds)
        return {"topology": {
            "source": model.source, "levels": list(levels), "nodes": model.node_count,
            "domains": {level: len(model.domains(level)) for level in model.levels}, "matched": self.topology.note,
            "slowdown": dict(zip(levels, self.topology.costs, strict=True)),
            "jobs_spanning": {level: (sum(1 for k in spans.highest.values() if k <= i) / started if started else 0.0)
                              for i, level in enumerate(levels)},
            "gpu_time_spanning": {level: (sum(spans.gpu_seconds[: i + 1]) / held if held else 0.0)
                                  for i, level in enumerate(levels)},
        }}


__all__ = ["NODE", "ClusterTopologyFeature", "label_keys"]
