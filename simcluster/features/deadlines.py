"""Deadlines: each job's deadline (the trace's own, or drawn by ``--deadlines``), whether it was met, and the jobs a
policy declined (admission control).

Every run takes part: a run without deadlines adds nothing, unless its policy declined jobs, which ``jobs.csv``
then marks.  ``summary.json`` gets ``deadline_satisfaction`` and its companions
(:func:`~simcluster.metrics.elastic.deadline_figures`), judged by a policy's own judged ends where it gives them
(:meth:`~simcluster.policies.base.Policy.judged_ends`).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import pandas as pd

from simcluster.features.base import Contribution, Ended, Feature
from simcluster.metrics.elastic import deadline_column, deadline_figures, judged_column
from simcluster.settings.deadlines import DeadlineOptions
from simcluster.traces.deadlines import job_deadlines

if TYPE_CHECKING:
    import numpy as np

    from simcluster.job import Job
    from simcluster.run.resolved import ResolvedRun


class Deadlines(Feature):
    name = "deadlines"
    settings = DeadlineOptions

    def plan(self, run: ResolvedRun) -> np.ndarray | None:
        """Each job's deadline by trace index (NaN: none), or None for a trace without any and no ``--deadlines``."""
        if run.trace is None:
            return None
        return job_deadlines(run.trace.frame, run.config.deadlines, run.config.seed)

    def start(self, plan: np.ndarray | None, jobs: list[Job], run: ResolvedRun) -> Contribution:
        if plan is not None:
            for job in jobs:
                value = plan[job.index]
                job.deadline = None if math.isnan(value) else float(value)
        return DeadlineResults(given=plan is not None)


class DeadlineResults(Contribution):
    def __init__(self, given: bool) -> None:
        self.given = given
        self.shown = False

    def columns(self, ended: Ended, jobs: pd.DataFrame) -> pd.DataFrame:
        declined = ended.outcome.declined
        if not (self.given or declined):
            return jobs
        self.shown = True
        jobs["deadline"], jobs["declined"] = deadline_column(ended.reported, declined)
        if ended.outcome.judged_ends:  # (a policy judging some deadlines by another time than the job's end)
            jobs["judged_end"] = judged_column(jobs, ended.outcome.judged_ends)
        return jobs

    def figures(self, ended: Ended, jobs: pd.DataFrame) -> dict[str, Any]:
        return deadline_figures(jobs) if self.shown else {}
