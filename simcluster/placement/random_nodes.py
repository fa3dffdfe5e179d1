from __future__ import annotations

import random

from simcluster.cluster import Pool
from simcluster.job import Job
from simcluster.placement.base import PLACEMENTS, Placement, Plan, fill_in_order


@PLACEMENTS.register("random")
class RandomNodes(Placement):
    """Free GPUs on randomly ordered nodes (seeded), no regard for locality."""

    name = "random"

    def __init__(self, rng: random.Random) -> None:
        self._rng = rng

    def place(self, job: Job, vc: Pool) -> Plan | None:
        if job.gpu_num > vc.free_gpus:
            return None
        candidates = [n for n in vc.nodes if n.free_gpus]
        self._rng.shuffle(candidates)
        return fill_in_order(job, candidates)
