"""Fragmentation of GPU nodes, as FGD defines it ("Beware of Fragmentation", USENIX ATC'23, §3).

A node's idle GPU capacity is a *fragment* for a pod when that pod could not use it: the pod needs
no GPU (a CPU-only pod), may not run on the node's GPU model, does not fit (too few GPUs with room
for its share, or too little CPU), or fits but some GPUs have less room than its share (those GPUs'
room).  The fragmentation of a node is the expectation of that amount over the *target workload*:
pods drawn from the typical pod shapes with their frequencies (:class:`TypicalPods`).  The cluster's
is the sum over nodes; FGD places each pod where that expectation grows least.

Arrays hold one row per node (or per candidate node state): ``cpu_left`` (milli-CPU), ``gpu_left``
(thousandths left on each GPU, padded with 0 past a node's GPUs; a padded 0 never holds a pod) and
``gpu_type`` (an index into the cluster's GPU models).

>>> import numpy as np
>>> pods = TypicalPods(cpu=np.array([0, 0]), milli=np.array([500, 1000]), num=np.array([1, 1]),
...                    types=np.array([0, 0]), freq=np.array([0.5, 0.5]))
>>> left = np.array([[1000, 300]])   # one whole GPU idle, 300 thousandths left on the other
>>> float(node_frag(np.array([8000]), left, np.array([0]), pods)[0])  # the 300 are a fragment for both pods
300.0
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# FGD's seven classes of idle GPU for one (node, pod) pair; all but Q3's room counts as fragment
Q1_LACK_BOTH, Q2_LACK_GPU, Q3_SATISFIED, Q4_LACK_CPU, XL_SATISFIED, XR_LACK_CPU, NO_ACCESS = range(7)
FRAG_CLASSES = (Q1_LACK_BOTH, Q2_LACK_GPU, Q4_LACK_CPU, XL_SATISFIED, XR_LACK_CPU, NO_ACCESS)  # summed in this order


@dataclass(frozen=True)
class TypicalPods:
    """The target workload: pod shapes (CPU milli, GPU thousandths per GPU, GPUs, allowed GPU models as a
    bit mask over the cluster's models, 0 = any) and their frequencies, most frequent first."""

    cpu: np.ndarray
    milli: np.ndarray
    num: np.ndarray
    types: np.ndarray
    freq: np.ndarray

    def __len__(self) -> int:
        return len(self.freq)


def typical_pods(cpu: np.ndarray, milli: np.ndarray, num: np.ndarray, specs: list[str], masks: np.ndarray,
                 share: float = 0.95) -> TypicalPods:
    """The most frequent pod shapes that together make ``share`` of the pods, frequencies renormalised.

    FGD's ``GetTypicalPods``: shapes (CPU, GPU share, GPUs, GPU models as written, ``specs``) counted,
    sorted by count, ties by the shape, both descending, and taken until their count reaches ``share``
    of all pods.  Its simulator counts CPU-only pods too (every idle GPU is a fragment to them).
    ``masks``: each pod's allowed models as a bit mask over the cluster's models (0: any).

    >>> t = typical_pods(np.array([1, 1, 1, 2]), np.array([0, 0, 0, 500]), np.array([0, 0, 0, 1]),
    ...                  ["", "", "", ""], np.zeros(4, int), share=0.7)
    >>> t.cpu.tolist(), t.freq.tolist()
    ([1], [1.0])
    """
    shapes: dict[tuple[int, int, int, str], list[int]] = {}
    for key, mask in zip(zip(cpu.tolist(), milli.tolist(), num.tolist(), specs), masks.tolist()):
        shapes.setdefault(key, [0, mask])[0] += 1
    ranked = sorted(shapes.items(), key=lambda kv: (kv[1][0], kv[0]), reverse=True)
    total = float(len(cpu))
    wanted = share * total
    kept: list[tuple[tuple[int, int, int, int], float]] = []
    cumulative = 0.0
    for (c, m, n, _), (count, mask) in ranked:
        if cumulative >= wanted:
            break
        cumulative += count
        kept.append(((c, m, n, mask), count / total))
    scale = cumulative / total
    freq = [f / scale for _, f in kept] if len(kept) < len(ranked) else [f for _, f in kept]
    columns = np.array([k for k, _ in kept], dtype=np.int64).reshape(-1, 4)
    return TypicalPods(columns[:, 0], columns[:, 1], columns[:, 2], columns[:, 3], np.array(freq, dtype=np.float64))


def allowed(type_masks: np.ndarray, gpu_type: np.ndarray) -> np.ndarray:
    """(rows × pods) whether each pod may run on each row's GPU model (mask 0: any model)."""
    return (type_masks[None, :] == 0) | ((type_masks[None, :] >> gpu_type[:, None]) & 1).astype(bool)


def node_frag(cpu_left: np.ndarray, gpu_left: np.ndarray, gpu_type: np.ndarray, pods: TypicalPods) -> np.ndarray:
    """Each row's expected fragment (thousandths of a GPU) for a pod drawn from ``pods``.

    Summed as FGD's simulator sums it (per class over pods in order, then the classes in
    :data:`FRAG_CLASSES` order), so that scores rounded to integers tie where FGD's do.
    """
    rows = len(cpu_left)
    total = gpu_left.sum(axis=1)  # (rows,)
    gpu_pod = pods.milli > 0
    cpu_ok = cpu_left[:, None] >= pods.cpu[None, :]
    # GPUs with room for each pod's share, and the room on the other GPUs
    room = gpu_left[:, None, :] >= pods.milli[None, :, None]  # rows × pods × GPUs
    fits = room.sum(axis=2) >= pods.num[None, :]
    short = np.where(room, 0, gpu_left[:, None, :]).sum(axis=2)
    access = allowed(pods.types, gpu_type)
    amount = np.where(fits & cpu_ok & access & gpu_pod[None, :], short, total[:, None]) * pods.freq[None, :]
    klass = np.where(~gpu_pod[None, :], np.where(cpu_ok, XL_SATISFIED, XR_LACK_CPU),
                     np.where(~access, NO_ACCESS,
                              np.where(fits, np.where(cpu_ok, Q2_LACK_GPU, Q4_LACK_CPU),
                                       np.where(cpu_ok, Q2_LACK_GPU, Q1_LACK_BOTH))))
    frag = np.zeros(rows)
    for k in FRAG_CLASSES:
        part = np.where(klass == k, amount, 0.0)
        frag = frag + (np.cumsum(part, axis=1)[:, -1] if len(pods) else 0.0)
    return frag
