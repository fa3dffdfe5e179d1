"""Reliability: failures by model, what they cost jobs (checkpoints, restarts, lost work), hot spares and excluded
servers (docs/failures.md); in play where a reliability option is given (``--faults``, ``--checkpoint-cost``,
``--restart-cost``, ``--spare-nodes``, ``--exclude-after``, ``--checkpoint-interval young-daly``), a failure model
comes with the run, or ``--node-mtbf`` is given on a cluster with a topology (whose failed nodes may be replaced from
their jobs' domains: ``failures`` counts them).

The engine replays the run's failure model (:mod:`simcluster.engine.reliability`); this feature records where
the GPU time went (:class:`~simcluster.metrics.reliability.CauseTimeline`), adds each job's ETTR and costs to
``jobs.csv`` and the run's ETTR, interruptions and GPU time by cause to ``summary.json``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pandas as pd

from simcluster.faults.spec import LogReading, fleet_doubt
from simcluster.features.base import Contribution, Ended, Feature
from simcluster.metrics.observer import Observer
from simcluster.metrics.reliability import CauseTimeline, job_columns, run_figures
from simcluster.settings.reliability import ReliabilityOptions

if TYPE_CHECKING:
    from simcluster.job import Job
    from simcluster.run.resolved import ResolvedRun


class Reliability(Feature):
    name = "reliability"
    settings = ReliabilityOptions

    def in_play(self, run: ResolvedRun) -> bool:
        return run.reliability

    def start(self, plan: Any, jobs: list[Job], run: ResolvedRun) -> Contribution:
        gpus_per_node = run.config.gpus_per_node
        doubt = fleet_doubt(run.fault_model, LogReading.of(run.config), len(run.cluster.node_gpus))
        # (--node-mtbf's own node processes fail nodes without the engine's replay: their faults counted here)
        downs = NodeDowns() if run.fault_model is None else None
        return ReliabilityResults(CauseTimeline(run.cluster.node_gpus, gpus_per_node), [doubt] if doubt else [],
                                  downs)


class NodeDowns(Observer):
    """Counts the nodes taken down: the faults of ``--node-mtbf``'s node processes, which fail nodes without the
    engine's replay of a model (whose own count summary.json's ``failures.faults`` gives otherwise).

    >>> downs = NodeDowns()
    >>> downs.on_node_down("a/n0", 5.0); downs.count
    1
    """

    def __init__(self) -> None:
        self.count = 0

    def on_node_down(self, node_name: str, now: float) -> None:
        self.count += 1


class ReliabilityResults(Contribution):
    def __init__(self, causes: CauseTimeline, doubts: list[str], downs: NodeDowns | None = None) -> None:
        self.causes = causes
        self.downs = downs
        self.observers = [causes] if downs is None else [causes, downs]
        self.doubts = doubts

    def warnings(self, ended: Ended) -> list[str]:
        return self.doubts

    def columns(self, ended: Ended, jobs: pd.DataFrame) -> pd.DataFrame:
        record = ended.outcome.reliability
        return jobs if record is None else job_columns(jobs, ended.reported, record, ended.end)

    def run_figures(self, ended: Ended, jobs: pd.DataFrame, summary: dict[str, Any]) -> dict[str, Any]:
        record = ended.outcome.reliability
        if record is None:
            return {}
        gpus, makespan = int(summary["gpus"]), float(summary["makespan"])
        figures = run_figures(jobs, record, self.causes.total(ended.end), gpus, makespan)
        if self.downs is not None:  # (else an interruption with no fault: the failures were not counted)
            figures["failures"] = {**figures["failures"], "faults": self.downs.count}
        first = float(jobs["submit_time"].min()) if len(jobs) else 0.0
        over_time = self.causes.series(jobs, ended.reported, gpus, first, first + makespan)
        if over_time is not None:
            figures["gpu_time_by_cause_over_time"] = over_time
        return figures
