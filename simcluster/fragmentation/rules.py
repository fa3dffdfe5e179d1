"""The six placement rules of the fragmentation literature, as FGD's simulator scores them.

Each rule scores the nodes a pod fits on with an integer from 0 to 100 (Kubernetes' score range;
the rounding makes ties common), the pod goes to the best-scored node, ties to the node that comes
first in :attr:`NodeArrays.rank` (FGD's simulator: the lowest node name, names that begin with a
seeded random permutation), and a rule then picks the GPUs inside the node:

* a pod of whole GPUs takes the node's lowest-numbered idle GPUs (every rule);
* a pod of a fraction of one GPU takes, under ``random-fit``, a uniformly random GPU with room; under
  ``fgd``, the GPU whose use grows the node's fragmentation least (ties: lowest index); under the
  others, the GPU with the least room that still holds it (best fit; ties: lowest index).

Rules and their node scores (see docs/fragmentation.md for the why of each):

``random-fit``  a uniformly random node among those that fit.
``dotprod``     Tetris: 100 × (1 − ⟨free, request⟩ / 2), both (CPU, total GPU) normalised by the largest node
                (128 CPUs, 8 GPUs): pods go where they align least with what is left.
``gpu-clustering``  pods of the same GPU shape together: 75–100 on nodes running only that shape,
                50–75 on nodes running it among others, 25–50 on empty nodes, 0–25 elsewhere; within a band,
                fuller nodes first.
``gpu-packing`` fill partly used GPUs first, then partly used nodes, then empty nodes (smaller first).
``bestfit``     the node with the least CPU and GPU left after the pod (equal weights).
``fgd``         the node whose fragmentation grows least: 100 × sigmoid(−Δfrag / 1000).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from simcluster.fragmentation.frag import TypicalPods, node_frag

WHOLE = 1000
MAX_CPU = 128_000  # FGD normalises by its largest node: 128 CPUs (milli) and 8 GPUs (thousandths)
MAX_GPU = 8_000
SHARE_TAG = 0  # bit of the GPU-shape tags (gpu-clustering): fractional pods; bit k: pods of k whole GPUs


class Draws(Protocol):
    """A random source drawing integers in [0, n): Go's generator in the study, Python's in the engine."""

    def intn(self, n: int) -> int: ...


@dataclass(frozen=True)
class Pod:
    """One pod's request: milli-CPU, memory (MiB), GPUs, thousandths of each, allowed GPU models (bit mask, 0: any)."""

    cpu: int
    mem: int
    num: int
    milli: int
    mask: int = 0

    @property
    def shares(self) -> bool:
        """Whether it takes a fraction of one GPU."""
        return self.num == 1 and self.milli < WHOLE

    @property
    def tag(self) -> int:
        """Its GPU-shape tag bit (gpu-clustering), or 0 for a pod of no GPU."""
        if self.num == 0:
            return 0
        return 1 << (SHARE_TAG if self.milli < WHOLE else self.num)


@dataclass
class NodeArrays:
    """The nodes as arrays, one row per node: what every rule reads.

    ``gpu_left``: thousandths left on each GPU (columns past a node's GPUs hold 0), ``rank``: the
    tie-break order (lower first), ``tags``: bit mask of the GPU shapes of the pods on the node.
    """

    cpu_left: np.ndarray
    mem_left: np.ndarray
    gpu_left: np.ndarray
    gpu_count: np.ndarray
    gpu_type: np.ndarray
    rank: np.ndarray
    tags: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))

    def fits(self, pod: Pod) -> np.ndarray:
        """Nodes with the CPU, memory, GPU model and GPU room the pod needs (FGD's filter)."""
        ok = (self.cpu_left >= pod.cpu) & (self.mem_left >= pod.mem)
        if pod.num == 0:
            return ok
        if pod.mask:
            ok &= ((pod.mask >> self.gpu_type) & 1).astype(bool)
        return ok & ((self.gpu_left >= pod.milli).sum(axis=1) >= pod.num)


def allowed_mask(allowed: list[bool]) -> int:
    """Which of the cluster's GPU models a job may use, as a pod's mask: 0 for all, bits of the allowed ones
    else (a bit no node has when it may use none)."""
    if all(allowed):
        return 0
    return sum(1 << i for i, ok in enumerate(allowed) if ok) or 1 << 62


