"""Link contention: jobs crossing the same uplink share its bandwidth (docs/topology.md, "Link contention"); in
play where a run has a topology (``--topology``) and either ``--link-contention C`` above 0 or a trace with a
``comm_share`` column (:func:`simcluster.traces.requests.comm_shares`).

Crux (SIGCOMM'24) saw it on Alibaba's Lingjun: 36 % of jobs shared a link with another job, and a GPT job went
from 1.53 to 1.70 s an iteration beside a BERT job under the same two ToR switches.  Each job crosses the
uplinks of the domains it occupies at its highest spanned level and below
(:func:`simcluster.topology.links.uplinks`); on an uplink n jobs cross each gets 1/n of it, and a job whose
most crowded uplink n jobs cross runs at 1/((1 - c) + c·n), c the share of its time alone spent communicating
across uplinks: the trace's ``comm_share`` for the job, else ``--link-contention``'s C where its cell is blank
or the trace has no such column (a ``model`` column gives none: shares are not inferred from models).  This
multiplies the speed that its GPUs, partners and spread give it, so it compounds with
``--topology-slowdown``.  The engine learns of it through a speed term (:mod:`simcluster.engine.terms`): each
start and stop updates the jobs on each uplink, and the jobs sharing an uplink with the one that started or
stopped are re-timed.  Elastic jobs are left out: they neither slow nor are slowed, and are not counted in the
figures (their GPUs change as they run).

``jobs.csv`` gets ``peak_uplink_jobs``: the most jobs on the job's most crowded uplink at once while it ran
(itself included: 1 alone; 0 where it crossed none), and, where the trace has a ``comm_share`` column, the
job's share (``comm_share``: its own or C; empty for an elastic job).  ``summary.json`` gets
``link_contention``: C, the share of the jobs that started that crossed an uplink and that shared one with
another job (Crux's figure), the share of the GPU-time held while sharing one, and, where the trace has the
column, where the shares came from (``shares``: ``trace`` where every row gives one, ``option`` where none
does, ``both`` between).  A trace without the column gives the run it gave before the column was read: same
figures, same ``jobs.csv``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from simcluster.features.base import Contribution, Ended, Feature
from simcluster.settings.topology import TopologyOptions
from simcluster.topology.links import UplinkLoad, contention_speed, uplinks
from simcluster.traces.requests import COMM_SHARE

if TYPE_CHECKING:
    import pandas as pd

    from simcluster.job import Job
    from simcluster.run.resolved import ResolvedRun
    from simcluster.traces.base import Trace


class LinkContentionFeature(Feature):
    name = "links"
    settings = TopologyOptions

    def in_play(self, run: ResolvedRun) -> bool:
        return run.cluster.topology is not None and (run.config.link_contention > 0 or trace_shares(run.trace)
                                                      is not None)

    def plan(self, run: ResolvedRun) -> np.ndarray | None:
        return trace_shares(run.trace)

    def start(self, plan: np.ndarray | None, jobs: list[Job], run: ResolvedRun) -> Contribution:
        return LinkContentionResults(UplinkContention(run.config.link_contention, plan))


def trace_shares(trace: Trace | None) -> np.ndarray | None:
    """Each trace row's own communication share (NaN where blank: it takes C), read-only, or None for a trace
    without the column.

    >>> import pandas as pd
    >>> from simcluster.api import load_trace
    >>> jobs = pd.DataFrame({"submit_time": [0, 0], "gpu_num": [8, 8], "duration": [9, 9],
    ...                      "comm_share": [0.2, None]})
    >>> trace_shares(load_trace(jobs, nodes=2)).tolist(), trace_shares(load_trace(jobs.iloc[:, :3], nodes=2))
    ([0.2, nan], None)
    """
    if trace is None or COMM_SHARE not in trace.frame:
        return None
    shares = trace.frame[COMM_SHARE].to_numpy(dtype=float, copy=True)
    shares.flags.writeable = False
    return shares


class UplinkContention:
    """The speed term of link contention, and the record of who shared an uplink for how long: ``share`` (C)
    is every job's communication share but those ``own`` gives (indexed by :attr:`Job.index`, NaN: none).

    >>> from simcluster.cluster import Cluster
    >>> from simcluster.cluster_spec import ClusterSpec
    >>> from simcluster.job import Job
    >>> nodes = Cluster(ClusterSpec.uniform({"v": 4}, 8), 8).vcs["v"].nodes
    >>> for node, rack in zip(nodes, (0, 1, 0, 1)):
    ...     node.domains = (rack,)
    >>> gpt, bert = (Job(index=i, job_id=n, vc="v", gpu_num=16, submit_time=0, duration=10)
    ...              for i, n in enumerate(("gpt", "bert")))
    >>> gpt.allocation, bert.allocation = ((nodes[0], [0]), (nodes[1], [0])), ((nodes[2], [0]), (nodes[3], [0]))
    >>> term = UplinkContention(1 / 9)
    >>> term.on_start(gpt, 0.0); term.on_start(bert, 0.0)
    >>> round(term.factor(gpt), 12), term.affected(gpt) == {bert}
    (0.9, True)
    >>> term.on_stop(bert, 5.0)
    >>> term.factor(gpt), term.shared_gpu_seconds
    (1.0, 160.0)

    Shares of their own (bert's blank: C): each job is slowed by its own, 1/((1 - c) + 2c) beside the other.

    >>> term = UplinkContention(0.5, np.array([0.25, np.nan]))
    >>> term.on_start(gpt, 0.0); term.on_start(bert, 0.0)
    >>> term.factor(gpt), round(term.factor(bert), 12), term.share_of(bert)
    (0.8, 0.666666666667, 0.5)
    """

    def __init__(self, share: float, own: Sequence[float] | np.ndarray | None = None) -> None:
        self.share = share
        self.own = own
        self.shares: dict[Job, float] = {}  # started jobs → their share, where ``own`` is given
        self.load: UplinkLoad[Job] = UplinkLoad()
        self.crowd: dict[Job, int] = {}  # running jobs that cross an uplink → the jobs on their most crowded one
        self._factors: dict[tuple[float, int], float] = {}  # (share, crowd) → speed factor, worked out once
        self.started: set[Job] = set()
        self.peak: dict[Job, int] = {}  # jobs that crossed an uplink → the most jobs on their most crowded one
        self._held_since: dict[Job, float] = {}  # running jobs → when their run began
        self._shared_since: dict[Job, float] = {}  # running jobs sharing an uplink now → since when
        self.gpu_seconds = 0.0  # held by the jobs counted
        self.shared_gpu_seconds = 0.0  # of those, held while sharing an uplink with another job

    def share_of(self, job: Job) -> float:
        """``job``'s communication share: its own where ``own`` gives one, else C."""
        if self.own is None:
            return self.share
        own = float(self.own[job.index])
        return self.share if math.isnan(own) else own

    def factor(self, job: Job) -> float:
        crowd = self.crowd.get(job, 0)
        if crowd < 2:
            return 1.0
        share = self.share if self.own is None else self.shares[job]
        factor = self._factors.get((share, crowd))
        if factor is None:
            factor = self._factors[share, crowd] = contention_speed(share, crowd)
        return factor

    def affected(self, job: Job) -> set[Job]:
        return self.load.neighbours(job)

    def on_start(self, job: Job, now: float) -> None:
        if job.elastic is not None:
            return
        self.started.add(job)
        self._held_since[job] = now
        if self.own is not None:
            self.shares[job] = self.share_of(job)
        links = uplinks([node.domains for node, _ in job.allocation])
        if links:
            self.load.add(job, links)
            self._recount(job, now)
            for other in self.load.neighbours(job):
                self._recount(other, now)

    def on_stop(self, job: Job, now: float) -> None:
        since = self._held_since.pop(job, None)
        if since is None:
            return  # (an elastic job)
        self.gpu_seconds += (now - since) * job.gpu_num
        if job not in self.load:
            return
        neighbours = self.load.neighbours(job)
        self.load.remove(job)
        self._recount(job, now)
        del self.crowd[job]
        for other in neighbours:
            self._recount(other, now)

    def _recount(self, job: Job, now: float) -> None:
        """``job``'s crowd anew (0 once it stopped), its peak, and the time it spent sharing an uplink."""
        crowd = self.load.crowd(job)
        self.crowd[job] = crowd
        if crowd > self.peak.get(job, 0):
            self.peak[job] = crowd
        since = self._shared_since.get(job)
        if crowd >= 2 and since is None:
            self._shared_since[job] = now
        elif crowd < 2 and since is not None:
            del self._shared_since[job]
            self.shared_gpu_seconds += (now - since) * job.gpu_num

    def close(self, now: float) -> None:
        """Count the runs still going at the run's end (a horizon) as though they stopped then."""
        for job in list(self._held_since):
            self.on_stop(job, now)


class LinkContentionResults(Contribution):
    def __init__(self, term: UplinkContention) -> None:
        self.term = term
        self.speed_terms = [term]

    def columns(self, ended: Ended, jobs: pd.DataFrame) -> pd.DataFrame:
        term, reported = self.term, sorted(ended.reported, key=lambda j: j.index)
        jobs["peak_uplink_jobs"] = [term.peak.get(job, 0) for job in reported]
        if term.own is not None:  # (without the column every job's share is C, in the summary)
            jobs["comm_share"] = [term.share_of(job) if job.elastic is None else math.nan for job in reported]
        return jobs

    def figures(self, ended: Ended, jobs: pd.DataFrame) -> dict[str, Any]:
        term = self.term
        term.close(ended.end)
        started, peaks = len(term.started), term.peak.values()
        return {"link_contention": {
            "comm_share": term.share,
            "jobs_crossing_uplinks": len(peaks) / started if started else 0.0,
            "jobs_sharing_uplink": sum(1 for n in peaks if n >= 2) / started if started else 0.0,
            "gpu_time_sharing_uplink": term.shared_gpu_seconds / term.gpu_seconds if term.gpu_seconds else 0.0,
            "most_jobs_on_an_uplink": term.load.busiest,
            **({"shares": shares_source(term.own)} if term.own is not None else {}),
        }}


def shares_source(own: Sequence[float] | np.ndarray) -> str:
    """Where the jobs' shares came from: ``trace`` (every row gives one), ``option`` (none does: C), ``both``.

    >>> [shares_source(own) for own in ([0.1, 0.2], [math.nan], [0.1, math.nan], [])]
    ['trace', 'option', 'both', 'option']
    """
    blank = np.isnan(np.asarray(own, dtype=float))
    return "option" if blank.all() else "trace" if not blank.any() else "both"


__all__ = ["LinkContentionFeature", "UplinkContention"]
