"""How fast a running job goes: its GPUs' types, its partners on shared GPUs, its spread over nodes.

A job runs at the pace of its slowest GPU: its speed on that GPU's type (:meth:`~simcluster.job.Job.speed_on`,
1 for jobs of traces without per-type speeds), times its sharing factor there (beside a partner: the
throughput table's pair speed for jobs that have one, else the colocation model's; a fraction of a GPU
runs at full speed), times its spread speed: a job whose GPUs span k > 1 nodes runs at 1/(1 + penalty)
(one slower interconnect hop, whatever k); on a cluster with a topology, 1/(1 + X) with X the largest cost of
the levels it spans (:mod:`simcluster.topology.costs`); times every speed term's factor, where a feature gives
the run terms (jobs crossing the same uplink: :mod:`simcluster.engine.terms`).  The engine re-times a job
whenever this changes (:class:`~simcluster.engine.causes.RateChanged`).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from simcluster.colocation.loader import ColocationModel
from simcluster.job import UNKNOWN_WORKLOAD as UNKNOWN
from simcluster.job import Job, table_keys

if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Sequence

    from simcluster.cluster import Node
    from simcluster.engine.terms import SpeedTerm
    from simcluster.throughputs import ThroughputTable


class SpeedModel:
    """Speeds of running jobs under one run's tables and spread penalty.

    >>> from simcluster.cluster import Cluster
    >>> from simcluster.cluster_spec import ClusterSpec
    >>> node = Cluster(ClusterSpec.uniform({"a": 2}, 8), 8).vcs["a"].nodes[0]
    >>> job = Job(index=0, job_id="j", vc="a", gpu_num=2, submit_time=0, duration=10)
    >>> job.allocation = ((node, node.allocate(job, 2)),)
    >>> SpeedModel(spread_penalty=0.5).of(job)
    (1.0, False)
    """

    def __init__(self, spread_penalty: float = 0.0, throughputs: ThroughputTable | None = None,
                 colocation: ColocationModel | None = None, level_costs: tuple[float, ...] = (),
                 terms: Sequence[SpeedTerm] = ()) -> None:
        """``level_costs``: on a cluster with a topology, the cost of spanning each of its levels, top-down, then
        the node level's (:class:`~simcluster.topology.costs.ClusterTopology`); without one, spanning nodes costs
        ``spread_penalty``.  ``terms``: the run's speed terms (:mod:`~simcluster.engine.terms`), whose factors
        multiply every speed."""
        self.level_costs = level_costs or (spread_penalty,)
        self.spread_penalty = max(self.level_costs)  # (non-zero: where a job's GPUs are changes its speed)
        self.throughputs = throughputs
        self.colocation = colocation
        self._per_type = hasattr(colocation, "on")  # a model per GPU type (PerGpuType): asked for the GPU's type
        self.terms = tuple(terms)
        # per running job whose speed was asked: (its allocation, then per node of it: the node's version, the
        # job's slowest speed there, whether it shares a GPU there), as of that version; the engine reads whether
        # anything is kept at every stop
        self.kept: dict[Job, tuple[tuple, list[int], list[float], list[bool]]] = {}

    @staticmethod
    def partners(job: Job) -> set[Job]:
        """The jobs sharing a GPU with ``job``."""
        return {other for node, _ in job.allocation for other in node.partners(job)}

    def spread(self, job: Job) -> float:
        """1/(1 + X) for a job holding GPUs on more than one node, X the largest cost of the levels it spans;
        else 1."""
        if not self.spread_penalty or len({id(node) for node, _ in job.allocation}) < 2:
            return 1.0
        costs = self.level_costs
        if len(costs) == 1:
            return 1.0 / (1.0 + costs[0])
        return 1.0 / (1.0 + max(costs[spanned_level(job):]))

    def solo(self, job: Job) -> float:
        """The job's speed were none of its GPUs shared: its slowest GPU type's, times its spread speed (and the
        speed terms' factors)."""
        if job.speeds is None:
            return self.spread(job) * self.terms_factor(job) if self.terms else self.spread(job)
        speed = min(job.speeds.on(node.gpu_type) for node, _ in job.allocation) * self.spread(job)
        if speed <= 0:
            raise RuntimeError(f"job {job.job_id} was started on a GPU type it cannot run on "
                               f"({', '.join(sorted({n.gpu_type for n, _ in job.allocation}))})")
        return speed * self.terms_factor(job) if self.terms else speed

    def terms_factor(self, job: Job) -> float:
        """The product of the speed terms' factors for running ``job`` (1 without terms)."""
        factor = 1.0
        for term in self.terms:
            factor *= term.factor(job)
        return factor

    def of(self, job: Job) -> tuple[float, bool]:
        """The job's speed now, and whether it shares a GPU: on each GPU it shares with whole-GPU jobs, its speed
        alone there times its pair speed with each partner (:meth:`pair`); the slowest GPU sets the pace.

        Each node's slowest speed is kept (:attr:`kept`) until that node's jobs change (:attr:`Node.version
        <simcluster.cluster.Node.version>`) or the job's GPUs do: a big job's partner that started or stopped on one
        of its nodes costs that node's GPUs, not all of them.  The minimum over nodes is the same as GPU by GPU.

        >>> from simcluster.cluster import Cluster
        >>> from simcluster.cluster_spec import ClusterSpec
        >>> from simcluster.colocation.loader import default_model
        >>> a, b = Cluster(ClusterSpec.uniform({"v": 2}, 2), 2).vcs["v"].nodes
        >>> big = Job(index=0, job_id="big", vc="v", gpu_num=4, submit_time=0, duration=10)
        >>> small = Job(index=1, job_id="small", vc="v", gpu_num=1, submit_time=0, duration=10)
        >>> big.allocation = ((a, a.attach(big, [0, 1])), (b, b.attach(big, [0, 1])))
        >>> model = SpeedModel(colocation=default_model())
        >>> model.of(big)
        (1.0, False)
        >>> small.allocation = ((b, b.attach(small, [1])),)
        >>> model.of(big) == (model.pair(big, small, "gpu"), True)
        True
        >>> b.release(small); model.of(big)
        (1.0, False)
        """
        allocation = job.allocation
        kept = self.kept.get(job)
        if kept is None or kept[0] is not allocation:
            n = len(allocation)
            kept = self.kept[job] = (allocation, [-1] * n, [0.0] * n, [False] * n)
        _, versions, slowest_on, sharing_on = kept
        factors: dict[tuple[Job, str], float] = {}  # a partner's factor per GPU type, looked up once per call
        for k, (node, ids) in enumerate(allocation):
            if versions[k] != node.version:
                versions[k] = node.version
                slowest_on[k], sharing_on[k] = self._on_node(job, node, ids, factors)
        speed = min(slowest_on) if slowest_on else math.inf
        sharing = True in sharing_on
        speed = speed * self.spread(job) if self.spread_penalty else speed
        return (speed * self.terms_factor(job) if self.terms else speed), sharing

    def forget(self, job: Job) -> None:
        """Drop what :meth:`of` keeps for ``job`` (it left its GPUs)."""
        self.kept.pop(job, None)

    def _on_node(self, job: Job, node: Node, ids: list[int], factors: dict[tuple[Job, str], float]) -> tuple[float, bool]:
        """``job``'s slowest speed over its GPUs ``ids`` of ``node``, and whether it shares one of them."""
        gpu_type = node.gpu_type
        slowest = alone = job.speed_on(gpu_type)
        if not node.shared:
            return slowest, False  # no GPU of the node holds two jobs (a giant job's nodes: not one per GPU)
        sharing = False
        whole = job.gpu_milli >= 1000
        gpus = node.gpus
        for i in ids:
            holders = gpus[i]
            if len(holders) < 2:
                continue
            sharing = True
            if not whole:
                return slowest, True  # a fraction of a GPU runs at full speed
            speed = alone
            for other in holders:
                if other is not job:
                    factor = factors.get((other, gpu_type))
                    if factor is None:
                        factor = factors[other, gpu_type] = self.pair(job, other, gpu_type)
                    speed *= factor
            slowest = min(slowest, speed)
        return slowest, sharing

    def pair(self, job: Job, other: Job, gpu_type: str) -> float:
        """``job``'s speed beside ``other`` on a GPU of ``gpu_type`` ÷ its speed alone there."""
        keys = table_keys(self.throughputs, job, other) if self.throughputs is not None else None
        if keys is not None:
            return self.throughputs.pair_factor(*keys, gpu_type)  # type: ignore[union-attr]
        assert self.colocation is not None, "jobs without a throughput table share GPUs under sharing policies only"
        model = self.colocation.on(gpu_type) if self._per_type else self.colocation  # type: ignore[attr-defined]
        return model.pair_speeds(job.workload or UNKNOWN, job.gpu_num, other.workload or UNKNOWN, other.gpu_num)[0]

    def pair_speeds(self, a: Job, b: Job, gpu_types: tuple[str, ...]) -> tuple[float, float]:
        """The speeds (shared ÷ alone) ``a`` and ``b`` are predicted to have sharing GPUs of ``gpu_types``: the
        throughput table's, averaged over those types, for jobs that have it; else the colocation model's."""
        keys = table_keys(self.throughputs, a, b)
        if keys is not None:
            return self.throughputs.mean_pair_factors(*keys, gpu_types)  # type: ignore[union-attr]
        assert self.colocation is not None, "only sharing policies ask for pair speeds"
        if self._per_type:  # the mean over the types of the VC's GPUs, as the throughput table's
            return self.colocation.pair_speeds(a.workload or UNKNOWN, a.gpu_num, b.workload or UNKNOWN, b.gpu_num,
                                               gpu_types=gpu_types)  # type: ignore[call-arg]
        return self.colocation.pair_speeds(a.workload or UNKNOWN, a.gpu_num, b.workload or UNKNOWN, b.gpu_num)


def spanned_level(job: Job) -> int:
    """The highest level of the cluster's topology that ``job``'s nodes span, as its index top-down (the
    number of levels: the node level); a node outside the topology spans every level.

    >>> from simcluster.cluster import Cluster
    >>> from simcluster.cluster_spec import ClusterSpec
    >>> a, b, c = Cluster(ClusterSpec.uniform({"v": 3}, 8), 8).vcs["v"].nodes
    >>> a.domains, b.domains, c.domains = (0, 0), (0, 1), (0, 1)
    >>> job = Job(index=0, job_id="j", vc="v", gpu_num=16, submit_time=0, duration=10)
    >>> job.allocation = ((a, [0]), (b, [0]))
    >>> spanned_level(job)
    1
    >>> job.allocation = ((b, [0]), (c, [0]))
    >>> spanned_level(job)
    2
    """
    nodes = [node for node, _ in job.allocation]
    first = nodes[0].domains
    if first is None or any(node.domains is None for node in nodes):
        return 0
    for k, domain in enumerate(first):
        if any(node.domains[k] != domain for node in nodes):  # type: ignore[index]
            return k
    return len(first)
