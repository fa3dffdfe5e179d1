"""What a placement is: a map from one job to GPUs of its VC, or "not now"."""

from __future__ import annotations

import random
from collections.abc import Callable, Hashable

from simcluster.cluster import Node, Pool
from simcluster.job import Job
from simcluster.registry import Registry

# (node, how many of its idle GPUs) or (node, exactly which GPUs — a sharing policy's plan)
Plan = list[tuple[Node, int | list[int]]]


class Placement:
    """Base class of placements: maps one job to GPUs of its VC, or says "not now".

    ``chooses_types``: the engine hands the placement the whole VC even for a job that runs on some of its
    GPU types only (the placement then chooses the type itself); otherwise it gets one type's pool at a time.

    ``places_fractions``: the placement also places jobs that take a fraction of a GPU (``gpu_milli`` <
    1000), returning (node, [GPU ids]) for them; otherwise the engine places those itself, best fit
    (:func:`~simcluster.placement.fractions.fraction_plan`), whatever the placement.

    ``monotone``: where it finds no room for a job of g GPUs (one that runs on any GPU), it finds none for any
    job of g or more until GPUs are freed, whatever else starts meanwhile, and a search that finds none changes
    nothing (draws no random number): the engine then skips the searches it knows would fail, which on a large
    congested cluster are most of them.  Built-in placements only: a plug-in's claim is not taken on trust.

    ``room_class(job, vc)``: a placement monotone only among jobs of one class (a topology-aware one: jobs that
    require one rack are placed by other rules than those that may spread) says each job's class, and the engine
    skips, class by class, what ``monotone`` skips for all; None (the default) for a placement that is neither.

    ``may_use(job, node)``: a placement that keeps some jobs off some nodes (spot nodes kept for preemptible jobs)
    says whether ``job`` may run on ``node``, which an eviction for the job asks before it frees the node; None (the
    default): any job on any node of its pool.
    """

    name: str = "?"
    chooses_types: bool = False
    places_fractions: bool = False
    monotone: bool = False

    def __init__(self, rng: random.Random | None = None) -> None:
        self.rng = rng if rng is not None else random.Random(0)

    # or a method: (job, its VC) → its class (see above); built-in placements only, as ``monotone``
    room_class: Callable[[Job, Pool], Hashable] | None = None
    may_use: Callable[[Job, Node], bool] | None = None  # (see above)

    def place(self, job: Job, vc: Pool) -> Plan | None:
        """GPUs for ``job`` on ``vc`` now, or None if it cannot be placed now.

        ``vc`` is the job's VC, or one GPU type's :class:`~simcluster.cluster.Pool` of it (a job that runs on
        some of the VC's types only; Gavel's rounds); a placement with ``chooses_types`` always gets the VC.

        Must not change the cluster: the engine applies the plan.
        """
        raise NotImplementedError


PLACEMENTS: Registry[type[Placement]] = Registry("placement")


def lowest_node(vc: Pool, mask: int) -> Node:
    return vc.nodes[(mask & -mask).bit_length() - 1]


def fill_in_order(job: Job, nodes: list[Node]) -> Plan | None:
    """Take free GPUs node by node in the given order until the job has enough."""
    plan: Plan = []
    left = job.gpu_num
    for node in nodes:
        if left == 0:
            break
        take = min(node.free_gpus, left)
        if take:
            plan.append((node, take))
            left -= take
    return plan if left == 0 else None


def holds_exactly(job: Job, plan: Plan) -> bool:
    """Whether running ``job`` holds exactly the GPUs of ``plan`` (nodes in any order; a count matches the
    job's count on that node).

    >>> from simcluster.cluster import Cluster
    >>> node = Cluster({"a": 1}, 8).vcs["a"].nodes[0]
    >>> job = Job(index=0, job_id="j", vc="a", gpu_num=2, submit_time=0, duration=1)
    >>> job.allocation = ((node, node.allocate(job, 2)),)
    >>> holds_exactly(job, [(node, 2)]), holds_exactly(job, [(node, [0, 1])]), holds_exactly(job, [(node, 3)])
    (True, True, False)
    """
    held = {id(node): ids for node, ids in job.allocation}
    if len(held) != len(plan):
        return False
    for node, where in plan:
        ids = held.get(id(node))
        if ids is None or (len(ids) != where if isinstance(where, int) else sorted(ids) != sorted(where)):
            return False
    return True
