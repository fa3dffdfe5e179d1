"""Node failures: each node's life (up, down, repaired), a failed node's replacement from its job's domain, and
the guard against runs that would never end.

A node fails after an exponential time with mean ``node_mtbf`` and comes back ``node_repair`` seconds later;
the jobs on it are evicted (:class:`~simcluster.engine.causes.NodeFailed`) and lose what they did since
their last checkpoint.  On a cluster with a topology a running job may instead go on at once on free nodes of its
domain (:class:`DomainReplacement`, Kueue's failed-node replacement).  Under some settings a job can then never
finish; :class:`NoProgressGuard` notices.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, Any

import numpy as np
import simpy

from simcluster.cluster import Node, Pool
from simcluster.config import SimConfig
from simcluster.job import Job
from simcluster.placement.topology_aware import free_counts
from simcluster.topology.kueue import Tree, assign, kueue_tas
from simcluster.topology.request import pod_gpus, pool_tree

if TYPE_CHECKING:  # pragma: no cover
    from simcluster.engine.reliability import Reliability


class NoProgressError(ValueError):
    """A job keeps being evicted by node failures without its checkpointed progress advancing: under
    these settings (failure rate, checkpoint interval) the run would not end.  A ValueError, as bad
    settings are: the command line reports it with exit code 2, a sweep records the run as failed.

    ``finding`` is what was found without the advice (which names ``run``'s options: a command with other
    options, ``lucid-sim reliability``, words its own).

    >>> NoProgressError("job j never finishes. Give --until SECONDS.", finding="job j never finishes.").finding
    'job j never finishes.'
    """

    def __init__(self, message: str, finding: str | None = None) -> None:
        # (both in args: SimPy raises a process's exception again as type(exc)(*exc.args), a pool pickles it)
        super().__init__(message, message if finding is None else finding)

    @property
    def finding(self) -> str:
        return str(self.args[1]) if len(self.args) > 1 else str(self.args[0])

    def __str__(self) -> str:
        return str(self.args[0])


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


class DomainReplacement:
    """Kueue's replacement of a failed node (TASFailedNodeReplacement, KEP-2724 "Node failures"): the pods a
    running job had on a failed node go at once to free nodes, the job's other pods stay where they are.

    Kueue places the lost pods as it places a PodSet (``findReplacementAssignment`` in
    ``pkg/cache/scheduler/tas_flavor_snapshot.go``): by the run's topology-aware algorithm, with the job's
    request, within the domain its other pods hold at its required level (``requiredReplacementDomain``; none
    where the failed node held them all), on free GPUs only (no preemption), never on a node the job holds.
    Where none is free it gives up at once and the job is requeued, as Kueue's TASFailedNodeReplacementFailFast
    evicts it (both gates on by default since Kueue v0.14).  ``replaced`` and ``not_found`` count the jobs each
    way; a job Kueue would not replace (elastic, on shared GPUs or fractions of them) is neither.

    >>> from simcluster.cluster import Cluster
    >>> from simcluster.topology.request import TopologyRequest
    >>> vc = Cluster({"a": 4}, 8).vcs["a"]
    >>> for node, rack in zip(vc.nodes, (0, 0, 0, 1)):
    ...     node.domains = (rack,)
    >>> vc.topology_levels = ("rack",)
    >>> job = Job(index=0, job_id="j", vc="a", gpu_num=16, submit_time=0, duration=100)
    >>> job.topology = TopologyRequest("required", "rack")
    >>> job.allocation = tuple((node, node.allocate(job, 8)) for node in vc.nodes[:2])
    >>> replacement = DomainReplacement()
    >>> [(node.name, gpus) for node, gpus in replacement.replace(job, vc.nodes[0])]  # n2: the free node of rack 0
    [('a/n2', 8)]
    >>> other = Job(index=1, job_id="k", vc="a", gpu_num=8, submit_time=0, duration=100)
    >>> _ = vc.nodes[2].allocate(other, 8)
    >>> replacement.replace(job, vc.nodes[0]), replacement.replaced, replacement.not_found  # n3 is in rack 1
    (None, 1, 1)
    """

    def __init__(self, algorithm: str = "best-fit") -> None:
        self.algorithm = algorithm  # the placement's: best-fit, least-free, balanced, or kueue (Kueue's profile)
        self.replaced = self.not_found = 0
        self._trees: dict[int, tuple[Tree, np.ndarray] | None] = {}  # a pool's tree and its nodes' domains

    def replace(self, job: Job, failed: Node) -> list[tuple[Node, int]] | None:
        """Where ``job``'s GPUs on ``failed`` go now, ``[(node, GPUs)]``; None where Kueue would not replace them
        or finds no room (counted in ``not_found``)."""
        pool, lost = failed.pool, failed.jobs.get(job)
        if pool is None or not lost or job.elastic is not None or job.gpu_milli < 1000 or job.sharing:
            return None
        known = self._tree_of(pool)
        if known is None:  # (nodes outside the topology: a policy's own partition)
            return None
        tree, domains = known
        request = job.topology
        per_node = pool.gpus_per_node
        pod = request.pod_size(job.gpu_num, per_node) if request is not None else pod_gpus(job.gpu_num, per_node)
        if len(lost) % pod:
            return None
        free = free_counts(pool) // pod
        free[[node.slot for node, _ in job.allocation if node.pool is pool]] = 0  # (a node holds a job once)
        if request is not None and request.mode == "required" and request.level in pool.topology_levels:
            kept = next((node for node, _ in job.allocation if node is not failed), None)
            if kept is not None and kept.domains is not None:  # its domain, where its other pods are
                k = pool.topology_levels.index(request.level)
                free[domains[:, k] != kept.domains[k]] = 0
        level: dict[str, Any] = request.assignment if request is not None else {}
        pods = len(lost) // pod
        if request is not None and request.slice_size and pods % request.slice_size:
            chosen = None  # (lost pods that are not whole slices cannot be placed as slices)
        elif self.algorithm == "kueue":
            chosen = kueue_tas(tree, free, pods, **level)
        else:
            chosen = assign(tree, free, pods, algorithm=self.algorithm, **level)
        if chosen is None:
            self.not_found += 1
            return None
        self.replaced += 1
        return [(pool.nodes[leaf], count * pod) for leaf, count in sorted(chosen.items()) if count]

    def _tree_of(self, pool: Pool) -> tuple[Tree, np.ndarray] | None:
        if id(pool) not in self._trees:
            domains = [node.domains for node in pool.nodes]
            self._trees[id(pool)] = None if any(d is None for d in domains) or not pool.topology_levels else (
                pool_tree(domains, pool.topology_levels),  # type: ignore[arg-type]
                np.asarray(domains, dtype=np.int64).reshape(len(domains), len(pool.topology_levels)))
        return self._trees[id(pool)]

    def report(self) -> dict[str, int]:
        """The counts, for summary.json's ``failures``."""
        return {"node_replacements": self.replaced, "node_replacements_not_found": self.not_found}


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
        """After ``job``'s eviction from ``nodes`` nodes: True to abandon it (raises under ``stop``).  Under a
        rate model of faults a job that can practically never finish is given up on at once, whatever the limit
        (:class:`~simcluster.engine.reliability.FinishChance`)."""
        if self.reliability is not None and self._never_finishes(job, nodes, now):
            return True
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
            finding, advice = self.message(job, nodes, in_a_row, now)
            raise NoProgressError(finding + advice, finding=finding)
        return True

    def _never_finishes(self, job: Job, nodes: int, now: float) -> bool:
        """Whether ``job`` can practically never finish (raises under ``stop``; True: abandon it)."""
        chance = self.reliability.chance.judge(job, nodes, now)  # type: ignore[union-attr]
        if chance is None:
            return False
        if self.config.on_no_progress == "stop":
            raise self.reliability.chance.error(chance, now)  # type: ignore[union-attr]
        return True

    def forget(self, job: Job) -> None:
        """``job`` finished or was abandoned."""
        if self.futile:
            self.futile.pop(job, None)

    def message(self, job: Job, nodes: int, evictions: int, now: float) -> tuple[str, str]:
        """Why the guard gave up, in words: what it found, and the advice (``run``'s options)."""
        c = self.config
        if self.reliability is not None:
            return self._costed_message(job, nodes, evictions, now)
        need = min(c.checkpoint_interval or job.work_left, job.work_left)  # failure-free seconds it needs
        survives = math.exp(-nodes * need / c.node_mtbf)
        return ((f"no progress under node failures: job {job.job_id} ({job.gpu_num} GPUs on {nodes} node(s)) was "
                f"evicted {evictions} times in a row (t={now:,.0f} s) without its checkpointed progress "
                f"advancing beyond {job.progress:,.0f} of {job.duration:,} s. A run must last {need:,.0f} s to "
                f"keep progress; with --node-mtbf {c.node_mtbf:g} it survives on {nodes} node(s) with probability "
                f"exp(-{nodes}×{need:.0f}/{c.node_mtbf:g}) = {survives:.2g}."),
                (f" Raise --node-mtbf, shorten --checkpoint-interval, or give --on-no-progress abandon (such jobs are "
                f"reported unfinished) or --until SECONDS; --restart-limit {c.restart_limit} sets this guard (0: off)."))

    def _costed_message(self, job: Job, nodes: int, evictions: int, now: float) -> tuple[str, str]:
        """:meth:`message` under a fault model or checkpoint and restart costs: a run must get through an
        interval and its checkpoint without a fault (its restart before that is exposed too); the advice ends
        with the fleet warning of a replayed log, if any."""
        c, rel = self.config, self.reliability
        assert rel is not None
        interval = rel.interval(job)
        need = min(interval or job.work_left, job.work_left)
        cost = c.checkpoint_cost if interval and interval < job.work_left else 0.0
        exposed = need + cost + c.restart_cost
        rate = rel.node_rate * nodes
        survives = math.exp(-rate * exposed)
        source = rel.source
        return ((f"no progress under node failures: job {job.job_id} ({job.gpu_num} GPUs on {nodes} node(s)) was "
                f"stopped {evictions} times in a row (t={now:,.0f} s) without its checkpointed progress advancing "
                f"beyond {job.progress:,.0f} of {job.duration:,} s. To keep progress it must run {exposed:,.0f} s "
                f"without a fault (restart {c.restart_cost:g} s, {need:,.0f} s of work, checkpoint {cost:g} s); "
                f"under {source} its {nodes} node(s) fail {rate * 86_400:.3g} times a day, so it survives that "
                f"with probability {survives:.2g}."),
                (f" Lower --checkpoint-cost or --restart-cost, shorten --checkpoint-interval, or give --on-no-progress "
                f"abandon (such jobs are reported unfinished) or --until SECONDS; --restart-limit {c.restart_limit} "
                f"sets this guard (0: off).{rel.doubt_text()}"))