def best_of(idx: np.ndarray, scores: np.ndarray, rank: np.ndarray) -> int:
    """The node of ``idx`` with the highest score, ties to the lowest rank."""
    top = idx[scores == scores.max()]
    return int(top[np.argmin(rank[top])]) if len(top) > 1 else int(top[0])


def idle_gpus(left: np.ndarray, count: int) -> list[int]:
    """The ``count`` lowest-numbered idle GPUs (FGD's ``AllocateExclusiveGpuId``)."""
    return np.flatnonzero(left == WHOLE)[:count].tolist()


def best_fit_gpu(left: np.ndarray, milli: int) -> int:
    """The GPU with the least room that holds ``milli`` (ties: lowest index)."""
    room = np.where(left >= milli, left, WHOLE + 1)
    return int(np.argmin(room))


def _sigmoid_score(delta: np.ndarray) -> np.ndarray:
    return (1.0 / (1.0 + np.exp(-(delta / 1000.0))) * 100.0).astype(np.int64)


class Rule:
    """A placement rule: node scores, and the GPUs a pod takes on its node."""

    name = "?"

    def node_scores(self, nodes: NodeArrays, pod: Pod, idx: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def gpus(self, nodes: NodeArrays, pod: Pod, node: int) -> list[int]:
        left = nodes.gpu_left[node]
        return [best_fit_gpu(left, pod.milli)] if pod.shares else idle_gpus(left, pod.num)

    def choose(self, nodes: NodeArrays, pod: Pod) -> tuple[int, list[int]] | None:
        """(node, its GPUs) for ``pod``, or None when it fits nowhere."""
        idx = np.flatnonzero(nodes.fits(pod))
        if len(idx) == 0:
            return None
        node = int(idx[0]) if len(idx) == 1 else self.pick(nodes, pod, idx)
        return node, (self.gpus(nodes, pod, node) if pod.num else [])

    def pick(self, nodes: NodeArrays, pod: Pod, idx: np.ndarray) -> int:
        return best_of(idx, self.node_scores(nodes, pod, idx), nodes.rank)


class RandomFit(Rule):
    name = "random-fit"

    def __init__(self, draws: Draws) -> None:
        self.draws = draws

    def pick(self, nodes: NodeArrays, pod: Pod, idx: np.ndarray) -> int:
        ordered = idx[np.argsort(nodes.rank[idx], kind="stable")]
        return int(ordered[self.draws.intn(len(ordered))])

    def gpus(self, nodes: NodeArrays, pod: Pod, node: int) -> list[int]:
        left = nodes.gpu_left[node]
        if not pod.shares:
            return idle_gpus(left, pod.num)
        chosen = 0
        for seen, gpu in enumerate(np.flatnonzero(left >= pod.milli).tolist(), start=1):  # reservoir sampling
            if self.draws.intn(seen) == 0:
                chosen = gpu
        return [chosen]


class DotProduct(Rule):
    name = "dotprod"

    def node_scores(self, nodes: NodeArrays, pod: Pod, idx: np.ndarray) -> np.ndarray:
        free_cpu = nodes.cpu_left[idx] / MAX_CPU
        free_gpu = nodes.gpu_left[idx].sum(axis=1) / MAX_GPU
        dot = 0.0 + free_cpu * (pod.cpu / MAX_CPU) + free_gpu * (pod.num * pod.milli / MAX_GPU)
        return (100.0 * (1.0 - dot / 2.0)).astype(np.int64)


class GpuClustering(Rule):
    name = "gpu-clustering"

    def node_scores(self, nodes: NodeArrays, pod: Pod, idx: np.ndarray) -> np.ndarray:
        if pod.num == 0:
            return np.zeros(len(idx), dtype=np.int64)
        fullness = 25 * (MAX_GPU - nodes.gpu_left[idx].sum(axis=1)) // MAX_GPU
        tags = nodes.tags[idx]
        alone = np.array([t.bit_count() == 1 for t in tags.tolist()], dtype=bool)
        band = np.where(tags & pod.tag, np.where(alone, 75, 50), np.where(tags == 0, 25, 0))
        return fullness + band


class GpuPacking(Rule):
    name = "gpu-packing"

    def node_scores(self, nodes: NodeArrays, pod: Pod, idx: np.ndarray) -> np.ndarray:
        if pod.num == 0:
            return np.zeros(len(idx), dtype=np.int64)
        left = nodes.gpu_left[idx]
        count = nodes.gpu_count[idx]
        idle = (left == WHOLE).sum(axis=1)
        empty = np.maximum(33 - idle, idle)  # an empty node: fewer GPUs first
        # the GPUs the pod would use: those with room, least room first (stable), the first `num` of them
        order = np.argsort(np.where(left >= pod.milli, left, WHOLE + 1), axis=1, kind="stable")[:, :pod.num]
        used = np.take_along_axis(left, order, axis=1)
        new_idle = (used == WHOLE).sum(axis=1)
        on_idle = np.maximum(50 - new_idle, 33)  # takes idle GPUs of a used node
        on_used = np.maximum(100 - (used * 100 // WHOLE).sum(axis=1) // 10, 50)  # only partly used GPUs
        return np.where(idle == count, empty, np.where(new_idle > 0, on_idle, on_used))


class BestFit(Rule):
    name = "bestfit"

    def node_scores(self, nodes: NodeArrays, pod: Pod, idx: np.ndarray) -> np.ndarray:
        cpu = (nodes.cpu_left[idx] - pod.cpu) / MAX_CPU * 0.5
        gpu = (nodes.gpu_left[idx].sum(axis=1) - pod.num * pod.milli) / MAX_GPU * 0.5
        # (FGD then rescales the scores to 0–100 from the lowest to the highest: the best ones stay the best)
        return ((1.0 - (0.0 + cpu + gpu)) * 100.0).astype(np.int64)


class Fgd(Rule):
    """Fragmentation gradient descent: the node (and, for a fraction, the GPU) whose fragmentation grows least.

    ``workload``: the target workload's typical pods; ``frag_now``: the nodes' current fragmentation when
    the caller keeps it (else it is computed).
    """

    name = "fgd"

    def __init__(self, workload: TypicalPods) -> None:
        self.workload = workload

    def candidate_scores(self, nodes: NodeArrays, pod: Pod, idx: np.ndarray,
                         frag_now: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Per node of ``idx``: its score and, for a fractional pod, the GPU that earns it."""
        left = nodes.gpu_left[idx]
        before = frag_now if frag_now is not None else node_frag(
            nodes.cpu_left[idx], left, nodes.gpu_type[idx], self.workload)
        cpu_after = nodes.cpu_left[idx] - pod.cpu
        if pod.shares:
            rows, gpus = np.nonzero(left >= pod.milli)
            after_left = left[rows].copy()
            after_left[np.arange(len(rows)), gpus] -= pod.milli
            after = node_frag(cpu_after[rows], after_left, nodes.gpu_type[idx][rows], self.workload)
            cand = _sigmoid_score(before[rows] - after)
            best = np.full(len(idx), -1, dtype=np.int64)
            np.maximum.at(best, rows, cand)
            first = np.full(len(idx), left.shape[1], dtype=np.int64)
            winners = cand == best[rows]
            np.minimum.at(first, rows[winners], gpus[winners])
            return best, first
        after_left = left.copy()
        if pod.num:  # whole GPUs: the node's idle ones (which ones does not change its fragmentation)
            take = np.cumsum(after_left == WHOLE, axis=1) <= pod.num
            after_left[(after_left == WHOLE) & take] = 0
        after = node_frag(cpu_after, after_left, nodes.gpu_type[idx], self.workload)
        return _sigmoid_score(before - after), np.zeros(len(idx), dtype=np.int64)

    def node_scores(self, nodes: NodeArrays, pod: Pod, idx: np.ndarray) -> np.ndarray:
        return self.candidate_scores(nodes, pod, idx)[0]

    def gpus(self, nodes: NodeArrays, pod: Pod, node: int) -> list[int]:
        if not pod.shares:
            return idle_gpus(nodes.gpu_left[node], pod.num)
        return [int(self.candidate_scores(nodes, pod, np.array([node]))[1][0])]


RULE_NAMES = ("random-fit", "dotprod", "gpu-clustering", "gpu-packing", "bestfit", "fgd")
ALIASES = {"random": "random-fit"}


def make_rule(name: str, workload: TypicalPods, draws: Draws) -> Rule:
    """The rule called ``name`` (``random`` also names ``random-fit``)."""
    name = ALIASES.get(name, name)
    if name == "random-fit":
        return RandomFit(draws)
    if name == "fgd":
        return Fgd(workload)
    rules: dict[str, type[Rule]] = {"dotprod": DotProduct, "gpu-clustering": GpuClustering,
                                    "gpu-packing": GpuPacking, "bestfit": BestFit}
    if name not in rules:
        raise ValueError(f"unknown placement {name!r}; choose from {', '.join(RULE_NAMES)}")
    return rules[name]()
