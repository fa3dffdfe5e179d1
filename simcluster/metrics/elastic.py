"""What a run of elastic jobs and deadlines adds to the results: each job's GPU count over time, deadline
satisfaction, cluster efficiency.

* ``allocations.csv`` (:class:`AllocationTimeline`): one row each time an elastic job's GPU count changes
  (``time, job_id, gpus``; 0 when it leaves its GPUs), what the report draws beside the Gantt chart.
* Deadlines (:func:`deadline_figures`): a job with a deadline meets it when it finishes by then; a job
  declined by the policy (admission control) or not finished misses it; jobs without one are best-effort
  and not counted.  ``deadline_satisfaction`` = met ÷ jobs with a deadline.  Where the policy judges some
  deadlines by another time than the job's end (:meth:`Policy.judged_ends`: ElasticFlow's artifact judges a job
  by its last plan's end), jobs.csv has a ``judged_end`` column (the end elsewhere) and the figures use it.
* ``cluster_efficiency``: the speedup the cluster's GPUs delivered, ``Σ_jobs ∫ speedup dt ÷ (GPUs ×
  makespan)``, each job's speedup being its rate on its GPUs over its rate on one GPU at its user's batch
  (0 while it restarts).  1 would be every GPU busy with perfect linear scaling; utilization minus the
  losses to scaling and restarts.

>>> frame = pd.DataFrame({"deadline": [100.0, 50.0, np.nan, 80.0], "end_time": [90.0, 60.0, 10.0, np.nan],
...                       "declined": [False, False, False, True]})
>>> deadline_figures(frame)
{'deadline_satisfaction': 0.3333333333333333, 'jobs_with_deadline': 3, 'deadlines_met': 1, 'declined': 1}
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Mapping
from operator import attrgetter
from typing import Any

import numpy as np
import pandas as pd

from simcluster.job import Job, JobState
from simcluster.metrics.observer import Observer


class AllocationTimeline(Observer):
    """Each elastic job's GPU count over time: a row whenever it changes (see the module's docstring)."""

    def __init__(self) -> None:
        self.time = array("d")
        self.job = array("q")  # trace index
        self.gpus = array("q")
        self._ids: dict[int, str] = {}
        self._last: dict[int, int] = {}  # each job's count as last recorded

    def _record(self, job: Job, now: float, gpus: int) -> None:
        if self._last.get(job.index, 0) == gpus:  # (a change of batch alone)
            return
        self._last[job.index] = gpus
        self.time.append(now)
        self.job.append(job.index)
        self.gpus.append(gpus)
        self._ids[job.index] = job.job_id

    def on_start(self, job: Job, now: float) -> None:
        self._record(job, now, job.gpu_num)

    def on_resize(self, job: Job, now: float) -> None:
        self._record(job, now, job.gpu_num)

    def on_preempt(self, job: Job, now: float) -> None:
        self._record(job, now, 0)

    def on_restart(self, job: Job, now: float) -> None:  # (it may go on through the failure: a spare, a replacement)
        self._record(job, now, job.gpu_num if job.state is JobState.RUNNING else 0)

    def on_move(self, job: Job, now: float) -> None:
        self._record(job, now, 0)

    def on_finish(self, job: Job, now: float) -> None:
        self._record(job, now, 0)

    def frame(self) -> pd.DataFrame:
        """``time, job_id, gpus``; of several changes of one job at one instant, the last."""
        frame = pd.DataFrame({"time": np.array(self.time), "index": np.array(self.job, dtype=np.int64),
                              "gpus": np.array(self.gpus, dtype=np.int64)})
        frame = frame.drop_duplicates(["time", "index"], keep="last")
        frame.insert(1, "job_id", frame["index"].map(self._ids).astype(str))
        return frame.drop(columns="index").reset_index(drop=True)


def deadline_figures(frame: pd.DataFrame) -> dict[str, Any]:
    """Deadline satisfaction over the jobs of ``frame`` that have a deadline (see the module's docstring)."""
    deadline = frame["deadline"].to_numpy(float)
    has = ~np.isnan(deadline)
    end = frame["judged_end" if "judged_end" in frame else "end_time"].to_numpy(float)
    met = has & ~np.isnan(end) & (end <= deadline)
    declined = frame["declined"].to_numpy(bool) if "declined" in frame else np.zeros(len(frame), bool)
    count = int(has.sum())
    return {"deadline_satisfaction": float(met.sum() / count) if count else float("nan"),
            "jobs_with_deadline": count, "deadlines_met": int(met.sum()), "declined": int(declined.sum())}


def judged_column(frame: pd.DataFrame, judged: Mapping[str, float]) -> np.ndarray:
    """Each job's judged end: ``judged``'s time for the jobs it names (by id), the job's end for the others.

    >>> judged_column(pd.DataFrame({"job_id": ["a", "b"], "end_time": [5.0, np.nan]}), {"a": 7.0}).tolist()
    [7.0, nan]
    """
    ends = frame["end_time"].to_numpy(float).copy()
    for i, job in enumerate(frame["job_id"].astype(str)):
        if job in judged and not np.isnan(ends[i]):
            ends[i] = judged[job]
    return ends


def elastic_columns(frame: pd.DataFrame, jobs: Iterable[Job], now: float) -> pd.DataFrame:
    """jobs.csv's columns of an elastic run (trace order): GPU-seconds held, resizes, and the progress made in
    the job's own unit and its unit's name."""
    rows = sorted(jobs, key=attrgetter("index"))
    out = frame.copy()
    states = [j.elastic for j in rows]
    out["gpu_seconds"] = [s.gpu_seconds_at(now) if s is not None else np.nan for s in states]
    out["resizes"] = [s.resizes if s is not None else 0 for s in states]
    out["progress"] = [s.progress_at(j, now) if s is not None else np.nan for j, s in zip(rows, states, strict=True)]
    out["progress_unit"] = [s.model.unit if s is not None else "" for s in states]
    return out


def cluster_efficiency(jobs: Iterable[Job], gpus: int, makespan: float) -> float:
    """``Σ_jobs ∫ speedup dt ÷ (GPUs × makespan)`` over the elastic jobs (see the module's docstring)."""
    weighted = sum(j.elastic.speedup_seconds for j in jobs if j.elastic is not None)
    return weighted / (gpus * makespan) if gpus and makespan > 0 else 0.0


def deadline_column(jobs: Iterable[Job], declined: Mapping[Job, float]) -> tuple[np.ndarray, np.ndarray]:
    """Each job's deadline (NaN: none) and whether it was declined, in trace order."""
    rows = sorted(jobs, key=attrgetter("index"))
    deadlines = np.array([np.nan if j.deadline is None else j.deadline for j in rows], dtype=float)
    return deadlines, np.array([j in declined for j in rows], dtype=bool)
