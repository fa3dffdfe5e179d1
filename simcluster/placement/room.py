"""Whether a job would find room once some running jobs leave: what a policy asks before it preempts for a job.

A policy that takes GPUs back for a waiting job (Kueue's preemption, the tiers' evictions) should not take them
where the job still could not be placed: the victims would lose their work for nothing, and, started again at
once on the GPUs they left, be taken again at the next pass.  The answer here is the room a placement that keeps
a job together needs (``consolidate``, the default): for a job of one node's GPUs or fewer, one node with that
many free; for a larger one, an idle node per whole node of GPUs and the rest on one more node.  A test of the
nodes, not a placement: where a placement spreads jobs otherwise, it may find room this says is missing (a
preemption forgone) or, rarely, none where this finds some.

>>> from simcluster.cluster import VirtualCluster
>>> from simcluster.job import Job
>>> vc = VirtualCluster("v", nodes=2)
>>> a, b = (Job(index=i, job_id=n, vc="v", gpu_num=4, submit_time=0, duration=9) for i, n in enumerate("ab"))
>>> a.allocation = ((vc.nodes[0], vc.nodes[0].allocate(a, 4)),)
>>> b.allocation = ((vc.nodes[1], vc.nodes[1].allocate(b, 4)),)
>>> big = Job(index=2, job_id="big", vc="v", gpu_num=12, submit_time=0, duration=9)
>>> fits_once_freed(big, [], vc), fits_once_freed(big, [a], vc), fits_once_freed(big, [a, b], vc)
(False, True, True)
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def fits_once_freed(job: Any, leaving: Iterable[Any], vc: Any) -> bool:
    """Whether ``job`` (waiting) finds room in ``vc`` once the running jobs ``leaving`` have left (module docstring).

    A job asking for fractions of GPUs, or a pool of nodes of several sizes, is judged by GPU counts alone."""
    freed: dict[Any, int] = {}
    for other in leaving:
        for node, ids in other.allocation:
            freed[node] = freed.get(node, 0) + len(ids)
    size = vc.gpus_per_node
    uniform = all(node.gpu_count == size for node in freed)
    if job.gpu_milli < 1000 or not size or not uniform:
        return vc.free_gpus + sum(freed.values()) >= job.gpus
    after = [node.free_gpus + n for node, n in freed.items() if node.up]
    if job.gpu_num <= size:
        return any(free >= job.gpu_num for free in after) or any(vc.buckets[k] for k in range(job.gpu_num, size + 1))
    whole_nodes, rest = divmod(job.gpu_num, size)
    idle = vc.buckets[size].bit_count() + sum(free == size for free in after)
    if idle < whole_nodes:
        return False
    if not rest or idle > whole_nodes:
        return True
    return any(rest <= free < size for free in after) or any(vc.buckets[k] for k in range(rest, size))
