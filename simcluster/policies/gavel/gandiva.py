"""Gandiva (OSDI'18) as Gavel models it: random packing of jobs onto shared GPUs, equal shares."""

from __future__ import annotations

import numpy as np

from simcluster.config import SimConfig
from simcluster.policies.base import POLICIES
from simcluster.policies.gavel.allocation import Allocation, AllocationInput
from simcluster.policies.gavel.lp import isolated_allocation
from simcluster.policies.gavel.rounds import RoundPolicy

Pair = tuple[int, int]  # engine job indices, smaller first


@POLICIES.register("gandiva")
class Gandiva(RoundPolicy):
    """Gandiva: random pairs of jobs share GPUs while the cluster is oversubscribed; equal shares (agnostic).

    While jobs ask for more GPUs than the cluster has, unpaired jobs are paired at random (equal scale
    factors only) and each *unit* — a job alone or a pair — gets an equal share of every GPU type
    (as ``isolated``); when everything fits, every job runs alone (pairs are remembered for later).
    No LP; pairs persist across reallocations while both jobs are active.  Which pairs
    (``--gandiva-pairing``):

    * ``helpful`` (ours): only pairs that can share and whose combined normalised throughput
      (Σ paired ÷ solo, averaged over the GPU types where they can share) exceeds 1 — sharing helps;
    * ``gavel`` (Gavel's simulator): as many random draws as there are unpaired jobs, a pair for
      every draw of equal scale factor, untested; a later reallocation splits the pairs whose sum
      *over GPU types* of Σ paired ÷ solo is below 1, or that cannot share on some type.  Until then
      a pair that cannot share anywhere (every multi-GPU pair in Gavel's table) holds a unit's share
      it cannot use, and its jobs only take GPUs other units leave idle.
    """

    reads = RoundPolicy.reads | {"gandiva_pairing"}

    aware = False
    packing = True
    reads_remaining = False

    def __init__(self, config: SimConfig | None = None) -> None:
        super().__init__(config)
        self.rng = np.random.default_rng(self.seed)
        self.kept: set[Pair] = set()

    def allocate(self, inp: AllocationInput) -> Allocation:
        gavel = self.options.gandiva_pairing == "gavel"
        row = {job: i for i, job in enumerate(inp.ids)}
        index = {(int(inp.ids[a]), int(inp.ids[b])): p for p, (a, b) in enumerate(inp.pairs)}
        self.kept = {pair for pair in self.kept if pair[0] in row and pair[1] in row
                     and (not gavel or _passes_gavel_test(inp, index.get(pair)))}
        out = Allocation.empty(inp)
        if float(inp.scale.sum()) <= float(inp.capacity.sum()):  # everything fits: nobody shares
            out.single[:] = isolated_allocation(inp) * (inp.throughput > 0)
            return out
        if gavel:
            self._pair_at_random(inp, row)
        else:
            self._pair_helpfully(inp, index)
        paired = {job for pair in self.kept for job in pair}
        singles = [row[job] for job in inp.ids if job not in paired]
        pairs = sorted(self.kept)
        scale = np.r_[inp.scale[singles], [inp.scale[row[a]] for a, _ in pairs]]
        share = _equal_shares(inp.capacity, scale)
        out.single[singles] = share[: len(singles)] * (inp.throughput[singles] > 0)
        for pair, x in zip(pairs, share[len(singles):]):
            p = index.get(pair)
            if p is not None:  # a pair that cannot share anywhere holds its unit's share unused
                out.pair[p] = x * (inp.pair_throughput[p].min(axis=1) > 0)
        return out

    def _pair_helpfully(self, inp: AllocationInput, index: dict[Pair, int]) -> None:
        paired = {job for pair in self.kept for job in pair}
        loose = [job for job in inp.ids if job not in paired]
        self.rng.shuffle(loose)
        while len(loose) >= 2:
            a = loose.pop()
            partner = next((b for b in loose if (min(a, b), max(a, b)) in index), None)
            if partner is None:
                continue
            key = (min(a, partner), max(a, partner))
            p = index[key]
            i, k = inp.pairs[p]
            usable = inp.pair_throughput[p].min(axis=1) > 0
            gain = (inp.pair_throughput[p, :, 0] / np.maximum(inp.throughput[i], 1e-12)
                    + inp.pair_throughput[p, :, 1] / np.maximum(inp.throughput[k], 1e-12))
            if usable.any() and float(gain[usable].mean()) > 1.0:
                self.kept.add(key)
                loose.remove(partner)

    def _pair_at_random(self, inp: AllocationInput, row: dict[int, int]) -> None:
        paired = {job for pair in self.kept for job in pair}
        loose = [job for job in inp.ids if job not in paired]
        for _ in range(len(loose)):
            if len(loose) < 2:
                break
            a, b = (loose[int(k)] for k in self.rng.choice(len(loose), 2, replace=False))
            if inp.scale[row[a]] != inp.scale[row[b]]:
                continue
            loose.remove(a)
            loose.remove(b)
            self.kept.add((min(a, b), max(a, b)))


def _passes_gavel_test(inp: AllocationInput, p: int | None) -> bool:
    """Gavel's test for keeping a pair: paired throughput on every GPU type, and Σ over the types of
    (paired ÷ solo, summed over the two jobs) at least 1."""
    if p is None:
        return False
    pt = inp.pair_throughput[p]
    if (pt <= 0).any():
        return False
    i, k = inp.pairs[p]
    return float((pt[:, 0] / np.maximum(inp.throughput[i], 1e-12)
                  + pt[:, 1] / np.maximum(inp.throughput[k], 1e-12)).sum()) >= 1.0


def _equal_shares(capacity: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """Every unit 1/u of every GPU type, divided by its scale factor, each capped at all of its time."""
    x = np.tile(capacity / max(len(scale), 1), (len(scale), 1)) / scale[:, None]
    return x / np.maximum(x.sum(axis=1, keepdims=True), 1.0)
