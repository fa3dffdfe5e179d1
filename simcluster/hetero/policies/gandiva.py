"""Gandiva (OSDI'18) as Gavel models it: random packing, keeping only the pairs that help."""

from __future__ import annotations

import numpy as np

from simcluster.hetero.policies.base import HETERO_POLICIES, Allocation, AllocationInput, HeteroPolicy


@HETERO_POLICIES.register("gandiva")
class Gandiva(HeteroPolicy):
    """Gandiva: random pairs of jobs share GPUs while that helps; equal shares otherwise (agnostic).

    When jobs ask for more GPUs than the cluster has, unpaired jobs are paired at random (equal scale factors only); a pair is kept while its
    combined normalised throughput (Σ paired ÷ solo, averaged over GPU types) exceeds 1 — it helps —
    and split otherwise.  Every unit (job alone or pair) then gets an equal share of every GPU type
    (as ``isolated``).  No LP; pairs persist across reallocations while both jobs are active.
    """

    aware = False
    packing = True

    def __init__(self, seed: int = 0) -> None:
        super().__init__(seed)
        self.rng = np.random.default_rng(seed)
        self.kept: set[tuple[int, int]] = set()  # pairs of engine job indices

    def allocate(self, inp: AllocationInput) -> Allocation:
        out = Allocation.empty(inp)
        row = {job: i for i, job in enumerate(inp.ids)}
        index = {(int(inp.ids[a]), int(inp.ids[b])): p for p, (a, b) in enumerate(inp.pairs)}
        self.kept = {pair for pair in self.kept if pair in index}
        paired = {job for pair in self.kept for job in pair}
        demand = float(inp.scale.sum())
        if demand > float(inp.capacity.sum()):
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
        units_scale = []
        units: list[tuple[str, int]] = []
        paired = {job for pair in self.kept for job in pair}
        for job in inp.ids:
            if job not in paired:
                units.append(("single", row[job]))
                units_scale.append(inp.scale[row[job]])
        for key in sorted(self.kept):
            units.append(("pair", index[key]))
            units_scale.append(inp.scale[row[key[0]]])
        scale = np.asarray(units_scale)
        x = np.tile(inp.capacity / len(units), (len(units), 1)) / scale[:, None]
        x /= max(float(x.sum(axis=1).max()), 1.0)
        for (kind, r), share in zip(units, x):
            if kind == "single":
                out.single[r] = share * (inp.throughput[r] > 0)
            else:
                out.pair[r] = share * (inp.pair_throughput[r].min(axis=1) > 0)
        return out
