"""Fragmentation of shared GPUs (FGD's measure, docs/fragmentation.md): in play where jobs ask for GPU fractions.

While the run goes, the GPUs that no typical job could use are sampled with the timeline (``timeline.csv``'s
``frag_gpus`` and ``frag_pct_of_idle``); ``summary.json`` gets their summary under ``fragmentation``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pandas as pd

from simcluster.features.base import Contribution, Ended, Feature
from simcluster.metrics.fragmentation import FragmentationTimeline
from simcluster.metrics.observer import numbers

if TYPE_CHECKING:
    from simcluster.job import Job
    from simcluster.run.resolved import ResolvedRun


class Fragmentation(Feature):
    name = "fragmentation"

    def in_play(self, run: ResolvedRun) -> bool:
        if run.trace is None:  # jobs made by hand: told when they are (start)
            return True
        frame = run.trace.frame
        return "gpu_milli" in frame and bool((frame["gpu_milli"] < 1000).any())

    def start(self, plan: Any, jobs: list[Job], run: ResolvedRun) -> Contribution:
        if not any(job.gpu_milli < 1000 for job in jobs):
            return Contribution()
        return FragmentationResults(FragmentationTimeline(jobs, run.cluster))


class FragmentationResults(Contribution):
    def __init__(self, timeline: FragmentationTimeline) -> None:
        self.sampled = timeline
        self.observers = [timeline]

    def timeline(self, ended: Ended, timeline: pd.DataFrame) -> pd.DataFrame:
        timeline["frag_gpus"] = numbers(self.sampled.frag_gpus)  # (sampled with the timeline: one value per row)
        timeline["frag_pct_of_idle"] = numbers(self.sampled.frag_pct_of_idle)
        return timeline

    def figures(self, ended: Ended, jobs: pd.DataFrame) -> dict[str, Any]:
        return {"fragmentation": self.sampled.summary(ended.end)}
