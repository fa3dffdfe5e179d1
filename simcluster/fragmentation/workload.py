"""An openb cluster and pod list as arrays, and the seeded pod sequence of FGD's evaluation.

FGD's evaluation has no time: pods arrive one after another, each is placed once or fails, none
leaves.  The sequence for a seed (its ``TunePodsByNodeTotalResource``): all pods of the list, CPU-only
ones included, sorted by name and shuffled; then pods drawn again from the list (sorted by name), with
replacement, appended until the next one would take the GPU demand past ``inflate`` × the cluster's
GPUs (or, below the list's own demand, pods drawn out until it is under).  The nodes' tie-break
order is a random permutation drawn next from the same generator.  Every draw is Go's
(:class:`~simcluster.fragmentation.gorand.GoRand`), so a seed here is the same sequence and
tie-break order as that seed in FGD's simulator.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from simcluster.fragmentation.frag import TypicalPods, typical_pods
from simcluster.fragmentation.gorand import GoRand
from simcluster.fragmentation.rules import WHOLE, NodeArrays, Pod
from simcluster.traces.errors import TraceError
from simcluster.traces.side_files import read_side_csv

NODE_LIST = "openb_node_list_gpu_node.csv"
POD_LIST_PATTERN = "openb_pod_list_*.csv"
MAX_GPUS_PER_NODE = 8
# Go values drawn between the workload and the node permutation in FGD's simulator: one per informer
# of its Kubernetes scheduler that starts watching then (found by matching its logs; see docs/fragmentation.md)
INFORMER_DRAWS = 10
UNKNOWN_MODEL_BIT = 62  # a pod naming only models the cluster lacks fits no node
_INT = re.compile(r"^\s*\d+\s*$")


@dataclass(frozen=True)
class OpenbCluster:
    """The GPU nodes of an openb node list, sorted by name (FGD's order): CPU (milli), memory (MiB), GPUs, model."""

    source: str
    names: list[str]
    cpu: np.ndarray
    mem: np.ndarray
    gpus: np.ndarray
    model: np.ndarray  # index into models
    models: tuple[str, ...]

    @property
    def total_gpus(self) -> int:
        return int(self.gpus.sum())

    def mask_of(self, spec: str) -> int:
        """A ``gpu_spec`` (``|``-separated models, empty: any) as a bit mask over :attr:`models` (0: any)."""
        wanted = [s for s in spec.split("|") if s]
        if not wanted:
            return 0
        mask = 0
        for model in wanted:
            mask |= 1 << self.models.index(model) if model in self.models else 1 << UNKNOWN_MODEL_BIT
        return mask

    def arrays(self, rank: np.ndarray) -> NodeArrays:
        """The empty cluster as :class:`NodeArrays` with tie-break order ``rank``."""
        left = np.zeros((len(self.names), MAX_GPUS_PER_NODE), dtype=np.int64)
        left[np.arange(MAX_GPUS_PER_NODE)[None, :] < self.gpus[:, None]] = WHOLE
        return NodeArrays(self.cpu.copy(), self.mem.copy(), left, self.gpus.copy(), self.model.copy(), rank,
                          np.zeros(len(self.names), dtype=np.int64))


@dataclass(frozen=True)
class OpenbPods:
    """An openb pod list sorted by name: per pod milli-CPU, memory (MiB), GPUs, thousandths of each, models."""

    source: str
    names: list[str]
    cpu: np.ndarray
    mem: np.ndarray
    num: np.ndarray
    milli: np.ndarray  # 0 for a CPU-only pod
    spec: list[str]
    mask: np.ndarray

    def pod(self, i: int) -> Pod:
        return Pod(int(self.cpu[i]), int(self.mem[i]), int(self.num[i]), int(self.milli[i]), int(self.mask[i]))

    @property
    def gpu_demand(self) -> np.ndarray:
        """Thousandths of a GPU each pod asks for in all."""
        return self.num * self.milli

    def typical(self, share: float = 0.95) -> TypicalPods:
        return typical_pods(self.cpu, self.milli, self.num, self.spec, self.mask, share)


def _integers(path: Path, frame: object, column: str) -> np.ndarray:
    values = frame[column]  # type: ignore[index]
    bad = ~values.str.match(_INT)
    if bad.any():
        row = int(np.flatnonzero(bad.to_numpy())[0])
        raise TraceError(path, f"must be a non-negative integer, got {values.iloc[row]!r}", line=row + 2, field=column)
    return values.astype(np.int64).to_numpy()


def load_cluster(path: str | Path) -> OpenbCluster:
    """The GPU nodes of an openb node list (``sn,cpu_milli,memory_mib,gpu,model``); nodes without GPUs are left out."""
    path = Path(path)
    raw = read_side_csv(path, "node list", ("sn", "cpu_milli", "memory_mib", "gpu", "model"))
    gpus = _integers(path, raw, "gpu")
    cpu, mem = _integers(path, raw, "cpu_milli"), _integers(path, raw, "memory_mib")
    if (too_many := gpus > MAX_GPUS_PER_NODE).any():
        row = int(np.flatnonzero(too_many)[0])
        raise TraceError(path, f"at most {MAX_GPUS_PER_NODE} GPUs per node, got {gpus[row]}", line=row + 2, field="gpu")
    keep = np.flatnonzero(gpus > 0)
    if not len(keep):
        raise TraceError(path, "no node with GPUs")
    names = raw["sn"].str.strip().to_numpy()[keep]
    models_of = raw["model"].str.strip().to_numpy()[keep]
    if (empty := models_of == "").any():
        raise TraceError(path, "empty GPU model", line=int(keep[np.flatnonzero(empty)[0]]) + 2, field="model")
    if len(set(names)) < len(names):
        raise TraceError(path, "duplicate node name (sn)", field="sn")
    order = np.argsort(names, kind="stable")
    models = tuple(sorted(set(models_of.tolist())))
    index = {m: i for i, m in enumerate(models)}
    return OpenbCluster(str(path), names[order].tolist(), cpu[keep][order], mem[keep][order], gpus[keep][order],
                        np.array([index[m] for m in models_of[order]], dtype=np.int64), models)


def load_pods(path: str | Path, cluster: OpenbCluster) -> OpenbPods:
    """An openb pod list (any variant: ``default``, ``gpushare40``, ``gpuspec33``, …) as arrays, sorted by name."""
    path = Path(path)
    raw = read_side_csv(path, "pod list", ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli"))
    names = raw["name"].str.strip()
    if (names == "").any() or names.duplicated().any():
        row = int(np.flatnonzero(((names == "") | names.duplicated()).to_numpy())[0])
        raise TraceError(path, f"empty or duplicate pod name {raw['name'].iloc[row]!r}", line=row + 2, field="name")
    cpu, mem = _integers(path, raw, "cpu_milli"), _integers(path, raw, "memory_mib")
    num, milli = _integers(path, raw, "num_gpu"), _integers(path, raw, "gpu_milli")
    gpu_pod = num > 0
    bad = gpu_pod & ((milli <= 0) | (milli > WHOLE) | ((milli < WHOLE) & (num > 1)))
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise TraceError(path, f"a pod of {num[row]} GPU(s) must ask for 1..1000 thousandths of one GPU or all of "
                         f"each, got {milli[row]}", line=row + 2, field="gpu_milli")
    if (big := num > MAX_GPUS_PER_NODE).any():
        row = int(np.flatnonzero(big)[0])
        raise TraceError(path, f"at most {MAX_GPUS_PER_NODE} GPUs per pod, got {num[row]}", line=row + 2,
                         field="num_gpu")
    specs = raw["gpu_spec"].str.strip() if "gpu_spec" in raw.columns else names.map(lambda _: "")
    specs = specs.where(gpu_pod, "").tolist()
    order = np.argsort(names.to_numpy(), kind="stable")
    mask = np.array([cluster.mask_of(specs[i]) for i in order], dtype=np.int64)
    return OpenbPods(str(path), names.to_numpy()[order].tolist(), cpu[order], mem[order], num[order],
                     np.where(gpu_pod, milli, 0)[order], [specs[i] for i in order], mask)


def pod_lists(folder: str | Path) -> list[Path]:
    """The openb pod lists in a folder (``openb_pod_list_*.csv``), by name."""
    return sorted(Path(folder).glob(POD_LIST_PATTERN))


def load_openb(trace: str | Path, node_list: str | Path | None = None) -> tuple[OpenbCluster, OpenbPods]:
    """A pod list (a file, or a folder with ``openb_pod_list_default.csv``) and its cluster (the node list beside it)."""
    path = Path(trace)
    if path.is_dir():
        found = pod_lists(path)
        default = path / "openb_pod_list_default.csv"
        if default.is_file():
            path = default
        elif len(found) == 1:
            path = found[0]
        else:
            listed = ", ".join(p.name for p in found) or "none"
            raise TraceError(path, f"name one pod list of the folder ({listed})")
    nodes = Path(node_list) if node_list else path.with_name(NODE_LIST)
    cluster = load_cluster(nodes)
    return cluster, load_pods(path, cluster)


@dataclass(frozen=True)
class Sequence:
    """One seed's workload: pods (indices into the pod list) in arrival order, and the nodes' tie-break rank."""

    order: np.ndarray
    rank: np.ndarray
    draws: GoRand  # the generator after these draws: random-fit goes on with it


def arrival_sequence(pods: OpenbPods, cluster: OpenbCluster, seed: int, inflate: float) -> Sequence:
    """The pods in FGD's arrival order for ``seed`` with GPU demand ``inflate`` × the cluster's GPUs (see module doc).

    >>> from simcluster.fragmentation.rules import NodeArrays
    >>> c = OpenbCluster("n", ["a", "b"], np.array([8000] * 2), np.array([1024] * 2), np.array([1, 1]),
    ...                  np.array([0, 0]), ("T4",))
    >>> p = OpenbPods("p", ["x", "y"], np.array([1, 1]), np.array([1, 1]), np.array([1, 1]), np.array([500, 500]),
    ...               ["", ""], np.array([0, 0]))
    >>> s = arrival_sequence(p, c, seed=42, inflate=1.0)
    >>> len(s.order), sorted(s.rank.tolist())   # 1,000 thousandths arrive, then 4 more halves would pass 2,000
    (4, [0, 1])
    """
    rng = GoRand(seed)
    rng.int63()  # FGD's simulator logs one random integer (Go's Int: an Int63 on 64 bits) right after seeding
    order = rng.shuffled(list(range(len(pods.names))))
    demand = pods.gpu_demand
    total = int(demand.sum())
    target = inflate * cluster.total_gpus * WHOLE
    if inflate > 0 and total < target:
        while True:
            i = rng.intn(len(pods.names))
            if total + int(pods.milli[i]) > target:  # (FGD's check counts one GPU's share, its sum all GPUs)
                break
            total += int(demand[i])
            order.append(i)
    elif inflate > 0:
        while total > target:
            i = rng.intn(len(order))
            total -= int(demand[order.pop(i)])
    for _ in range(INFORMER_DRAWS):
        rng.int63()
    rank = np.array(rng.perm(len(cluster.names)), dtype=np.int64)
    return Sequence(np.array(order, dtype=np.int64), rank, rng)
