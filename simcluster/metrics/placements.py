"""Where each job ran: one row per job, node and stretch of time it held GPUs there (``placements.csv``).

What ``lucid-sim run --placements`` records for the report's Gantt chart (nodes as rows, a job's GPUs
as bars).  A job that is preempted, evicted, moved or migrated and started again gets a row per run; so does
one that goes on through a failure (a spare swapped in, the failed node replaced: rows from then on name its new
nodes) or whose GPUs change as it runs.
Opt-in: the hooks cost a call per start and stop, which a plain run does not pay.

>>> from simcluster import SimConfig, load_trace, simulate
>>> import pandas as pd
>>> jobs = pd.DataFrame({"submit_time": [0, 5], "gpu_num": [4, 8], "duration": [60, 30]})
>>> where = Placements()
>>> _ = simulate(load_trace(jobs, nodes=2), SimConfig(), observers=[where])
>>> where.frame()[["job_id", "node", "gpus", "start", "end"]].values.tolist()
[['0', 'cluster/n0', '0,1,2,3', 0.0, 60.0], ['1', 'cluster/n1', '0,1,2,3,4,5,6,7', 5.0, 35.0]]
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from simcluster.job import Job
from simcluster.metrics.observer import RunObserver

COLUMNS = ["job_id", "vc", "node", "gpu_type", "gpus", "gpu_count", "start", "end"]


class Placements(RunObserver):
    """Records each run of each job on each node (see the module's docstring)."""

    def __init__(self) -> None:
        self.rows: list[list[Any] | None] = []
        self._open: dict[Job, list[int]] = {}  # job → indices of its rows still running

    def begin(self, job: Job, now: float) -> None:
        opened = []
        for node, gpus in job.allocation:
            opened.append(len(self.rows))
            self.rows.append([job.job_id, node.vc.name, node.name, node.gpu_type, ",".join(map(str, gpus)),
                              len(gpus), now, None])
        self._open[job] = opened

    def end(self, job: Job, now: float) -> None:
        for index in self._open.pop(job, ()):
            row = self.rows[index]
            assert row is not None
            if row[-2] == now:  # a run of no time (a restart then a resize at one instant): not a run
                self.rows[index] = None
            else:
                row[-1] = now

    def frame(self) -> pd.DataFrame:
        """The rows, in the order the runs started (``end`` empty for a run cut by ``--until``)."""
        return pd.DataFrame([row for row in self.rows if row is not None], columns=COLUMNS)
