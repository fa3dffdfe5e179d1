"""What policies and placements read: jobs, queues, nodes, pools, VCs and the cluster, as the engine keeps them.

A policy gets the engine's own objects, not copies: a pass then costs what it decides, never a copy of what
waits.  They are **read-only to a policy** — every change goes through the
:class:`~simcluster.policies.base.SchedulingContext` — and ``lucid-sim check-policy``
(:mod:`simcluster.testing`) catches a write at run time.  Iterating a queue or a VC's running jobs walks a
snapshot, so starting or preempting jobs meanwhile is safe.  The names below are the types to annotate with;
the fields a policy reads:

``JobView`` (:class:`~simcluster.job.Job`)
    ``index`` (trace order, the last tie-break of every order), ``job_id``, ``vc``, ``queue_vc`` (the partition
    whose queue it is in), ``user``, ``gpu_num``, ``gpu_milli``, ``submit_time``, ``duration`` (its work at
    speed 1: what an oracle knows), ``workload``, ``memory``, ``speeds``, ``state``, ``work_left``,
    ``overhead_left``, ``speed``, ``sharing``, ``start_time``, ``pending_since``, ``run_started_at``,
    ``busy_time``, ``queue_time``, ``preemptions``, ``restarts``, ``allocation`` ((node, GPU ids) while it runs);
    ``progress``, ``remaining_at(now)``, ``speed_on(gpu_type)``, ``time_left()``, ``finish_time()``.
``QueueView`` (:class:`~simcluster.queue.JobQueue`)
    ``first()``, ``first_entry()``, ``none_fits(gpus)``, ``runs_by_size(max_gpus)``, iteration, ``len``, ``in``.
``NodeView`` (:class:`~simcluster.cluster.Node`)
    ``name``, ``index``, ``gpu_count``, ``gpu_type``, ``gpu_memory``, ``up``, ``used``, ``shared``,
    ``free_ids``, ``jobs``, ``milli``, ``free_gpus``, ``gpus``, ``partners(job)``, ``memory_used(gpu)``.
``PoolView`` (:class:`~simcluster.cluster.Pool`)
    ``gpu_type``, ``nodes``, ``gpus_per_node``, ``total_gpus``, ``free_gpus``, ``buckets``,
    ``nodes_with_free(k)``.
``VCView`` (:class:`~simcluster.cluster.VirtualCluster`, a pool)
    ``name``, ``pending`` (a QueueView), ``running`` (its running jobs in start order), ``used_gpus``,
    ``shared_gpus``, ``gpu_types``, ``pools``, ``fastest_first``, ``to_arrive``.
``ClusterView`` (:class:`~simcluster.cluster.Cluster`)
    ``vcs`` (every VC and the policy's own partitions, by name), ``total_gpus``, ``gpus_per_node``.
"""

from __future__ import annotations

import ast
import sys
from typing import Any, TypeAlias

from simcluster.cluster import Cluster, Node, Pool, RunningJobs, VirtualCluster
from simcluster.job import Job
from simcluster.queue import JobQueue

JobView: TypeAlias = Job
QueueView: TypeAlias = JobQueue
NodeView: TypeAlias = Node
PoolView: TypeAlias = Pool
VCView: TypeAlias = VirtualCluster
ClusterView: TypeAlias = Cluster

__all__ = ["ClusterView", "JobView", "NodeView", "PoolView", "QueueView", "VCView"]


# --- read-only at run time ------------------------------------------------------------------------
#
# A plug-in file is compiled with every attribute write whose target is not ``self`` or ``cls`` (``x.a = v``,
# ``x.a += v``, ``del x.a``, and the built-ins ``setattr``/``delattr``) routed through :func:`checked`, which
# refuses a view while a guarded run is on (:data:`GUARD`).  The engine's own writes stay plain attribute writes:
# the built-ins and the engine pay nothing, a plug-in pays one call per write of its own.

VIEW_TYPES: tuple[type, ...] = (Job, JobQueue, Node, Pool, Cluster, RunningJobs)  # (VirtualCluster is a Pool)
GUARD: Any = None  # the guard of the plug-in run in progress (simcluster.guard.RunGuard), else None
CHECK_NAME = "__simcluster_view_check__"  # how a rewritten file calls :func:`checked`


def checked(obj: Any, name: str = "") -> Any:
    """``obj``, unless it is a view and a plug-in run is on: then the guard's :class:`PluginFailed` naming the
    policy, hook, time, job and the line of the plug-in's file that wrote to it."""
    if GUARD is not None and isinstance(obj, VIEW_TYPES):
        GUARD.wrote_view(obj, name, sys._getframe(1))
    return obj


def checked_setattr(obj: Any, name: str, value: Any) -> None:
    setattr(checked(obj, name), name, value)


def checked_delattr(obj: Any, name: str) -> None:
    delattr(checked(obj, name), name)


class _RouteWrites(ast.NodeTransformer):
    """``X.a = v`` → ``check(X, 'a').a = v`` (X evaluated once, after v, as Python does), for X other than
    ``self``/``cls``; likewise augmented assignments and ``del``."""

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        self.generic_visit(node)
        if not isinstance(node.ctx, (ast.Store, ast.Del)):
            return node
        if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
            return node
        call = ast.Call(ast.Name(CHECK_NAME, ast.Load()), [node.value, ast.Constant(node.attr)], [])
        return ast.copy_location(ast.Attribute(ast.copy_location(call, node.value), node.attr, node.ctx), node)


def compile_plugin(source: bytes, filename: str) -> Any:
    """The code of a plug-in file, its attribute writes routed through :func:`checked` (line numbers kept, so
    tracebacks point at the file's own lines)."""
    tree = ast.parse(source, filename)
    tree = ast.fix_missing_locations(_RouteWrites().visit(tree))
    return compile(tree, filename, "exec", dont_inherit=True)


def plugin_globals() -> dict[str, Any]:
    """What a rewritten file's namespace needs before it runs: the check, and ``setattr``/``delattr`` checked."""
    return {CHECK_NAME: checked, "setattr": checked_setattr, "delattr": checked_delattr}

