"""The cluster's shape beyond the trace: GPUs per node, and what spanning nodes costs.  Every run reads them."""

from __future__ import annotations

from simcluster.settings.fields import Reader, always, setting, settings_group

CLUSTER = "Cluster"  # its panel in `lucid-sim run --help`


@settings_group(CLUSTER, reads=Reader(always))
class ClusterOptions:
    gpus_per_node: int = setting(8, "GPUs in every node.", min=1)
    spread_penalty: float = setting(
        0.0, "Network-locality cost: a job whose GPUs span k > 1 nodes runs at speed 1/(1 + penalty) (0 = off, "
        "as the published simulators).", min=0,
    )
