"""Clusters with a topology: racks, NVLink domains and switch blocks above the nodes (docs/topology.md); in play
where a run is given ``--topology``.

As the run is resolved, the topology file is read and matched to the cluster's nodes (by their names, else by
order) and ``--topology-slowdown`` turned into each level's cost: the cluster carries both
(:class:`~simcluster.topology.costs.ClusterTopology`), so that the engine knows each node's domains and slows a
job by the levels it spans.  While the run goes, each job's highest spanned level is recorded at each start
with the GPU-time it held there; ``jobs.csv`` gets ``spanned_level``, ``summary.json`` a ``topology`` record: the
file, its levels and costs, how its rows matched, the share of started jobs and of GPU-time that spanned
each level, the GPUs stranded per level and the jobs that fit the free GPUs but waited
(:mod:`simcluster.topology.occupancy`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from simcluster.engine.speed import spanned_level
from simcluster.features.base import Contribution, Ended, Feature
from simcluster.metrics.observer import RunObserver
from simcluster.placement import PLACEMENTS
from simcluster.settings.fields import ConfigError
from simcluster.settings.topology import TopologyOptions
from simcluster.topology import NODE, kueue_topology_levels, read_topology
from simcluster.topology.costs import ClusterTopology, slowdown_costs
from simcluster.topology.occupancy import TopologyOccupancy
from simcluster.topology.request import TopologyRequest
from simcluster.traces.base import row_error
from simcluster.traces.requests import REQUEST_COLUMNS

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
        sized = ""
        if not spec.groups:  # a job log without VCs and no size given: the topology's nodes are the cluster
            spec, sized = sized_by_topology(topology.node_count, config, trace)
        matched, note = topology.for_cluster(spec.node_names)
        note += sized
        costs = list(slowdown_costs(config.topology_slowdown, matched))
        if config.spread_penalty:  # today's node-level cost, spelt either way but not both
            if costs[-1]:
                raise ConfigError("give the cost of spanning nodes once: --spread-penalty or --topology-slowdown "
                                  "node=X, not both")
            costs[-1] = config.spread_penalty
        return replace(spec, topology=ClusterTopology(matched, tuple(costs), note))

    def in_play(self, run: ResolvedRun) -> bool:
        return run.cluster.topology is not None

    def plan(self, run: ResolvedRun) -> Requests:
        """Each job's request: its trace's (``pod_gpus``, ``topology_required``, ``topology_preferred``), else
        ``--topology-request``, checked against the topology's levels and the placement: one that does not read
        topology requests refuses them rather than ignore them."""
        assert run.cluster.topology is not None  # (in play)
        levels = run.cluster.topology.topology.levels
        text = run.config.topology_request
        requests = Requests(TopologyRequest.parse(text, levels) if text else None,
                            trace_requests(run.trace, levels) if run.trace is not None else None)
        if requests.any() and (not getattr(run.placement.cls, "topology_aware", False)
                               or run.policy.cls.own_placement):
            given = f"--topology-request {text}" if text else "the trace's topology requests"
            aware = ", ".join(name for name in PLACEMENTS.names()
                              if getattr(PLACEMENTS.get(name), "topology_aware", False))
            raise ConfigError(f"{given}: placement {run.placement_name} does not read topology requests; choose a "
                              f"topology-aware one ({aware})")
        return requests

    def start(self, plan: Requests, jobs: list[Job], run: ResolvedRun) -> Contribution:
        assert run.cluster.topology is not None  # (in play)
        for job in jobs:
            job.topology = plan.of(job)
        check_required_fits([job for job in jobs if job.topology is not None and job.topology.mode == "required"],
                            run.cluster)
        check_slices([job for job in jobs if job.topology is not None and job.topology.slice_size], run.cluster)
        return TopologyResults(run.cluster.topology, TopologyOccupancy.of(run.cluster))


@dataclass(frozen=True, eq=False)
class Requests:
    """Every job's topology request: ``by_row[i]`` for the job of trace row ``i`` where its trace gives one, else
    ``default`` (``--topology-request``)."""

    default: TopologyRequest | None
    by_row: tuple[TopologyRequest | None, ...] | None = None

    def of(self, job: Job) -> TopologyRequest | None:
        own = self.by_row[job.index] if self.by_row is not None else None
        if own is None or self.default is None or own.mode:
            return own if own is not None else self.default
        return replace(own, mode=self.default.mode, level=self.default.level)  # (its pods or slices, the level)

    def any(self) -> bool:
        return self.default is not None or (self.by_row is not None and any(r is not None for r in self.by_row))


def trace_requests(trace: Trace, levels: Sequence[str]) -> tuple[TopologyRequest | None, ...] | None:
    """The requests of a trace's rows (None where a row gives none), or None for a trace without the columns; a
    level the topology lacks, or a slice level above the requested one, is an error naming the job and its line."""
    frame = trace.frame
    if not any(c in frame for c in REQUEST_COLUMNS):
        return None
    n = len(frame)
    pods = frame["pod_gpus"].to_numpy() if "pod_gpus" in frame else np.zeros(n, dtype=np.int64)
    sizes = frame["slice_size"].to_numpy() if "slice_size" in frame else np.zeros(n, dtype=np.int64)
    blank = [""] * n
    required, preferred, sliced = (frame[c].tolist() if c in frame else blank
                                   for c in ("topology_required", "topology_preferred", "slice_topology"))
    known: dict[tuple[str, str, int, str, int], TopologyRequest | None] = {}
    out: list[TopologyRequest | None] = []
    order = (*levels, NODE)
    for row, key in enumerate(zip(required, preferred, pods.tolist(), sliced, sizes.tolist(), strict=True)):
        if key not in known:
            must, may, pod, slice_level, slice_size = key
            mode, level = ("required", must) if must else ("preferred", may) if may else ("", "")

            for field, name in ((f"topology_{mode}", level), ("slice_topology", slice_level)):
                if name and name not in order:
                    raise row_error(trace, row, field,
                                    f"no level {name!r} in the topology (its levels: {', '.join(order)})")
            if slice_level and level and order.index(slice_level) < order.index(level):
                raise row_error(trace, row, "slice_topology", f"slices of level {slice_level!r} cannot lie inside one "
                                f"{level}: a slice's level is the requested level or one below it")
            known[key] = (TopologyRequest(mode, level, int(pod), slice_level, int(slice_size))
                          if (mode or pod or slice_size) else None)
        out.append(known[key])
    return tuple(out)


def check_required_fits(jobs: list[Job], spec: ClusterSpec) -> None:
    """A job that no domain of its required level could ever hold (in pods of its size) would wait forever: an
    error before the run, naming the job and the largest domain."""
    assert spec.topology is not None
    topology = spec.topology.topology
    gpus = np.fromiter(spec.node_gpus.values(), dtype=np.int64)  # (the topology's node i is the cluster's)
    per_node = int(gpus.max())
    most: dict[tuple[str, int], tuple[int, int]] = {}  # (level, pod) → (the roomiest domain's GPUs, that domain)
    for job in sorted(jobs, key=lambda j: -j.gpu_num):
        request = job.topology
        assert request is not None
        pod = request.pod_size(job.gpu_num, per_node)
        if (request.level, pod) not in most:
            held = np.bincount(topology.domain_array(request.level), weights=(gpus // pod) * pod)
            most[request.level, pod] = (int(held.max()), int(held.argmax()))
        room, domain = most[request.level, pod]
        if job.gpu_num > room:
            name = topology.domains(request.level)[domain]
            raise ConfigError(f"job {job.job_id} ({job.gpu_num} GPUs, pods of {pod}) can never lie within one "
                              f"{request.level} (required): the largest, {name}, holds {room} GPUs in such pods")


def check_slices(jobs: list[Job], spec: ClusterSpec) -> None:
    """A job's slices must split its pods evenly (Kueue refuses such a PodSet): an error before the run, naming
    the job."""
    per_node = max(spec.node_gpus.values(), default=1)
    for job in jobs:
        request = job.topology
        assert request is not None
        pod = request.pod_size(job.gpu_num, per_node)
        if (job.gpu_num // pod) % request.slice_size:
            raise ConfigError(f"job {job.job_id}: slices of {request.slice_size} pods cannot split its "
                              f"{job.gpu_num // pod} pods of {pod} GPUs; give a slice_size that divides them")


def label_keys(levels: str | None) -> list[str] | None:
    """``--topology-levels``: a Kueue Topology YAML's levels, or label keys given top-down, comma-separated."""
    if not levels:
        return None
    if levels.strip().lower().endswith((".yaml", ".yml")) or Path(levels).is_file():
        return kueue_topology_levels(levels)
    return [key.strip() for key in levels.split(",") if key.strip()]


