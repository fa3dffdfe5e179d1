"""FGD's evaluation: pods arrive in a seeded sequence, each placed once or failing, none leaving.

After each pod the study records the GPU demand arrived so far, the GPU allocated and the cluster's
fragmentation; :func:`levels` then reads them at each arrived level (0 … 130 % of the cluster's GPUs)
the way FGD's analysis scripts do: the mean over the pods whose arrived level rounds to it (or, for a
level no pod rounds to, over those within one point), to two decimals.

The cluster is plain arrays (:class:`~simcluster.fragmentation.rules.NodeArrays`); a step costs a few
vector operations over the nodes.  FGD's node scores depend only on the node and the pod's shape, so
:class:`_FgdScores` keeps them per shape and recomputes a node's only after the node changed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from simcluster.fragmentation.frag import TypicalPods, node_frag
from simcluster.fragmentation.rules import Fgd, NodeArrays, Pod, Rule, best_of, make_rule
from simcluster.fragmentation.workload import OpenbCluster, OpenbPods, Sequence, arrival_sequence

LEVELS = range(131)  # arrived GPU demand, % of the cluster's GPUs
COLUMNS = ("placement", "seed", "arrived_pct", "unallocated_gpu_pct", "frag_pct_of_capacity", "frag_pct_of_idle")


@dataclass(frozen=True)
class Trajectory:
    """After each arriving pod: thousandths of a GPU arrived, allocated, and fragmented, and idle GPU (thousandths)."""

    arrived: np.ndarray
    allocated: np.ndarray
    frag: np.ndarray
    idle: np.ndarray
    failed: int
    total_gpus: int


class _FgdScores:
    """FGD's scores per pod shape and node, recomputed for a node only after it changed (the fast path)."""

    def __init__(self, rule: Fgd, nodes: NodeArrays, frag_now: np.ndarray, version: np.ndarray) -> None:
        self.rule, self.nodes, self.frag_now, self.version = rule, nodes, frag_now, version
        self._cache: dict[Pod, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}

    def choose(self, pod: Pod) -> tuple[int, list[int]] | None:
        nodes = self.nodes
        idx = np.flatnonzero(nodes.fits(pod))
        if len(idx) == 0:
            return None
        if len(idx) == 1:
            node = int(idx[0])
            return node, self.rule.gpus(nodes, pod, node) if pod.num else []
        count = len(nodes.rank)
        scores, gpus, seen = self._cache.setdefault(
            pod, (np.zeros(count, np.int64), np.zeros(count, np.int64), np.full(count, -1, np.int64)))
        stale = idx[seen[idx] != self.version[idx]]
        if len(stale):
            scores[stale], gpus[stale] = self.rule.candidate_scores(nodes, pod, stale, self.frag_now[stale])
            seen[stale] = self.version[stale]
        node = best_of(idx, scores[idx], nodes.rank)
        if pod.shares:
            return node, [int(gpus[node])]
        return node, self.rule.gpus(nodes, pod, node) if pod.num else []


def place(nodes: NodeArrays, pod: Pod, node: int, gpus: list[int]) -> None:
    """Put ``pod`` on ``node``'s ``gpus`` (change the arrays)."""
    nodes.cpu_left[node] -= pod.cpu
    nodes.mem_left[node] -= pod.mem
    if pod.num:
        nodes.gpu_left[node, gpus] -= pod.milli
        nodes.tags[node] |= pod.tag


def run(cluster: OpenbCluster, pods: OpenbPods, placement: str, seed: int, inflate: float = 1.3,
        workload: TypicalPods | None = None, sequence: Sequence | None = None, cached: bool = True) -> Trajectory:
    """One (placement, seed) run of FGD's evaluation.

    ``cached``: fgd keeps its scores per pod shape (:class:`_FgdScores`); False scores every node afresh
    for every pod, the plain path that a test holds equal to the fast one.
    """
    workload = workload if workload is not None else pods.typical()
    sequence = sequence if sequence is not None else arrival_sequence(pods, cluster, seed, inflate)
    nodes = cluster.arrays(sequence.rank)
    rule: Rule = make_rule(placement, workload, sequence.draws)
    frag_now = node_frag(nodes.cpu_left, nodes.gpu_left, nodes.gpu_type, workload)
    version = np.zeros(len(cluster.names), dtype=np.int64)
    chooser = (_FgdScores(rule, nodes, frag_now, version).choose if isinstance(rule, Fgd) and cached
               else lambda pod: rule.choose(nodes, pod))
    freq_sum = float(workload.freq.sum())
    capacity = cluster.total_gpus * 1000
    steps = len(sequence.order)
    arrived, allocated, frag, idle = (np.zeros(steps, np.int64), np.zeros(steps, np.int64), np.zeros(steps),
                                      np.zeros(steps))
    shapes = [pods.pod(i) for i in range(len(pods.names))]
    got = 0
    demand = allocated_now = failed = 0
    for step, i in enumerate(sequence.order.tolist()):
        pod = shapes[i]
        demand += pod.num * pod.milli
        choice = chooser(pod)
        if choice is None:
            failed += 1
        else:
            node, gpus = choice
            place(nodes, pod, node, gpus)
            allocated_now += pod.num * pod.milli
            frag_now[node] = node_frag(nodes.cpu_left[node:node + 1], nodes.gpu_left[node:node + 1],
                                       nodes.gpu_type[node:node + 1], workload)[0]
            version[node] += 1
            got += 1
        arrived[step], allocated[step] = demand, allocated_now
        frag[step] = frag_now.sum()
        idle[step] = (capacity - allocated_now) * freq_sum
    return Trajectory(arrived, allocated, frag, idle, failed, cluster.total_gpus)


def levels(path: Trajectory, placement: str, seed: int) -> pd.DataFrame:
    """The trajectory at each arrived level (:data:`LEVELS`), FGD's way (see module doc); one row per level."""
    gpus = path.total_gpus
    level = np.round(path.arrived / gpus / 10)  # (numpy rounds halves to even, as Python's round does)
    alloc = np.round(path.allocated / gpus / 10, 2)
    frag_pct = np.round(path.frag, 2) / 1000 / gpus * 100
    frag_ratio = np.round(100 * path.frag / path.idle, 2)
    rows = []
    for at in LEVELS:
        hit = level == at
        if not hit.any():
            hit = (level >= at - 1) & (level <= at + 1)
            if not hit.any():
                continue
        rows.append((placement, seed, at, round(100 - round(float(alloc[hit].mean()), 2), 2),
                     round(float(frag_pct[hit].mean()), 2), round(float(frag_ratio[hit].mean()), 2)))
    return pd.DataFrame(rows, columns=list(COLUMNS))
