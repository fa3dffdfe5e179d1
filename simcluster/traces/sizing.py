"""How big the cluster is: a VC config, or — for a log without VCs — ``--nodes``, ``--cluster`` or ``--load``.

A job log with a VC column runs each VC on the nodes its VC config gives it (``vc,num`` or, as in
the Helios artifact's Philly config, ``vc,node num``; the first column may be unnamed).  A log
without one is a single VC (``cluster``) whose size the user chooses:

* ``--nodes N``: N nodes of ``--gpus-per-node`` GPUs;
* ``--cluster v100:512``: the spec's GPUs in nodes of ``--gpus-per-node``; the run then simulates
  the spec itself, its GPU types included, under every policy;
* ``--load X``: the fewest nodes on which the log's offered load is at most X, and never fewer
  than its largest job needs.

Offered load = GPU-seconds asked (Σ GPUs × duration) ÷ (GPUs × span), the span being the time
from the first submission to the last: 1.0 means the jobs ask, over the submission window, for
exactly what the cluster has.

>>> offered_load(gpu_seconds=1_000, gpus=10, span=200)
0.5
>>> nodes_for_load(gpu_seconds=1_000, span=200, load=0.5, gpus_per_node=8, largest_job=4)
2
>>> cluster_gpus("v100:4,p100:2+k80:2")
8

No cluster may exceed ``MAX_GPUS`` GPUs: the simulator holds every node in memory (about 4 KB per
8-GPU node, and a second or so to build 100,000 nodes), so a size beyond it — a typo, a unit
mistake — is refused before any work, naming where the figure came from.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import TYPE_CHECKING

from simcluster.cluster_spec import (
    DEFAULT_GPU_TYPE,
    ClusterSpec,
    NodeGroup,
    load_node_list,
    spot_nodes_cell,
    vc_types,
)
from simcluster.errors import TraceError
from simcluster.traces.csvfile import read_csv

if TYPE_CHECKING:
    import pandas as pd

MAX_GPUS = 1_000_000
NODE_COLUMNS = ("num", "node num")


def limit_error(where: str | Path, gpus: int, how: str, line: int | None = None, field: str | None = None) -> TraceError:
    return TraceError(where, f"{how} bring the cluster to {gpus:,} GPUs, more than the limit of {MAX_GPUS:,} GPUs a simulation "
                      "may have (simcluster.traces.sizing.MAX_GPUS)", line=line, field=field)


def load_vc_config(path: str | Path, gpus_per_node: int = 8) -> dict[str, int]:
    """``vc,num`` (or ``vc,node num``): nodes per virtual cluster (the first column may be unnamed).  With a
    ``gpu_type`` column a VC may list one row per type: its nodes are summed here."""
    return read_vc_config(path, gpus_per_node)[0]


def read_vc_config(path: str | Path, gpus_per_node: int = 8) -> tuple[dict[str, int], ClusterSpec | None]:
    """Nodes per VC (as :func:`load_vc_config`), and with a ``gpu_type`` column (``vc,num,gpu_type
    [,memory_mib]``) the VCs' nodes by GPU type as a spec (:func:`~simcluster.cluster_spec.vc_types`), or with a
    ``spot`` column alone (how many of a VC's nodes are spot nodes) its untyped nodes as a spec; None without
    either."""
    path = Path(path)
    raw = read_csv(path)
    raw.columns = [str(c).strip() for c in raw.columns]
    count = next((c for c in NODE_COLUMNS if c in raw.columns), None)
    if raw.shape[1] < 2 or count is None:
        raise TraceError(path, "expected columns 'vc,num' or 'vc,node num' (nodes per virtual cluster); found: "
                         + ", ".join(raw.columns), line=1)
    names = raw["vc"] if "vc" in raw.columns else raw.iloc[:, 0]
    nodes: dict[str, int] = {}
    total = 0
    for i, (vc, num) in enumerate(zip(names, raw[count])):
        line, num = i + 2, str(num).strip()
        if not vc and not num:
            continue  # a blank line
        if not vc:
            raise TraceError(path, "empty VC name", line=line, field="vc")
        if not re.fullmatch(r"\d+", num) or int(num) <= 0:
            raise TraceError(path, f"node count must be a positive integer, got {num!r}", line=line, field=count)
        if vc in nodes and "gpu_type" not in raw.columns:  # with GPU types a VC lists one row per type
            raise TraceError(path, f"VC {vc!r} is listed twice", line=line, field="vc")
        nodes[vc] = nodes.get(vc, 0) + int(num)
        total += int(num) * gpus_per_node
        if total > MAX_GPUS:
            raise limit_error(path, total, f"VC {vc!r} ({int(num):,} nodes × {gpus_per_node} GPUs) would",
                              line=line, field=count)
    if not nodes:
        raise TraceError(path, "no virtual clusters defined")
    if "gpu_type" in raw.columns:
        return nodes, vc_types(raw, names, count, path, gpus_per_node)
    return nodes, (_spot_spec(raw, names, count, path, gpus_per_node) if "spot" in raw.columns else None)


def _spot_spec(raw: pd.DataFrame, names: pd.Series, count: str, path: Path, gpus_per_node: int) -> ClusterSpec:
    """A VC config without GPU types but with a ``spot`` column, as a spec of untyped nodes whose last ``spot`` of
    each VC are spot nodes (its other columns checked by :func:`read_vc_config`)."""
    groups = [NodeGroup(str(vc), DEFAULT_GPU_TYPE, int(str(num).strip()), gpus_per_node, 0.0,
                        spot_nodes_cell(spot, int(str(num).strip()), path, i + 2))
              for i, (vc, num, spot) in enumerate(zip(names, raw[count], raw["spot"])) if vc or str(num).strip()]
    return ClusterSpec(tuple(groups), str(path))


def offered_load(gpu_seconds: float, gpus: int, span: float) -> float | None:
    """GPU-seconds asked ÷ (GPUs × span); None when there is no span or no GPU."""
    if span <= 0 or gpus <= 0:
        return None
    return gpu_seconds / (gpus * span)


def nodes_for_load(gpu_seconds: float, span: float, load: float, gpus_per_node: int, largest_job: int) -> int:
    """The fewest nodes with offered load ≤ ``load`` that also fit the largest job."""
    by_load = math.ceil(gpu_seconds / (load * span * gpus_per_node) - 1e-9)
    return max(1, by_load, math.ceil(largest_job / gpus_per_node))


def cluster_gpus(spec: str) -> int:
    """Total GPUs of a ``--cluster`` spec (``type:count[:memory]`` items, or a node-list CSV), read
    without building the cluster, so that a huge figure is refused at once."""
    if spec.endswith(".csv") or Path(spec).is_file():
        return load_node_list(spec).total_gpus
    total = 0
    for part in filter(None, (p.strip() for p in re.split(r"[,+]", spec))):
        pieces = part.split(":")
        if len(pieces) not in (2, 3) or not pieces[1].strip().isdigit():
            raise ValueError(f"--cluster: expected TYPE:COUNT[:MEMORY_MIB] items separated by commas, got {part!r}")
        total += int(pieces[1])
        if total > MAX_GPUS:
            raise limit_error("--cluster", total, f"{spec!r} would")
    if total <= 0:
        raise ValueError(f"--cluster: no GPUs in {spec!r}")
    return total


def nodes_of_cluster(spec: str, gpus_per_node: int) -> int:
    """``--cluster`` as a number of nodes of ``gpus_per_node`` GPUs (it must divide evenly)."""
    gpus = cluster_gpus(spec)
    if gpus % gpus_per_node:
        raise ValueError(f"--cluster {spec}: {gpus:,} GPUs are not a whole number of {gpus_per_node}-GPU nodes; "
                         "set --gpus-per-node or give --nodes")
    return gpus // gpus_per_node


def check_nodes(nodes: int, gpus_per_node: int, how: str) -> int:
    if nodes <= 0:
        raise ValueError(f"{how}: the number of nodes must be positive, got {nodes}")
    if nodes * gpus_per_node > MAX_GPUS:
        raise limit_error(how, nodes * gpus_per_node, f"{nodes:,} nodes × {gpus_per_node} GPUs would")
    return nodes
