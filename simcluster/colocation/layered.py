"""Measurements first: the colocation model of a run on a GPU type our profiler measured.

On GPU type G (``h100``: the folder ``traces/profiles/measured/h100``) every lookup is answered by the
first of two layers that can:

1. ``measured``: the pair was measured on G by our profiler (the same two configurations and GPU
   counts, either orientation; for memory and utilization, the same configuration alone): its
   measurement;
2. a fitted model that answers anything: the calibrated model refitted to G's measurements
   (``refit``: ``G/calibrated/parameters.json``), or, where no refit is committed, the calibrated
   model fitted to Lucid's RTX 3090 measurements (``calibrated``).

Interpolating between G's own measurements (what ``--colocation h100`` does) is not a layer: with one
batch size measured per workload it is mostly an average over other partners, where the refit is a
model of why a pair slows down.  :meth:`MeasuredFirst.answered_by` counts the lookups each layer
answered, for the run's ``summary.json``.

The tables this model shows its users (``single``, ``pair``: what lucid's packing classifier learns
from) are the fitted model's, with G's measured rows in place of the fitted ones for the same keys.

>>> import pandas as pd
>>> from simcluster.colocation.model import ColocationModel
>>> from simcluster.colocation.schema import SINGLE_COLUMNS
>>> from simcluster.job import Workload
>>> def pairs(speed): return pd.DataFrame([dict(model1="A", dataset1="d", batchsize1=32, amp1=0, gpu_num1=1,
...     model2="B", dataset2="d", batchsize2=32, amp2=0, gpu_num2=1, iters_per_s1=1.0, iters_per_s2=1.0,
...     speed1=speed, speed2=speed, gpu_util=None, gmem_util=None, gmem=None, status="ok", error="")])
>>> single = pd.DataFrame(columns=SINGLE_COLUMNS)
>>> fitted = ColocationModel(single, pairs(0.9), per_gpu=True)  # as the calibrated model: per GPU
>>> model = MeasuredFirst(ColocationModel(single, pairs(0.6)), fitted, fitted_as="refit", gpu="h100",
...                       source="example", provenance={"kind": "measured"})
>>> a, b = Workload("A", "d", 32, 0), Workload("B", "d", 32, 0)
>>> model.pair_speeds(a, 1, b, 1), model.pair_speeds(a, 2, b, 2)  # measured on one GPU; not on two
((0.6, 0.6), (0.9, 0.9))
>>> model.answered_by()
{'measured': 1, 'refit': 1}
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from simcluster.colocation.model import FALLBACK_STEPS, ColocationModel
from simcluster.colocation.schema import PAIR_KEY, SINGLE_KEY
from simcluster.job import Workload

__all__ = ["MEASURED", "MeasuredFirst"]

MEASURED = "measured"
"""The name of the first layer in :meth:`MeasuredFirst.answered_by`."""
_QUANTITIES = ("pair", "memory", "util", "mem_util")


class MeasuredFirst:
    """A run's colocation model on a measured GPU type: ``measured``'s own measurements, else ``fitted``.

    ``measured``: the tables measured on the GPU type ``gpu``; ``fitted``: the model for everything else,
    named ``fitted_as`` in :meth:`answered_by` (``refit`` or ``calibrated``).  Answers the same questions
    as :class:`~simcluster.colocation.model.ColocationModel`, so the engine and the policies cannot tell.
    """

    def __init__(self, measured: ColocationModel, fitted: ColocationModel, *, fitted_as: str, gpu: str,
                 source: str, provenance: dict[str, Any]) -> None:
        self.measured = measured
        self.fitted = fitted
        self.fitted_as = fitted_as
        self.gpu = gpu
        self.source = source
        self.provenance = provenance
        self.single = _merged(fitted.single, measured.single, SINGLE_KEY)
        self.pair = _merged(fitted.pair, measured.pair, PAIR_KEY, swapped=PAIR_KEY[5:] + PAIR_KEY[:5])
        # per lookup key, whether G measured it: (a, b, speeds or None) by the Workloads' identities, as the
        # fitted model caches its own answers (a Workload's dataclass hash is Python code, an id's is not)
        self._pair_known: dict[tuple[int, int, int, int], tuple[Workload, Workload, tuple[float, float] | None]] = {}
        self._counted = dict.fromkeys(_QUANTITIES, 0)

    # ----------------------------------------------------------------- what the simulator asks
    def pair_speeds(self, a: Workload, a_gpus: int, b: Workload, b_gpus: int) -> tuple[float, float]:
        """Normalized speeds ``(speed of a, speed of b)`` when a and b share GPUs; never fails."""
        key = (id(a), a_gpus, id(b), b_gpus)
        known = self._pair_known.get(key)
        if known is None or known[0] is not a or known[1] is not b:
            known = self._pair_known[key] = (a, b, self.measured.measured_pair_speeds(a, a_gpus, b, b_gpus))
        if known[2] is not None:
            self._counted["pair"] += 1
            return known[2]
        return self.fitted.pair_speeds(a, a_gpus, b, b_gpus)

    def slowdowns(self, a: Workload, a_gpus: int, b: Workload, b_gpus: int) -> tuple[float, float]:
        """Slowdown factors ``xi = 1 / speed`` of a and b when sharing."""
        s1, s2 = self.pair_speeds(a, a_gpus, b, b_gpus)
        return 1.0 / s1, 1.0 / s2

    def memory_mib(self, w: Workload, gpus: int) -> float:
        """GPU memory (MiB, per GPU) of ``w`` alone on ``gpus`` GPUs; never fails."""
        return self._single("memory", w, gpus)

    def solo_util(self, w: Workload, gpus: int) -> float:
        """Mean GPU utilization (%) of ``w`` alone on ``gpus`` GPUs; never fails."""
        return self._single("util", w, gpus)

    def solo_mem_util(self, w: Workload, gpus: int) -> float:
        """Mean GPU memory(-bandwidth) utilization (%) of ``w`` alone on ``gpus`` GPUs; never fails."""
        return self._single("mem_util", w, gpus)

    def _single(self, quantity: str, w: Workload, gpus: int) -> float:
        measured = self.measured.measured_single(quantity, w, gpus)
        if measured is not None:
            self._counted[quantity] += 1
            return measured
        if quantity == "memory":
            return self.fitted.memory_mib(w, gpus)
        return self.fitted.solo_util(w, gpus) if quantity == "util" else self.fitted.solo_mem_util(w, gpus)

    # ----------------------------------------------------------------- bookkeeping
    def answered_by(self, quantity: str = "pair") -> dict[str, int]:
        """Lookups of ``quantity`` by the layer that answered them: ``measured`` and the fitted model's name."""
        return {MEASURED: self._counted[quantity], self.fitted_as: sum(self.fitted.fallback_counts(quantity).values())}

    def fallback_counts(self, quantity: str = "pair") -> dict[str, int]:
        """How many lookups each step answered: measured ones as ``exact``, the rest as the fitted model did."""
        counts = self.fitted.fallback_counts(quantity)
        counts[FALLBACK_STEPS[0]] += self._counted[quantity]
        return counts

    def reset_counts(self) -> None:
        """Zero the counters (the caches stay)."""
        self._counted = dict.fromkeys(_QUANTITIES, 0)
        self.fitted.reset_counts()

    def __repr__(self) -> str:
        return f"MeasuredFirst(gpu={self.gpu!r}, measured={self.measured!r}, {self.fitted_as}={self.fitted!r})"


def _merged(fitted: pd.DataFrame, measured: pd.DataFrame, key: list[str], swapped: list[str] | None = None
            ) -> pd.DataFrame:
    """``fitted``'s rows less those ``measured`` holds (in either orientation, given ``swapped``), then ``measured``'s."""
    taken = set(measured[key].itertuples(index=False, name=None))
    if swapped is not None:
        taken |= set(measured[swapped].itertuples(index=False, name=None))
    keep = [row not in taken for row in fitted[key].itertuples(index=False, name=None)]
    return pd.concat([fitted[keep], measured], ignore_index=True)
