from __future__ import annotations

import random

from simcluster.cluster import Pool
from simcluster.job import Job
from simcluster.placement.base import PLACEMENTS, Placement, Plan, fill_in_order
from simcluster.placement.consolidate import Consolidate


@PLACEMENTS.register("consolidate-first")
class ConsolidateFirst(Placement):
    """Consolidated if possible, else spread over the fewest nodes.

    Spreading takes the nodes with the most free GPUs first (ties: node
    order), which needs the fewest nodes for the job.
    """

    name = "consolidate-first"

    def __init__(self, rng: random.Random | None = None) -> None:
        self._consolidate = Consolidate()

    def place(self, job: Job, vc: Pool) -> Plan | None:
        plan = self._consolidate.place(job, vc)
        if plan is not None or job.gpu_num > vc.free_gpus:
            return plan
        by_free = [n for k in range(vc.gpus_per_node, 0, -1) for n in vc.nodes_with_free(k)]
        return fill_in_order(job, by_free)
