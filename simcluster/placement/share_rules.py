"""The placements of the GPU-sharing literature in the event-driven engine: random-fit, dotprod,
gpu-clustering, gpu-packing, bestfit and fgd (FGD, "Beware of Fragmentation", USENIX ATC'23).

Each scores the nodes with the rule of :mod:`simcluster.fragmentation.rules` (FGD's simulator's
scores, the same code ``lucid-sim fragmentation`` runs) and places fractional jobs itself
(``places_fractions``): the GPU inside the node is the rule's choice (random-fit: a random GPU with room;
fgd: the one that fragments least; the others: best fit).  What differs from FGD's simulator here:

* the engine's cluster has no CPU or memory, so rules see none (every pod fits on CPU; bestfit and
  dotprod weigh the GPU term only; fgd's classes that lack CPU never occur);
* fgd's target workload is the jobs the placement has been asked to place so far (their GPU shapes,
  most frequent making 95 %), not the whole trace known in advance;
* score ties go to the lowest node index (FGD's simulator: a seeded random node order);
* a job larger than every node (no openb pod is) takes whole idle GPUs on the nodes with most idle GPUs.

>>> from simcluster.cluster import VirtualCluster
>>> from simcluster.job import Job
>>> vc = VirtualCluster("c", nodes=2, gpus_per_node=2); vc.track_fractions()
>>> half = Job(index=0, job_id="a", vc="c", gpu_num=1, submit_time=0, duration=1, gpu_milli=500)
>>> _ = vc.nodes[1].attach(half, [1])
>>> quarter = Job(index=1, job_id="b", vc="c", gpu_num=1, submit_time=0, duration=1, gpu_milli=250)
>>> [(n.index, ids) for n, ids in PLACEMENTS.get("bestfit")().place(quarter, vc)]  # beside the half
[(1, [1])]
"""

from __future__ import annotations

import random
from collections import Counter

import numpy as np

from simcluster.cluster import WHOLE, Pool
from simcluster.fragmentation.frag import TypicalPods, typical_pods
from simcluster.fragmentation.rules import NodeArrays, Pod, Rule, allowed_mask, make_rule
from simcluster.job import Job
from simcluster.placement.base import PLACEMENTS, Placement, Plan, fill_in_order


class _PythonDraws:
    """Python's seeded generator where the rules ask for Go's ``Intn``."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def intn(self, n: int) -> int:
        return self.rng.randrange(n)


def _shape_tag(job: Job) -> int:
    return 1 << (0 if job.gpu_milli < WHOLE else job.gpu_num)


class RulePlacement(Placement):
    """A :mod:`~simcluster.fragmentation.rules` rule over the engine's nodes (see the module's doc)."""

    rule_name = "?"
    chooses_types = True
    places_fractions = True

    def __init__(self, rng: random.Random | None = None) -> None:
        super().__init__(rng)
        self._seen: set[Job] = set()
        self._shapes: Counter[tuple[int, int, int]] = Counter()
        self._workload: TypicalPods | None = None
        self._rule: Rule = make_rule(self.rule_name, self._typical(), _PythonDraws(self.rng))

    def _typical(self) -> TypicalPods:
        shapes = list(self._shapes.elements()) or [(WHOLE, 1, 0)]
        milli, num, mask = (np.array(column, dtype=np.int64) for column in zip(*shapes))
        return typical_pods(np.zeros(len(shapes), np.int64), milli, num, [str(m) for m in mask.tolist()], mask)

    def _mask(self, job: Job, types: tuple[str, ...]) -> int:
        if job.speeds is None:
            return 0
        return allowed_mask([job.speed_on(t) > 0 for t in types])

    def _arrays(self, vc: Pool, types: tuple[str, ...]) -> NodeArrays:
        count = len(vc.nodes)
        left = np.zeros((count, vc.gpus_per_node), dtype=np.int64)
        tags = np.zeros(count, dtype=np.int64)
        for row, node in enumerate(vc.nodes):
            if not node.up:
                continue
            if node.milli is not None:
                left[row, :node.gpu_count] = WHOLE - np.asarray(node.milli)
            else:
                left[row, node.free_ids] = WHOLE
            if self.rule_name == "gpu-clustering":
                for other in node.jobs:
                    tags[row] |= _shape_tag(other)
        index = {t: i for i, t in enumerate(types)}
        zeros = np.zeros(count, dtype=np.int64)
        return NodeArrays(zeros, zeros, left, np.array([n.gpu_count for n in vc.nodes]),
                          np.array([index.get(n.gpu_type, 0) for n in vc.nodes]), np.arange(count), tags)

    def place(self, job: Job, vc: Pool) -> Plan | None:
        types = tuple(getattr(vc, "gpu_types", (vc.gpu_type,)))
        mask = self._mask(job, types)
        if job not in self._seen:  # the target workload: the shapes of the jobs seen so far
            self._seen.add(job)
            self._shapes[(job.gpu_milli, job.gpu_num, mask)] += 1
            self._workload = None
        if job.gpu_num > vc.gpus_per_node:
            fits = [n for n in vc.nodes if n.up and (job.speeds is None or job.speed_on(n.gpu_type) > 0)]
            return fill_in_order(job, sorted(fits, key=lambda n: -n.free_gpus))
        if self._workload is None and self.rule_name == "fgd":
            self._workload = self._typical()
            self._rule = make_rule(self.rule_name, self._workload, _PythonDraws(self.rng))
        chosen = self._rule.choose(self._arrays(vc, types), Pod(0, 0, job.gpu_num, job.gpu_milli, mask))
        if chosen is None:
            return None
        node, gpus = chosen
        return [(vc.nodes[node], gpus if job.gpu_milli < WHOLE else len(gpus))]


@PLACEMENTS.register("random-fit")
class RandomFit(RulePlacement):
    """A random node the job fits on, a random GPU with room for a fraction (FGD's Random-fit)."""

    name = rule_name = "random-fit"


@PLACEMENTS.register("dotprod")
class DotProduct(RulePlacement):
    """Tetris: the node whose free GPU aligns least with the request (dot product); fractions best fit."""

    name = rule_name = "dotprod"


@PLACEMENTS.register("gpu-clustering")
class GpuClustering(RulePlacement):
    """Jobs of one GPU shape together, fuller nodes first within a band; fractions best fit."""

    name = rule_name = "gpu-clustering"


@PLACEMENTS.register("gpu-packing")
class GpuPacking(RulePlacement):
    """Partly used GPUs first, then partly used nodes, then empty nodes, smaller first; fractions best fit."""

    name = rule_name = "gpu-packing"


@PLACEMENTS.register("bestfit")
class BestFit(RulePlacement):
    """The node with the least GPU left after the job; fractions best fit."""

    name = rule_name = "bestfit"


@PLACEMENTS.register("fgd")
class Fgd(RulePlacement):
    """Fragmentation gradient descent: the node and GPU whose fragmentation grows least for the workload seen."""

    name = rule_name = "fgd"
