"""Tiers of work (:mod:`simcluster.features.tiers`, docs/tiers.md): an operator's Kueue objects — ClusterQueues,
cohorts, LocalQueues, flavors, priority classes — that the ``kueue`` policy admits and preempts by."""

from __future__ import annotations

from simcluster.settings.fields import Reader, RunView, always, setting, settings_group

TIERS = "Tiers and Kueue"  # its panel in `lucid-sim run --help`


def has_kueue(run: RunView) -> bool:
    return bool(run.config.kueue)


WITH_KUEUE = Reader(has_kueue, error=True, who="runs with Kueue's objects (--kueue)")


@settings_group(TIERS, reads=Reader(always))
class TierOptions:
    kueue: str | None = setting(
        None, "The cluster's Kueue objects: a YAML (or JSON) file or a folder of them, as kubectl get ... -o yaml "
        "writes them: ClusterQueues, Cohorts, LocalQueues, ResourceFlavors, WorkloadPriorityClasses (a Kueue "
        "Configuration document among them switches fair sharing on). The cluster's VCs become one pool shared "
        "by the ClusterQueues' GPU quotas; jobs reach a LocalQueue by a trace column local_queue, else by their "
        "VC's name. Run it with --policy kueue.",
    )
    fair_sharing: str = setting(
        "auto", "Kueue's fair sharing: on, off, or auto (as the Configuration document among --kueue's files "
        "says; off without one).", choices=("auto", "on", "off"), reads=WITH_KUEUE,
    )
