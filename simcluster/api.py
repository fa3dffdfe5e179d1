"""One call from a loaded trace to results: what the CLI, sweeps and tests use."""

from __future__ import annotations

import gc
import time
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

import pandas as pd

from simcluster.colocation.loader import ColocationModel
from simcluster.config import SimConfig
from simcluster.engine import Simulation
from simcluster.metrics import ClusterTimeline, FinishedJobs, Observer
from simcluster.metrics.summary import jobs_frame, summarize
from simcluster.traces import Trace


@dataclass
class RunResult:
    jobs: pd.DataFrame
    timeline: pd.DataFrame
    summary: dict[str, Any]

    def tables(self) -> dict[str, pd.DataFrame]:
        return {"jobs": self.jobs, "timeline": self.timeline}


def simulate(trace: Trace, config: SimConfig | None = None, observers: Iterable[Observer] = (),
             colocation: ColocationModel | None = None) -> RunResult:
    """Replay ``trace`` under ``config``.

    >>> from simcluster.traces.synth import SynthSpec, synthesize
    >>> result = simulate(synthesize(SynthSpec(jobs=50, nodes=4, vcs=2, seed=1)), SimConfig(policy="sjf"))
    >>> result.summary["jobs"], result.summary["policy"]
    (50, 'sjf')
    """
    config = config or SimConfig()
    from simcluster.hetero.run import simulate_hetero, wants_rounds  # heterogeneous clusters

    if wants_rounds(trace, config):
        return RunResult(*simulate_hetero(trace, config, observers))
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

    frame = jobs_frame(finished.jobs)
    series = pd.DataFrame(
        {"time": timeline.time, "busy_gpus": timeline.used_gpus, "shared_gpus": timeline.shared_gpus,
         "running_jobs": timeline.running, "pending_jobs": timeline.pending}
    )
    partitions = sim.policy.partitions()
    vc_gpus = {name: vc.total_gpus for name, vc in sim.cluster.vcs.items() if name not in partitions}
    partition_gpus = sum(vc.total_gpus for name, vc in sim.cluster.vcs.items() if name in partitions)
    end = float(frame["end_time"].max()) if len(frame) else sim.env.now
    vc_sharing = {name: vc.sharing_seconds(end) for name, vc in sim.cluster.vcs.items()}
    sharing = {}
    if sim.colocation is not None:
        sharing = {"colocation": sim.colocation.source, "colocation_fallbacks": sim.colocation.fallback_counts()}
    summary = summarize(
        frame, vc_gpus, vc_sharing, partition_gpus,
        policy=config.policy, placement=config.placement, trace=trace.source,
        trace_format=getattr(trace, "format", "venus"), trace_sizing=getattr(trace, "sizing", ""), seed=config.seed,
        gpus=sum(vc_gpus.values()) + partition_gpus, node_failures=finished.node_failures,
        sim_cpu_seconds=sim_cpu, load_cpu_seconds=trace.load_cpu_seconds,
        skipped_rows=dict(trace.skipped), config=config.as_dict(), **sim.policy.report(), **sharing,
    )
    return RunResult(frame, series, summary)


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
