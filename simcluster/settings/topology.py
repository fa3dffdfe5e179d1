"""Clusters with a topology (:mod:`simcluster.features.topology`, docs/topology.md): the file that describes the
racks, NVLink domains and switch blocks above the nodes, and what spanning them costs a job."""

from __future__ import annotations

from simcluster.settings.fields import Reader, RunView, always, setting, settings_group

TOPOLOGY = "Topology"  # its panel in `lucid-sim run --help`


def has_topology(run: RunView) -> bool:
    return bool(run.config.topology)


WITH_TOPOLOGY = Reader(has_topology, error=True, who="runs with a topology (--topology)")


@settings_group(TOPOLOGY, reads=Reader(always))
class TopologyOptions:
    topology: str | None = setting(
        None, "The cluster's topology: a CSV with a column naming the nodes, then one per level from the top down "
        "(node,block,rack; Lingjun's ip,DSW,PSW,ASW), Slurm's topology.conf (tree or block), or a Kubernetes "
        "node list (kubectl get nodes -o json, with --topology-levels). Rows match the cluster's nodes by name "
        "(vc0/n3), else by order.",
    )
    topology_levels: str | None = setting(
        None, "A Kubernetes node list's levels: its label keys from the top down, comma-separated, or a Kueue "
        "Topology YAML (spec.levels).", reads=WITH_TOPOLOGY,
    )
    topology_slowdown: str | None = setting(
        None, "What spanning costs: LEVEL=X,... (e.g. block=1,rack=0.25,node=0.05): a job whose GPUs span more "
        "than one domain of a level runs at 1/(1 + X), X the largest of the levels it spans (node=: as "
        "--spread-penalty).", reads=WITH_TOPOLOGY,
    )
    topology_request: str | None = setting(
        None, "Where every job's pods must or should lie, for jobs whose trace gives no request: required:LEVEL (in "
        "one domain of LEVEL, or the job waits) or preferred:LEVEL (there where one has room, else as close as "
        "the levels above allow); read by the topology-aware placements (Kueue's tas-best-fit, tas-least-free, "
        "tas-balanced, kueue-tas; Slurm's slurm-tree, slurm-block).", reads=WITH_TOPOLOGY,
    )
    link_contention: float = setting(
        0.0, "Jobs crossing the same uplink share its bandwidth: C, the share of a job's time alone spent in "
        "communication across uplinks, for every job whose trace gives no comm_share of its own (0: off, "
        "unless the trace has a comm_share column). A job of share c whose most crowded uplink n jobs cross "
        "runs at 1/((1 - c) + c*n). Uplinks: those of the domains it occupies at the highest level it spans "
        "and below.",
        min=0, max=1, reads=WITH_TOPOLOGY,
    )
