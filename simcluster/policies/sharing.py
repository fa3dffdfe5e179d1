"""GPU sharing for policies: where a job may squeeze in next to running jobs, and when it pays.

Two rules from the "wise resource sharing" line of work (IWQoS'24):

- **all shared** (aggressive): a job that cannot get enough idle GPUs may take
  GPUs that hold exactly one job, as long as memory fits; no interference check.
- **wise sharing** (conditional): waiting job A may share with resident job B
  only if running together is predicted to lower their total (equivalently,
  average) completion time.  With remaining exclusive times a, b and slowdown
  factors ξA = 1/speedA, ξB = 1/speedB from the colocation table::

      together until the first finishes, then the other alone:
        if a·ξA <= b·ξB:  tA = a·ξA,  tB = tA + (b − tA/ξB)
        else:             tB = b·ξB,  tA = tB + (a − tB/ξA)
        t_con = tA + tB
      one after the other (B finishes, then A runs alone):
        t_seq = b + (b + a)

  A shares with B only if t_con < t_seq; partner GPUs are taken in
  ascending t_con, and if not enough GPUs qualify A keeps waiting.

Sharing never preempts.  A GPU holds at most ``max_jobs_per_gpu`` jobs and
only while their memory fits in its memory (``gpu_memory`` where the cluster does not say).
Slowdowns come from :meth:`~simcluster.policies.base.SchedulingContext.pair_speeds`: the colocation
model, or for jobs of a trace with a throughput table (Gavel's), its pairs.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from heapq import heappop, heappush

from simcluster.cluster import Node, VirtualCluster
from simcluster.job import Job
from simcluster.placement import Plan
from simcluster.policies.base import SchedulingContext

PartnerCost = Callable[[Job, Job], "float | None"]  # (waiting, resident) → cost, None = refuse


def share_anyone(waiting: Job, resident: Job) -> float:
    return 0.0


def completion_times(a: float, b: float, xi_a: float, xi_b: float) -> tuple[float, float]:
    """(t_con, t_seq): total completion time of A and B run together, and B then A.

    >>> completion_times(100, 100, 1.2, 1.2)   # mild slowdown: sharing pays
    (240.0, 300)
    >>> completion_times(100, 1000, 1.1, 1.1)[0] < completion_times(100, 1000, 1.1, 1.1)[1]
    True
    """
    ta, tb = a * xi_a, b * xi_b
    if ta <= tb:
        tb = ta + (b - ta / xi_b)
    else:
        ta = tb + (a - tb / xi_a)
    return ta + tb, b + (b + a)


def wise_partner_cost(ctx: SchedulingContext) -> PartnerCost:
    """t_con of sharing with ``resident`` if it beats running one after the other, else None."""
    now = ctx.now

    def cost(waiting: Job, resident: Job) -> float | None:
        speed_w, speed_r = ctx.pair_speeds(waiting, resident)
        t_con, t_seq = completion_times(waiting.remaining_at(now), resident.remaining_at(now), 1 / speed_w, 1 / speed_r)
        return t_con if t_con < t_seq else None

    return cost


def may_share_on(node: Node, need: int, max_jobs: int) -> bool:
    """Whether a job of ``need`` GPUs (at most a node's) might share on ``node``: it has too few idle GPUs for
    the job (else the job would not share) and, where a GPU holds at most two jobs, enough idle and singly used
    ones.  A node that fails this is no candidate whatever its partners cost, so their slowdowns are not
    looked up (``colocation_fallbacks`` counts the lookups made)."""
    return node.gpu_count - node.used < need and (max_jobs != 2 or need <= node.gpu_count - node.shared)


def room_mask(vc: VirtualCluster, need: int, max_jobs: int) -> int:
    """The VC's up nodes that :func:`may_share_on` can pass for a job of ``need`` GPUs, as a mask of node bits
    (node ``i`` is bit ``i``): where a GPU holds at most two jobs, those with at least ``need`` GPUs idle or
    held by one job (the VC files its nodes by that count); else every up node.  A one-node plan then looks
    only at the nodes of this mask, not at every node with some count of idle GPUs.

    >>> vc = VirtualCluster("v", nodes=3, gpus_per_node=4)
    >>> bin(room_mask(vc, 4, 2)), bin(room_mask(vc, 5, 2)), bin(room_mask(vc, 5, 3))
    ('0b111', '0b0', '0b111')
    """
    mask = 0
    for bucket in vc.unshared[need if max_jobs == 2 else 0:]:  # (every up node is in one of them)
        mask |= bucket
    return mask


def nodes_in(nodes: list[Node], mask: int) -> Iterator[Node]:
    """The nodes of the bits of ``mask``, in node order.

    >>> vc = VirtualCluster("v", nodes=4, gpus_per_node=2)
    >>> [node.index for node in nodes_in(vc.nodes, 0b1010)]
    [1, 3]
    """
    while mask:
        low = mask & -mask
        yield nodes[low.bit_length() - 1]
        mask ^= low


def shared_plan(job: Job, vc: VirtualCluster, ctx: SchedulingContext, partner_cost: PartnerCost) -> Plan | None:
    """Idle GPUs plus shareable ones for ``job``, using as few shared GPUs as possible.

    A job of at most one node's GPUs stays on one node (the one needing the
    fewest shared GPUs, then the cheapest partners, then node order); a
    larger job takes the nodes with the most usable GPUs first.  Returns None
    if there are not enough usable GPUs.
    """
    config = ctx.config
    costs: dict[Job, float | None] = {}
    max_jobs, default_memory, memory = config.max_jobs_per_gpu, config.gpu_memory, job.memory

    def usable(node: Node) -> tuple[list[int], list[tuple[float, int]]]:
        if costs:  # every job on the node already refused as a partner: no GPU of it may be shared (no lookup)
            for resident in node.jobs:
                if resident not in costs or costs[resident] is not None:
                    break
            else:
                return list(node.free_ids), []
        shareable = []
        limit = node.gpu_memory or default_memory
        for i, holders in enumerate(node.gpus):
            if not holders or len(holders) >= max_jobs or holders[0].gpu_milli < 1000:
                continue  # idle, full, or shared by fraction
            # (node.memory_used, inlined; 0 + m is m, so one holder needs no sum)
            used = holders[0].memory if len(holders) == 1 else node.memory_used(i)
            if used + memory > limit:
                continue
            worst = 0.0
            for resident in holders:
                if resident not in costs:
                    costs[resident] = partner_cost(job, resident)
                c = costs[resident]
                if c is None:
                    break
                worst = max(worst, c)
            else:
                shareable.append((worst, i))
        shareable.sort()
        return list(node.free_ids), shareable

    need = job.gpu_num
    if need <= vc.gpus_per_node:
        return _one_node_plan(job, vc, usable, max_jobs, partner_cost is share_anyone)
    if max_jobs == 2:
        if need > vc.free_gpus + vc.used_gpus - vc.shared_gpus:
            # not even every idle and singly used GPU would do: the search would fail after asking every partner
            # it may share with, so ask just those (``colocation_fallbacks`` counts them) and skip the search
            ask_every_partner(job, vc, costs, partner_cost, default_memory)
            return None
        return _nodes_plan(job, vc, usable)
    candidates = [(node, *usable(node)) for node in vc.nodes if node.up and node.used and job.speed_on(node.gpu_type)]
    idle_nodes: list[tuple[Node, list[int], list[tuple[float, int]]]] = [
        (node, list(node.free_ids), []) for node in vc.nodes if node.up and not node.used and job.speed_on(node.gpu_type)]
    pool = sorted(candidates + idle_nodes, key=lambda c: (-(len(c[1]) + len(c[2])), c[0].index))
    plan: Plan = []
    left = need
    for node, idle, shareable in pool:
        take = (idle + [i for _, i in shareable])[:left]
        if take:
            plan.append((node, sorted(take)))
            left -= len(take)
        if not left:
            return plan
    return None


def ask_every_partner(job: Job, vc: VirtualCluster, costs: dict[Job, float | None], partner_cost: PartnerCost,
                      default_memory: float) -> None:
    """Fill ``costs`` as :func:`_nodes_plan` does when it fails (a GPU holding at most two jobs): the cost of every
    job that holds a GPU alone, whole, with room for ``job``'s memory beside it, on an up node ``job`` can run on.
    A failing search visits every such node; this asks the same partners without building its lists.

    >>> from simcluster.cluster import Cluster
    >>> from simcluster.cluster_spec import ClusterSpec
    >>> node, other = Cluster(ClusterSpec.uniform({"v": 2}, 2), 2).vcs["v"].nodes
    >>> a, b, c, big = [Job(index=i, job_id=str(i), vc="v", gpu_num=1, submit_time=0, duration=9) for i in range(4)]
    >>> a.allocation = ((node, node.attach(a, [0])),); b.allocation = ((node, node.attach(b, [0])),)
    >>> c.allocation = ((other, other.attach(c, [1])),)
    >>> costs = {}
    >>> ask_every_partner(big, node.vc, costs, lambda waiting, resident: 1.0, 0.0)  # (a and b fill GPU 0)
    >>> [job.job_id for job in costs]
    ['2']
    """
    memory = job.memory
    for node in vc.nodes:
        if not node.up or node.used == node.shared or not job.speed_on(node.gpu_type):
            continue  # (down, or every used GPU holds two jobs already, or not a node the job runs on)
        limit = node.gpu_memory or default_memory
        gpus = node.gpus
        for resident, ids in node.jobs.items():
            if resident in costs or resident.gpu_milli < 1000 or resident.memory + memory > limit:
                continue
            for i in ids:
                if len(gpus[i]) == 1:
                    costs[resident] = partner_cost(job, resident)
                    break


def _one_node_plan(job: Job, vc: VirtualCluster, usable: Callable[[Node], tuple[list[int], list[tuple[float, int]]]],
                   max_jobs: int, free_of_cost: bool) -> Plan | None:
    """The node that needs the fewest shared GPUs, then the cheapest partners, then the first: nodes are looked at
    by idle GPUs, most first (a node with k idle GPUs shares ``need - k``), so the search stops at the first
    count of idle GPUs where some node will do; with partners that cost nothing, at the first such node."""
    need = job.gpu_num
    room = room_mask(vc, need, max_jobs)
    if not room:
        return None  # no node has the idle and singly used GPUs the job needs
    nodes = vc.nodes
    for idle_count in range(min(need, len(vc.buckets)) - 1, -1, -1):
        shared_needed = need - idle_count
        best: tuple[tuple[float, int], Node, list[int]] | None = None
        seen: set[tuple[object, ...]] = set()
        for node in nodes_in(nodes, vc.buckets[idle_count] & room):
            if not node.used or not job.speed_on(node.gpu_type) or not may_share_on(node, need, max_jobs):
                continue
            # a node holding the same jobs on the same GPUs as one looked at before (the nodes of a many-node
            # job) has the same usable GPUs at the same cost and a later index: it cannot win, and looking at
            # it would ask for no partner's cost not asked for already
            holding = (node.gpu_type, node.gpu_memory, node.gpu_count, *[(j, *ids) for j, ids in node.jobs.items()])
            if holding in seen:
                continue
            seen.add(holding)
            idle, shareable = usable(node)
            if shared_needed > len(shareable):
                continue
            key = (sum(c for c, _ in shareable[:shared_needed]), node.index)
            if best is None or key < best[0]:
                best = (key, node, idle + [i for _, i in shareable[:shared_needed]])
                if free_of_cost:
                    break  # (every key's cost is 0: the first node wins)
        if best is not None:
            return [(best[1], sorted(best[2]))]
    return None


def _nodes_plan(job: Job, vc: VirtualCluster, usable: Callable[[Node], tuple[list[int], list[tuple[float, int]]]]
                ) -> Plan | None:
    """:func:`shared_plan` for a job of more than a node's GPUs where a GPU holds at most two jobs: the nodes with
    the most usable GPUs (idle ones, then shareable ones), ties by node order, until the job has its GPUs.

    A node's usable GPUs are at most those holding fewer than two jobs (the VC files its nodes by that count),
    so nodes are looked at by that count, most first: a node is taken once no node not yet looked at can come
    before it, and the search stops when the job has its GPUs, not after every node."""
    left, plan = job.gpu_num, []
    found: list[tuple[int, int, Node, list[int], list[tuple[float, int]]]] = []  # (-usable, index, ...), a heap

    def take_found(bound: int, index: float) -> int:
        """Take the nodes found that come before any node with at most ``bound`` usable GPUs from ``index`` on."""
        nonlocal left
        while found and (-found[0][0] > bound or (-found[0][0] == bound and found[0][1] < index)):
            _, _, node, idle, shareable = heappop(found)
            take = (idle + [i for _, i in shareable])[:left]
            if take:
                plan.append((node, sorted(take)))
                left -= len(take)
                if not left:
                    break
        return left

    for bound in range(len(vc.unshared) - 1, -1, -1):
        for node in vc.nodes_with_unshared(bound):
            if not job.speed_on(node.gpu_type):
                continue
            if not take_found(bound, node.index):
                return plan
            idle, shareable = usable(node) if node.used else (list(node.free_ids), [])
            heappush(found, (-(len(idle) + len(shareable)), node.index, node, idle, shareable))
        if not take_found(bound, math.inf):
            return plan
    return plan if not take_found(-1, math.inf) else None


def share_waiting_jobs(vc: VirtualCluster, ctx: SchedulingContext, partner_cost: PartnerCost,
                       stop_at_first_failure: bool = False) -> None:
    """Offer each still-waiting job, in queue order, a shared placement."""
    pairs_only = ctx.config.max_jobs_per_gpu == 2
    for job in list(vc.pending):
        if job.gpu_milli < 1000:
            continue  # a fraction of a GPU is placed by fraction (try_start), never beside whole-GPU jobs
        room_on_used = vc.used_gpus - vc.shared_gpus if pairs_only else vc.used_gpus
        if job.gpu_num > vc.free_gpus + room_on_used:
            if stop_at_first_failure:
                return
            continue  # not even every idle and singly-used GPU would do
        plan = shared_plan(job, vc, ctx, partner_cost)
        if plan is not None:
            ctx.start_on(job, plan)
        elif stop_at_first_failure:
            return
