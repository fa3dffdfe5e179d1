"""A heterogeneous cluster: GPU types, how many of each, their memory, and which node holds which GPU.

Two ways in:

* ``--cluster v100:4,p100:4,k80:4`` — GPU counts per type (optionally ``type:count:memory_mib``);
  each type's GPUs sit on nodes of ``gpus_per_node`` (default 4, the last node may hold fewer);
* a node-list CSV such as the Alibaba openb ``openb_node_list_gpu_node.csv``
  (``sn,cpu_milli,memory_mib,gpu,model``): one row per node, its GPU count and model.

Per-type memory (MiB) comes from :data:`GPU_MEMORY_MIB` unless given; it is descriptive for Gavel
traces (Gavel's table says which pairs fit by giving them a non-zero throughput) and reported in the
summary.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from simcluster.traces.errors import TraceError
from simcluster.traces.side_files import read_side_csv

GPU_MEMORY_MIB: dict[str, int] = {
    "k80": 12 * 1024, "p100": 16 * 1024, "v100": 16 * 1024, "t4": 16 * 1024, "a10": 24 * 1024,
    "v100m16": 16 * 1024, "v100m32": 32 * 1024, "a100": 40 * 1024, "rtx3090": 24 * 1024,
    # Alibaba's in-house G2 and G3 are not documented; 16 GiB is our assumption (see the README)
    "g2": 16 * 1024, "g3": 16 * 1024,
}
DEFAULT_MEMORY_MIB = 16 * 1024
_SPEC = re.compile(r"^\s*([A-Za-z][\w.-]*)\s*:\s*(\d+)\s*(?::\s*(\d+)\s*)?$")


@dataclass(frozen=True)
class HeteroCluster:
    """GPU types in a fixed order, with their counts, memory and the node of every GPU."""

    types: tuple[str, ...]
    counts: tuple[int, ...]
    memory_mib: tuple[int, ...]
    node_of_gpu: tuple[tuple[int, ...], ...]  # per type: node index of each of its GPUs
    source: str = ""

    @property
    def capacity(self) -> np.ndarray:
        return np.asarray(self.counts, dtype=float)

    @property
    def total_gpus(self) -> int:
        return int(sum(self.counts))

    def describe(self) -> str:
        return ", ".join(f"{t}:{c}" for t, c in zip(self.types, self.counts))

    def as_dict(self) -> dict[str, dict[str, int]]:
        return {t: {"gpus": c, "memory_mib": m} for t, c, m in zip(self.types, self.counts, self.memory_mib)}


def _nodes(count: int, per_node: int, first: int) -> tuple[int, ...]:
    return tuple(first + i // per_node for i in range(count))


def parse_cluster(spec: str, gpus_per_node: int = 4) -> HeteroCluster:
    """``"v100:4,p100:4,k80:4"`` (or ``+`` between types, or a node-list CSV path) → :class:`HeteroCluster`.

    >>> c = parse_cluster("v100:4,p100:2:16384")
    >>> c.types, c.counts, c.memory_mib
    (('v100', 'p100'), (4, 2), (16384, 16384))
    """
    if spec.endswith(".csv") or Path(spec).is_file():
        return load_node_list(spec)
    types: list[str] = []
    counts: list[int] = []
    memory: list[int] = []
    nodes: list[tuple[int, ...]] = []
    first = 0
    for part in re.split(r"[,+]", spec):  # "+" too, so that a sweep's --set cluster=v100:4+k80:4 stays one value
        match = _SPEC.match(part)
        if not match:
            raise ValueError(f"--cluster: expected TYPE:COUNT[:MEMORY_MIB] items separated by commas, got {part!r} "
                             f"in {spec!r}")
        name, count = match[1].lower(), int(match[2])
        if name in types:
            raise ValueError(f"--cluster: GPU type {name!r} is listed twice in {spec!r}")
        if count <= 0:
            raise ValueError(f"--cluster: GPU count of {name!r} must be positive, got {count}")
        types.append(name)
        counts.append(count)
        memory.append(int(match[3]) if match[3] else GPU_MEMORY_MIB.get(name, DEFAULT_MEMORY_MIB))
        nodes.append(_nodes(count, gpus_per_node, first))
        first = nodes[-1][-1] + 1
    return HeteroCluster(tuple(types), tuple(counts), tuple(memory), tuple(nodes), spec)


def load_node_list(path: str | Path) -> HeteroCluster:
    """An openb-style node list (``sn,...,gpu,model``): nodes with ``gpu`` GPUs of ``model`` each."""
    raw = read_side_csv(path, "node-list file", ("gpu", "model"))
    per_type: dict[str, list[int]] = {}
    for row, (gpus, model) in enumerate(zip(raw["gpu"], raw["model"])):
        if not gpus.strip().isdigit():
            raise TraceError(path, f"GPU count must be a non-negative integer, got {gpus!r}", line=row + 2, field="gpu")
        if int(gpus) == 0:
            continue
        if not model.strip():
            raise TraceError(path, "empty GPU model", line=row + 2, field="model")
        per_type.setdefault(model.strip().lower(), []).extend([row] * int(gpus))
    if not per_type:
        raise TraceError(path, "no node with GPUs")
    types = tuple(sorted(per_type))
    return HeteroCluster(types, tuple(len(per_type[t]) for t in types),
                         tuple(GPU_MEMORY_MIB.get(t, DEFAULT_MEMORY_MIB) for t in types),
                         tuple(tuple(per_type[t]) for t in types), str(path))
