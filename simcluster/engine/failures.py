"""Node failures: each node's life (up, down, repaired), and the guard against runs that would never end.

A node fails after an exponential time with mean ``node_mtbf`` and comes back ``node_repair`` seconds later;
the jobs on it are evicted (:class:`~simcluster.engine.causes.NodeFailed`) and lose what they did since
their last checkpoint.  Under some settings a job can then never finish; :class:`NoProgressGuard` notices.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, Any

import simpy

from simcluster.cluster import Node
from simcluster.config import SimConfig
from simcluster.job import Job

if TYPE_CHECKING:  # pragma: no cover
    from simcluster.engine.reliability import Reliability


class NoProgressError(ValueError):
    """A job keeps being evicted by node failures without its checkpointed progress advancing: under
    these settings (failure rate, checkpoint interval) the run would not end.  A ValueError, as bad
    settings are: the command line reports it with exit code 2, a sweep records the run as failed."""


def node_life(env: simpy.Environment, node: Node, config: SimConfig, down: Callable[[Node], None],
              up: Callable[[Node], None]) -> Generator[simpy.Event, Any, None]:
    """A SimPy process: ``node`` fails after an exponential time with mean ``node_mtbf`` (``down``), is repaired
    ``node_repair`` seconds later (``up``), and so on; its random stream is its own, seeded by its name."""
    rng = random.Random(f"{config.seed}:{node.name}")
    while True:
        yield env.timeout(rng.expovariate(1.0 / config.node_mtbf))
        down(node)
        yield env.timeout(config.node_repair)
        up(node)


class NoProgressGuard:
    """Gives up on a job that ``restart_limit`` evictions in a row left no further on.

    A job is *making no progress* when ``restart_limit`` evictions in a row left its checkpointed
    progress (what it keeps: its last periodic checkpoint or preemption) no further than after the
    eviction before (or than 0, before its first).  Then ``on_no_progress`` decides: ``stop`` raises
    :class:`NoProgressError`, ``abandon`` takes the job out (it is reported unfinished).

    >>> guard = NoProgressGuard(SimConfig(restart_limit=2, on_no_progress="abandon", node_mtbf=100.0))
    >>> job = Job(index=0, job_id="j", vc="a", gpu_num=8, submit_time=0, duration=500)
    >>> [guard.gives_up_on(job, nodes=1, now=t) for t in (10, 20)]
    [False, True]
    """

    def __init__(self, config: SimConfig, reliability: Reliability | None = None) -> None:
        self.config = config
        self.reliability = reliability  # failures by model and their costs: the message reads its rate
        # job → (checkpointed progress after its last eviction, evictions in a row that did not advance it)
        self.futile: dict[Job, tuple[float, int]] = {}

    def gives_up_on(self, job: Job, nodes: int, now: float) -> bool:
        """After ``job``'s eviction from ``nodes`` nodes: True to abandon it (raises under ``stop``)."""
        limit = self.config.restart_limit
        if not limit:
            return False
        kept = job.progress
        last, in_a_row = self.futile.get(job, (0.0, 0))
        in_a_row = in_a_row + 1 if kept <= last else 0
        self.futile[job] = (max(kept, last), in_a_row)
        if in_a_row < limit:
            return False
        if self.config.on_no_progress == "stop":
            raise NoProgressError(self.message(job, nodes, in_a_row, now))
        return True

    def forget(self, job: Job) -> None:
        """``job`` finished or was abandoned."""
        if self.futile:
            self.futile.pop(job, None)

    def message(self, job: Job, nodes: int, evictions: int, now: float) -> str:
        c = self.config
        if self.reliability is not None:
            return self._costed_message(job, nodes, evictions, now)
        need = min(c.checkpoint_interval or job.work_left, job.work_left)  # failure-free seconds it needs
        survives = math.exp(-nodes * need / c.node_mtbf)
        return (f"no progress under node failures: job {job.job_id} ({job.gpu_num} GPUs on {nodes} node(s)) was "
                f"evicted {evictions} times in a row (t={now:,.0f} s) without its checkpointed progress "
                f"advancing beyond {job.progress:,.0f} of {job.duration:,} s. A run must last {need:,.0f} s to "
                f"keep progress; with --node-mtbf {c.node_mtbf:g} it survives on {nodes} node(s) with probability "
                f"exp(-{nodes}×{need:.0f}/{c.node_mtbf:g}) = {survives:.2g}. Raise --node-mtbf, shorten "
                f"--checkpoint-interval, or give --on-no-progress abandon (such jobs are reported unfinished) or "
                f"--until SECONDS; --restart-limit {c.restart_limit} sets this guard (0: off).")

    def _costed_message(self, job: Job, nodes: int, evictions: int, now: float) -> str:
        """:meth:`message` under a fault model or checkpoint and restart costs: a run must get through an
        interval and its checkpoint without a fault (its restart before that is exposed too)."""
        c, rel = self.config, self.reliability
        assert rel is not None
        interval = rel.interval(job)
        need = min(interval or job.work_left, job.work_left)
        cost = c.checkpoint_cost if interval and interval < job.work_left else 0.0
        exposed = need + cost + c.restart_cost
        rate = rel.node_rate * nodes
        survives = math.exp(-rate * exposed)
        source = rel.source
        return (f"no progress under node failures: job {job.job_id} ({job.gpu_num} GPUs on {nodes} node(s)) was "
                f"stopped {evictions} times in a row (t={now:,.0f} s) without its checkpointed progress advancing "
                f"beyond {job.progress:,.0f} of {job.duration:,} s. To keep progress it must run {exposed:,.0f} s "
                f"without a fault (restart {c.restart_cost:g} s, {need:,.0f} s of work, checkpoint {cost:g} s); "
                f"under {source} its {nodes} node(s) fail {rate * 86_400:.3g} times a day, so it survives that "
                f"with probability {survives:.2g}. Lower --checkpoint-cost or --restart-cost, shorten "
                f"--checkpoint-interval, or give --on-no-progress abandon (such jobs are reported unfinished) or "
                f"--until SECONDS; --restart-limit {c.restart_limit} sets this guard (0: off).")
