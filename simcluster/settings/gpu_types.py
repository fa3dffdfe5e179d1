"""Clusters of GPU types (:mod:`simcluster.features.gpu_types`): the cluster given by its GPU counts per type.
Every policy runs on it."""

from __future__ import annotations

from simcluster.settings.fields import Reader, always, setting, settings_group

GPU_TYPES = "GPU types"  # its panel in `lucid-sim run --help`


@settings_group(GPU_TYPES, reads=Reader(always))
class GpuTypeOptions:
    cluster: str | None = setting(
        None, "Cluster of GPU types, one VC: GPU counts per type, e.g. 'v100:4,p100:4,k80:4' (optionally "
        "TYPE:COUNT:MEMORY_MIB), or a node-list CSV (sn,...,gpu,model as openb's); every policy runs on it, and a "
        "trace's VCs are merged into it (with a warning). Default: the trace's own.",
    )
