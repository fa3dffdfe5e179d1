"""Tiers of work (:mod:`simcluster.features.tiers`, docs/tiers.md): an operator's Kueue objects — ClusterQueues,
cohorts, LocalQueues, flavors, priority classes — that the ``kueue`` policy admits and preempts by."""

from __future__ import annotations

from typing import Any

from simcluster.settings.fields import Reader, RunView, always, setting, settings_group

TIERS = "Tiers and Kueue"  # its panel in `lucid-sim run --help`


def has_kueue(run: RunView) -> bool:
    return bool(run.config.kueue)


WITH_KUEUE = Reader(has_kueue, error=True, who="runs with Kueue's objects (--kueue)")


def ranks_by_priority(policy: Any) -> bool:
    """Whether policy class ``policy`` orders its waiting jobs by tier first (``Policy.priority_first``; Kueue's own
    order aside)."""
    return bool(getattr(policy, "priority_first", False)) and "kueue" not in getattr(policy, "reads", ())


def evicts_for_tiers(policy: Any) -> bool:
    """Whether the tiers' evictions act with policy class ``policy``: it ranks by tier, places whole GPUs through
    the run's placement (not elastic, no placement of its own, no GPUs shared) and does not preempt on its own (a
    preemptive walk, srtf's or tiresias', preempts lower tiers itself)."""
    return ranks_by_priority(policy) and not (getattr(policy, "elastic", False) or getattr(policy, "own_placement", None)
                                              or getattr(policy, "shares_gpus", False)
                                              or getattr(policy, "preemptive", False))


@settings_group(TIERS, reads=Reader(always))
class TierOptions:
    kueue: str | None = setting(
        None, "The cluster's Kueue objects: a YAML (or JSON) file or a folder of them, as kubectl get ... -o yaml "
        "writes them: ClusterQueues, Cohorts, LocalQueues, ResourceFlavors, WorkloadPriorityClasses (a Kueue "
        "Configuration document among them switches fair sharing on). The cluster's VCs become one pool shared "
        "by the ClusterQueues' GPU quotas; jobs reach a LocalQueue by a trace column local_queue, else by their "
        "VC's name. Run it with --policy kueue.",
    )
    priority_classes: str | None = setting(
        None, "Priority classes by name, for a trace column priority_class: a YAML (or JSON) file of Kueue "
        "WorkloadPriorityClasses or Kubernetes PriorityClasses, as kubectl get workloadpriorityclasses,"
        "priorityclasses -o yaml writes them (--kueue's files' classes count too). Any policy that orders by "
        "priority reads them.",
        reads=Reader(lambda run: run.has_column("priority_class") or bool(run.config.kueue),
                     who="runs of a trace with a priority_class column, or of --kueue's queues"),
    )
    fair_sharing: str = setting(
        "auto", "Kueue's fair sharing: on, off, or auto (as the Configuration document among --kueue's files "
        "says; off without one).", choices=("auto", "on", "off"), reads=WITH_KUEUE,
    )
    evict: str = setting(
        "preemptible", "Which running jobs a waiting job of a higher tier may evict (losing their work since their "
        "last checkpoint) when that lets it start: preemptible ones (a trace column preemptible) of a lower "
        "priority, or of the same priority when it is not preemptible itself; lower-priority: any job of a lower "
        "priority (Slurm's preemption by QOS with PreemptMode=REQUEUE); off: none. Read where the policy orders "
        "its queue by priority first (docs/tiers.md).", choices=("preemptible", "lower-priority", "off"),
    )
    victims: str = setting(
        "least-work-lost", "The order in which an eviction takes its victims until the evicting job starts: "
        "least-work-lost (fewest GPUs x seconds of work since their last checkpoint), newest (most recently "
        "started), lowest-priority, or random (drawn from --seed).",
        choices=("least-work-lost", "newest", "lowest-priority", "random"),
    )
    eviction_cost: float = setting(
        0.0, "Seconds without progress that a job which evicted others owes when it starts (the victims' time to "
        "leave their GPUs; Alibaba measured 13 s on average, 48 s at the 95th percentile).", min=0, max=86_400,
        time=True,
    )