class Spans(RunObserver):
    """Each job's highest spanned level at each start, as an index top-down (:func:`spanned_level`: the node level
    when its nodes share every domain; one past it on one node), and the GPU-seconds held at each."""

    def __init__(self, levels: int) -> None:
        self.one_node = levels + 1  # (the named levels, then the node level, then "on one node")
        self.highest: dict[Job, int] = {}  # the highest level any of its runs spanned
        self.gpu_seconds = [0.0] * (levels + 2)  # by the level spanned while held
        self._since: dict[Job, tuple[float, int]] = {}

    def begin(self, job: Job, now: float) -> None:
        several = len({id(node) for node, _ in job.allocation}) > 1
        level = spanned_level(job) if several else self.one_node
        self.highest[job] = min(self.highest.get(job, level), level)
        self._since[job] = (now, level)

    def end(self, job: Job, now: float) -> None:
        since = self._since.pop(job, None)
        if since is not None:
            self.gpu_seconds[since[1]] += (now - since[0]) * job.gpu_num

    def close(self, now: float) -> None:
        """Count the runs still going at the run's end."""
        for job in list(self._since):
            self.end(job, now)


class TopologyResults(Contribution):
    def __init__(self, topology: ClusterTopology, occupancy: TopologyOccupancy) -> None:
        self.topology = topology
        self.spans = Spans(len(topology.topology.levels))
        self.occupancy = occupancy  # GPUs stranded per level, jobs that fit the free GPUs but waited
        self.observers = [self.spans, occupancy]

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
            **self.occupancy.figures(ended.end),
        }}


