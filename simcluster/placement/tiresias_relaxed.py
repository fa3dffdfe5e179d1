from __future__ import annotations

import csv
import random
from importlib.resources import files

from simcluster.cluster import Pool
from simcluster.job import Job
from simcluster.placement.base import PLACEMENTS, Placement, Plan
from simcluster.placement.consolidate import Consolidate
from simcluster.placement.consolidate_first import ConsolidateFirst

SENSITIVE_MODELS_FILE = "tiresias_sensitive_models.csv"


def sensitive_models() -> frozenset[str]:
    """Models whose training slows down when spread over nodes (simcluster/data/tiresias_sensitive_models.csv)."""
    with files("simcluster.data").joinpath(SENSITIVE_MODELS_FILE).open() as f:
        return frozenset(row["model"] for row in csv.DictReader(f))


@PLACEMENTS.register("tiresias")
class TiresiasRelaxed(Placement):
    """Tiresias' placement relaxation: consolidate models sensitive to spreading, let the others spread.

    A job whose model is in the data file ``tiresias_sensitive_models.csv``
    (large, skewed tensors: VGG, LSTM, Transformer, BERT, ...) is placed
    consolidated or waits; any other job — and a job with no model — may be
    spread over the fewest nodes when consolidation fails.
    """

    name = "tiresias"

    def __init__(self, rng: random.Random | None = None, sensitive: frozenset[str] | None = None) -> None:
        self.sensitive = sensitive_models() if sensitive is None else sensitive
        self._consolidate, self._relaxed = Consolidate(), ConsolidateFirst()

    def place(self, job: Job, vc: Pool) -> Plan | None:
        if job.workload is not None and job.workload.model in self.sensitive:
            return self._consolidate.place(job, vc)
        return self._relaxed.place(job, vc)
