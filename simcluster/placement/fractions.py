"""Jobs that take a fraction of each GPU (``gpu_milli`` < 1000, the openb pods): best fit on shared GPUs."""

from __future__ import annotations

from simcluster.cluster import Pool
from simcluster.job import Job
from simcluster.placement.base import Plan


def fraction_plan(job: Job, pools: list[Pool]) -> Plan | None:
    """GPUs for a job taking ``job.gpu_milli`` thousandths of each of its ``gpu_num`` GPUs, in the first
    pool that has them (a VC of several GPU types: type by type): the fullest partly used GPUs that still hold the fraction (least room left
    idle), then idle GPUs on the nodes with the fewest free ones (keeping whole nodes free), or None.

    >>> from simcluster.cluster import VirtualCluster
    >>> vc = VirtualCluster("v", nodes=2, gpus_per_node=2); vc.track_fractions()
    >>> half = Job(index=0, job_id="a", vc="v", gpu_num=1, submit_time=0, duration=1, gpu_milli=500)
    >>> [(n.index, ids) for n, ids in fraction_plan(half, [vc])]
    [(0, [0])]
    >>> _ = vc.nodes[0].attach(half, [0])
    >>> [(n.index, ids) for n, ids in fraction_plan(half, [vc])]  # the half-used GPU holds another half
    [(0, [0])]
    """
    for pool in (p for given in pools for p in getattr(given, "pools", {"": given}).values()):
        chosen: dict[tuple[int, int], None] = {}
        while len(chosen) < job.gpu_num:
            spot = pool.fractions.best_fit(job.gpu_milli, set(chosen)) or _idle_gpu(pool, set(chosen))
            if spot is None:
                break
            chosen[spot] = None
        if len(chosen) == job.gpu_num:
            plan: dict[int, list[int]] = {}
            for slot, gpu in sorted(chosen):
                plan.setdefault(slot, []).append(gpu)
            return [(pool.nodes[slot], ids) for slot, ids in plan.items()]
    return None


def _idle_gpu(pool: Pool, taken: set[tuple[int, int]]) -> tuple[int, int] | None:
    """(node slot, GPU) of an idle GPU on the node with the fewest idle GPUs (ties: node order)."""
    for k in range(1, pool.gpus_per_node + 1):
        for node in pool.nodes_with_free(k):
            gpu = next((i for i in node.free_ids if (node.slot, i) not in taken), None)
            if gpu is not None:
                return node.slot, gpu
    return None
