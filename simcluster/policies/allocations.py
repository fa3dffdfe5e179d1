"""What elastic policies share: turning a whole allocation into the context's calls, and the node-list form
in which Pollux's simulator writes allocations.

An interval policy (Pollux, Optimus, Tiresias as Pollux's simulator runs them; ElasticFlow) computes, each
time it decides, every job's GPUs at once.  :func:`apply_allocations` carries that out in the one order that
always works: jobs that lose all their GPUs are preempted, running jobs whose GPUs or batch change are
resized together (each leaves what it gives up before any takes new GPUs), and waiting jobs start.

Pollux's simulator writes a job's allocation as the node of each of its GPUs (``[3, 3, 0]``: two GPUs on
node 3, one on node 0); :func:`nodes_of` and :func:`plan_of_nodes` convert, keeping the order of the nodes
(a job's layout, and so its measured speed, depends on it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from simcluster.job import JobState
from simcluster.placement.base import Plan, holds_exactly
from simcluster.policies.base import SchedulingContext
from simcluster.views import JobView, VCView


def apply_allocations(ctx: SchedulingContext, vc: VCView, plans: Mapping[JobView, Plan],
                      batches: Mapping[JobView, Any] | None = None, delay: float | None = None) -> None:
    """Make every job of ``vc`` hold what ``plans`` gives it (a running job not in it, or given an empty plan,
    is preempted), at ``batches`` (job → batch; a job not in it runs at its user's batch on new GPUs and keeps
    its batch on the same), charging ``delay`` (None: the run's restart delay) to jobs that start or move."""
    batches = batches or {}
    for job in vc.running:
        if not plans.get(job):
            ctx.preempt(job, 0.0)
    changes: dict[JobView, Plan] = {}
    for job, plan in plans.items():
        if plan and job.state is JobState.RUNNING and job.elastic is not None and (
                not holds_exactly(job, plan) or (job in batches and batches[job] != job.elastic.batch)):
            changes[job] = plan
    if changes:
        ctx.resize_many(changes, {job: batches[job] for job in changes if job in batches}, delay)
    for job, plan in plans.items():
        if plan and job.state is JobState.PENDING:
            ctx.start_on(job, plan, batches.get(job), delay)


def nodes_of(job: JobView) -> list[int]:
    """A running job's allocation as the node (its position in the VC) of each of its GPUs, in its order."""
    return [node.index for node, ids in job.allocation for _ in ids]


def plan_of_nodes(vc: VCView, nodes: Sequence[int]) -> Plan:
    """The plan of an allocation written as the node of each GPU: one item per node, in order of first
    appearance.

    >>> from simcluster.cluster import Cluster
    >>> vc = Cluster({"a": 4}, 4).vcs["a"]
    >>> [(node.index, count) for node, count in plan_of_nodes(vc, [3, 3, 0])]
    [(3, 2), (0, 1)]
    """
    counts: dict[int, int] = {}
    for node in nodes:
        counts[node] = counts.get(node, 0) + 1
    return [(vc.nodes[node], count) for node, count in counts.items()]


def layout_of(plan: Plan) -> tuple[int, ...]:
    """GPUs on each node of ``plan``, in its order."""
    return tuple(where if isinstance(where, int) else len(where) for _, where in plan)
