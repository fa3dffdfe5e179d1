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

from typing import TypeAlias

from simcluster.cluster import Cluster, Node, Pool, VirtualCluster
from simcluster.job import Job
from simcluster.queue import JobQueue

JobView: TypeAlias = Job
QueueView: TypeAlias = JobQueue
NodeView: TypeAlias = Node
PoolView: TypeAlias = Pool
VCView: TypeAlias = VirtualCluster
ClusterView: TypeAlias = Cluster

__all__ = ["ClusterView", "JobView", "NodeView", "PoolView", "QueueView", "VCView"]
