"""First in, first out in rounds (Gavel's FIFO baselines).

Gavel's agnostic FIFO is registered as ``gavel_fifo``: ``fifo`` is the event-driven FIFO of the
Helios and Lucid simulators (:mod:`simcluster.policies.fifo`), which needs no rounds.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from simcluster.config import SimConfig
from simcluster.policies.base import POLICIES
from simcluster.policies.gavel.allocation import Allocation, AllocationInput
from simcluster.policies.gavel.rounds import RoundPolicy

PACKING_THRESHOLD = 1.5  # fifo_packed pairs a waiting job only if Σ paired/solo throughput exceeds this


def _greedy(inp: AllocationInput, single: np.ndarray, free: np.ndarray, queue: list[int],
            choose: Callable[[list[int], list[float]], int]) -> list[int]:
    """Give each queued job (arrival order) a GPU type with room; stop at the first that fits nowhere.

    ``choose(fits, throughputs)`` picks among the types with room (ascending) given the job's throughput on
    each type.  One job at a time in Python floats (the same float64 sums as arrays, at a fraction of the cost
    for a few types); ``free`` is updated in place.

    >>> inp = AllocationInput([0, 1, 2], np.array([[1.0, 2.0], [1.0, 0.0], [1.0, 1.0]]), np.array([1.0, 2.0, 1.0]),
    ...                       np.ones(3), np.ones(3), np.zeros(3), np.array([1.0, 2.0]))
    >>> single, free = np.zeros((3, 2)), inp.capacity.copy()
    >>> _greedy(inp, single, free, [0, 1, 2], _fastest), single.tolist(), free.tolist()
    ([1, 2], [[0.0, 1.0], [0.0, 0.0], [0.0, 0.0]], [1.0, 1.0])
    """
    left: list[int] = []
    room = free.tolist()
    types = range(len(room))
    for k, i in enumerate(queue):
        need = float(inp.scale[i])
        throughputs = inp.throughput[i].tolist()
        fits = [j for j in types if room[j] >= need - 1e-9 and throughputs[j] > 0]
        if not fits:
            left = queue[k:]
            break
        j = choose(fits, throughputs)
        single[i, j] = 1.0
        room[j] -= need
    free[:] = room
    return left


def _fastest(fits: list[int], throughputs: list[float]) -> int:
    """The type with room where the job runs fastest (the first of equals, as ``np.argmax``)."""
    return max(fits, key=throughputs.__getitem__)


@POLICIES.register("gavel_fifo")
class GavelFifo(RoundPolicy):
    """Gavel's FIFO, agnostic: arrival order in rounds, a random GPU type with room; a placed job keeps its type.

    A job keeps its GPU type once placed; the next jobs take a random GPU type with room (seeded); head-of-line blocking when the next job fits nowhere.

    No LP: the allocation is 1 for the job's type, 0 elsewhere; jobs the allocation leaves out never
    get GPUs at round boundaries (they may still take GPUs freed mid-round, in arrival order).
    """

    aware = False
    fifo = True
    reads_remaining = False

    def __init__(self, config: SimConfig | None = None) -> None:
        super().__init__(config)
        self.rng = np.random.default_rng(self.seed)
        self.placed: dict[int, int] = {}  # job index -> GPU type

    def allocate(self, inp: AllocationInput) -> Allocation:
        out = Allocation.empty(inp)
        free = inp.capacity.astype(float).copy()
        row = {job: i for i, job in enumerate(inp.ids)}
        self.placed = {job: j for job, j in self.placed.items() if job in row}
        for job, j in self.placed.items():
            out.single[row[job], j] = 1.0
            free[j] -= inp.scale[row[job]]
        queue = [i for i, job in enumerate(inp.ids) if job not in self.placed]
        _greedy(inp, out.single, free, queue, lambda fits, _: int(self.rng.choice(fits)))
        for i in np.flatnonzero(out.single.any(axis=1)).tolist():
            self.placed[inp.ids[i]] = int(out.single[i].argmax())
        return out


@POLICIES.register("fifo_perf")
class FifoPerf(RoundPolicy):
    """Gavel's FIFO, aware: arrival order in rounds, each job on the fastest GPU type (for it) with room.

    At every reallocation jobs, oldest first, take the fastest GPU type (for them) that still has room; head-of-line blocking.  No LP."""

    fifo = True
    reads_remaining = False

    def allocate(self, inp: AllocationInput) -> Allocation:
        out = Allocation.empty(inp)
        free = inp.capacity.astype(float).copy()
        _greedy(inp, out.single, free, list(range(inp.n)), _fastest)
        return out


@POLICIES.register("fifo_packed")
class FifoPacked(FifoPerf):
    """Gavel's FIFO with packing: ``fifo_perf``, then waiting jobs pair with placed ones when that helps.

    ``fifo_perf``, then the jobs still waiting (oldest first) share GPUs with a placed job of the
    same scale factor when their combined normalised throughput (Σ paired ÷ solo) exceeds 1.5 —
    the best such partner; stops at the first waiting job with none (Gavel's FIFO packing).  No LP."""

    packing = True

    def allocate(self, inp: AllocationInput) -> Allocation:
        out = Allocation.empty(inp)
        free = inp.capacity.astype(float).copy()
        queue = _greedy(inp, out.single, free, list(range(inp.n)), _fastest)
        if not queue or not len(inp.pairs):
            return out
        index = np.full((inp.n, inp.n), -1, dtype=np.int64)
        index[inp.pairs[:, 0], inp.pairs[:, 1]] = np.arange(len(inp.pairs))
        alone = {i: int(out.single[i].argmax()) for i in range(inp.n) if out.single[i].any()}
        for i in queue:
            best, best_gain = None, PACKING_THRESHOLD
            for k, j in alone.items():
                p = int(index[min(i, k), max(i, k)])
                if p < 0:
                    continue
                a, b = inp.pairs[p]
                gain = (inp.pair_throughput[p, j, 0] / max(inp.throughput[a, j], 1e-12)
                        + inp.pair_throughput[p, j, 1] / max(inp.throughput[b, j], 1e-12))
                if min(inp.pair_throughput[p, j]) > 0 and gain > best_gain:
                    best, best_gain = (k, p, j), gain
            if best is None:
                break
            k, p, j = best
            del alone[k]
            out.single[k, j] = 0.0
            out.pair[p, j] = 1.0
        return out
