"""A run's results as ``lucid-sim run`` writes them: the record :func:`simcluster.api.simulate` returns."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from simcluster.metrics.fairness import users_table


@dataclass
class RunResult:
    """A run's results, as ``lucid-sim run`` writes them: ``jobs``, ``timeline``, ``summary`` and the tables its
    features add (``allocations`` of a run of elastic jobs).

    >>> from simcluster.api import load_trace, simulate
    >>> jobs = pd.DataFrame({"submit_time": [0, 5], "gpu_num": [8, 8], "duration": [60, 30]})
    >>> result = simulate(load_trace(jobs, nodes=1))
    >>> result.jobs["jct"].tolist(), result.summary["makespan"], sorted(result.tables())
    ([60.0, 85.0], 90.0, ['jobs', 'timeline', 'users'])
    """

    jobs: pd.DataFrame  # one row per job (jobs.csv)
    timeline: pd.DataFrame  # the cluster after every scheduling instant (timeline.csv)
    summary: dict[str, Any]  # the figures, the settings and the warnings (summary.json)
    more: dict[str, pd.DataFrame] = field(default_factory=dict)  # the features' own tables, by name

    @property
    def allocations(self) -> pd.DataFrame | None:
        """Each elastic job's GPU count over time (allocations.csv; :mod:`simcluster.features.elastic`), or None."""
        return self.more.get("allocations")

    def tables(self) -> dict[str, pd.DataFrame]:
        """The run folder's tables: jobs, timeline, users (per-user figures, :func:`users_table`) and the features'
        own (allocations)."""
        return {"jobs": self.jobs, "timeline": self.timeline, "users": users_table(self.jobs), **self.more}
