from __future__ import annotations

import random
from itertools import islice

from simcluster.cluster import Pool
from simcluster.job import Job
from simcluster.placement.base import PLACEMENTS, Placement, Plan, lowest_node


@PLACEMENTS.register("consolidate")
class Consolidate(Placement):
    """Whole nodes for big jobs, the fullest fitting node for small ones (Helios/Lucid).

    - A job of at most one node's GPUs goes on the node with the fewest free
      GPUs that can hold all of it (ties: node order).
    - A larger job takes, for each full node's worth, a node whose GPUs are
      all free (node order), and puts the remainder on the node with the most
      free GPUs among the rest (ties: node order) if it holds the remainder.
      This is exactly what the Helios and Lucid simulators do, so results
      can be compared with their published outputs.
    """

    name = "consolidate"
    monotone = True  # a job no node (or set of idle nodes) holds now is not held once more GPUs are taken

    def __init__(self, rng: random.Random | None = None) -> None:
        pass

    def place(self, job: Job, vc: Pool) -> Plan | None:
        need, per = job.gpu_num, vc.gpus_per_node
        if need > vc.free_gpus:
            return None
        if need <= per:
            buckets = vc.buckets
            for k in range(need, per + 1):
                if mask := buckets[k]:
                    return [(lowest_node(vc, mask), need)]
            return None
        full, rem = divmod(need, per)
        if vc.buckets[per].bit_count() < full:  # fewer wholly idle nodes than it needs (a blocked big job)
            return None
        idle = list(islice(vc.nodes_with_free(per), full + 1))  # (the first ones only: not every idle node)
        plan: Plan = [(node, per) for node in idle[:full]]
        if rem:
            if len(idle) > full:
                plan.append((idle[full], rem))
            else:
                fullest = next((k for k in range(per - 1, 0, -1) if vc.buckets[k]), 0)
                if fullest < rem:
                    return None
                plan.append((lowest_node(vc, vc.buckets[fullest]), rem))
        return plan
