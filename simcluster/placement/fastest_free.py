"""The type-aware placement: a job on the fastest GPU type with room for it (issue 16)."""

from __future__ import annotations

import random
from typing import cast

from simcluster.cluster import Pool, VirtualCluster
from simcluster.job import Job
from simcluster.placement.base import PLACEMENTS, Placement, Plan, fill_in_order
from simcluster.placement.consolidate_first import ConsolidateFirst


@PLACEMENTS.register("fastest-free")
class FastestFree(Placement):
    """Heterogeneity-aware: the fastest GPU type (for the job) with room for all of it, consolidated there.

    GPU types are tried by the job's speed on them (ties: fastest first for the cluster), and within
    a type the job is placed as ``consolidate-first`` places it.  A policy that starts jobs in its own
    order of urgency (srtf, tiresias: shortest remaining time, least attained service) thus puts the
    jobs it ranks first on the fastest free GPUs.  A job larger than every type it runs on spreads over
    them (at the speed of its slowest GPU).  On a VC of one type this is ``consolidate-first``.
    """

    name = "fastest-free"
    chooses_types = True  # the engine hands it the whole VC, whatever types the job may use

    def __init__(self, rng: random.Random | None = None) -> None:
        self._within = ConsolidateFirst()

    def place(self, job: Job, pool: Pool) -> Plan | None:
        vc = cast(VirtualCluster, pool)  # chooses_types: always the whole VC
        if len(vc.pools) == 1:
            return self._within.place(job, vc) if job.speed_on(vc.gpu_types[0]) > 0 else None
        rank = {t: i for i, t in enumerate(vc.fastest_first)}
        types = sorted((t for t in vc.gpu_types if job.speed_on(t) > 0), key=lambda t: (-job.speed_on(t), rank[t]))
        for t in types:
            if vc.pools[t].free_gpus >= job.gpu_num:
                plan = self._within.place(job, vc.pools[t])
                if plan is not None:
                    return plan
        if types and job.gpu_num > max(vc.pools[t].total_gpus for t in types):
            # fastest type first, as much of each as is free (fullest-free nodes first)
            return fill_in_order(job, [node for t in types for k in range(vc.pools[t].gpus_per_node, 0, -1)
                                       for node in vc.pools[t].nodes_with_free(k)])
        return None