def sized_by_topology(nodes: int, config: SimConfig, trace: Trace | None) -> tuple[ClusterSpec, str]:
    """One VC of the topology file's ``nodes`` nodes, for a job log loaded without a size (``lucid-sim run
    --topology`` without ``--nodes``, ``--cluster`` or ``--load``); a job larger than that cluster is refused."""
    from simcluster.cluster_spec import ONE_VC, ClusterSpec

    gpus = nodes * config.gpus_per_node
    if trace is not None and len(trace.frame):
        sizes = trace.frame["gpu_num"].to_numpy()
        row = int(np.argmax(sizes))
        if sizes[row] > gpus:
            raise row_error(trace, row, "gpu_num", f"job asks for {int(sizes[row]):,} GPUs but the topology's cluster "
                            f"has {gpus:,} ({nodes:,} nodes × {config.gpus_per_node} GPUs)")
    vc = str(trace.frame["vc"].iloc[0]) if trace is not None and len(trace.frame) else ONE_VC
    return (ClusterSpec.uniform({vc: nodes}, config.gpus_per_node, "the topology file"),
            f"; the cluster is its {nodes:,} nodes × {config.gpus_per_node} GPUs (the job log has no VCs and no size)")


__all__ = ["NODE", "ClusterTopologyFeature", "label_keys"]
