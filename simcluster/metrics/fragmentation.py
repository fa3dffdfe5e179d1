"""GPU fragmentation over time, for runs whose jobs take fractions of GPUs (the openb traces).

The fragmentation of the cluster is FGD's (:mod:`simcluster.fragmentation.frag`): the idle GPU share
that a job drawn from the run's own workload could not use (its GPU shapes, most frequent making
95 %; the engine's cluster has no CPU, so only GPUs count).  It is sampled at every scheduling
instant, as the cluster timeline is, so each row of ``timeline.csv`` gets its value; the summary
gets its time-weighted mean.

>>> from simcluster.cluster_spec import ClusterSpec, NodeGroup
>>> from simcluster.job import Job
>>> spec = ClusterSpec((NodeGroup("c", "t4", 1, 2),))
>>> jobs = [Job(index=0, job_id="a", vc="c", gpu_num=1, submit_time=0, duration=1, gpu_milli=600)]
>>> frag = FragmentationTimeline(jobs, spec)
>>> frag.on_sample(0.0, 0, 0, 0, 1); frag.frag_gpus[-1]   # an idle cluster holds the 0.6 job anywhere
0.0
"""

from __future__ import annotations

import math
from array import array
from typing import Any

import numpy as np

from simcluster.cluster import WHOLE, Node
from simcluster.cluster_spec import ClusterSpec
from simcluster.fragmentation.frag import node_frag, typical_pods
from simcluster.fragmentation.rules import allowed_mask
from simcluster.job import Job
from simcluster.metrics.observer import RunObserver


class FragmentationTimeline(RunObserver):
    """Fragmented GPUs and their share of the idle GPUs at each scheduling instant (one row per distinct time)."""

    def __init__(self, jobs: list[Job], spec: ClusterSpec) -> None:
        self._row: dict[tuple[str, int], int] = {}
        gpus: list[tuple[int, int]] = []
        types = list(spec.gpu_types)
        for vc in spec.vcs:
            index = 0
            for gpu_type, count, per_node, _ in spec.groups_of(vc):
                for _ in range(count):
                    self._row[(vc, index)] = len(gpus)
                    gpus.append((per_node, types.index(gpu_type)))
                    index += 1
        self._total = sum(g for g, _ in gpus)
        width = max((g for g, _ in gpus), default=0)
        self._left = np.zeros((len(gpus), width), dtype=np.int64)
        for row, (count, _) in enumerate(gpus):
            self._left[row, :count] = WHOLE
        self._type = np.array([t for _, t in gpus], dtype=np.int64)
        masks = [self._mask(job, types) for job in jobs]
        self._workload = typical_pods(np.zeros(len(jobs), np.int64), np.array([j.gpu_milli for j in jobs], np.int64),
                                      np.array([j.gpu_num for j in jobs], np.int64), [str(m) for m in masks],
                                      np.array(masks, dtype=np.int64))
        self._frag = self._compute(np.arange(len(gpus)))
        self._freq = float(self._workload.freq.sum())
        self._held: dict[Job, list[tuple[Node, list[int]]]] = {}
        self._dirty: set[int] = set()
        self.time = array("d")
        self.frag_gpus = array("d")
        self.frag_pct_of_idle = array("d")
        self._last = math.nan

    @staticmethod
    def _mask(job: Job, types: list[str]) -> int:
        if job.speeds is None:
            return 0
        return allowed_mask([job.speed_on(t) > 0 for t in types])

    def _compute(self, rows: np.ndarray) -> np.ndarray:
        return node_frag(np.zeros(len(rows), np.int64), self._left[rows], self._type[rows], self._workload)

    def _use(self, job: Job, sign: int) -> None:
        for node, ids in self._held[job] if sign < 0 else job.allocation:
            row = self._row.get((node.vc.name, node.index))
            if row is None:  # a policy's own partition (not the trace's cluster)
                continue
            self._left[row, ids] -= sign * job.gpu_milli
            self._dirty.add(row)

    def begin(self, job: Job, now: float) -> None:
        self._held[job] = [(node, list(ids)) for node, ids in job.allocation]
        self._use(job, +1)

    def end(self, job: Job, now: float) -> None:
        if job in self._held:
            self._use(job, -1)
            del self._held[job]

    def on_sample(self, now: float, used_gpus: int, shared_gpus: int, running: int, pending: int) -> None:
        if self._dirty:
            rows = np.fromiter(self._dirty, dtype=np.int64)
            self._frag[rows] = self._compute(rows)
            self._dirty.clear()
        frag = float(self._frag.sum()) / WHOLE
        idle = float(self._left.sum()) / WHOLE * self._freq
        share = 100.0 * frag / idle if idle > 0 else 0.0
        if now == self._last:
            self.frag_gpus[-1], self.frag_pct_of_idle[-1] = frag, share
            return
        self.time.append(now)
        self.frag_gpus.append(frag)
        self.frag_pct_of_idle.append(share)
        self._last = now

    def summary(self, end: float) -> dict[str, Any]:
        """Time-weighted means from the first sample to ``end``, for ``summary.json``."""
        if not len(self.time):
            return {}
        times = np.append(np.asarray(self.time), max(end, self.time[-1]))
        weights = np.diff(times)
        if weights.sum() <= 0:
            weights = np.ones(len(self.time))
        gpus = float(np.average(np.asarray(self.frag_gpus), weights=weights))
        return {"mean_frag_gpus": round(gpus, 3),
                "mean_frag_pct_of_gpus": round(100 * gpus / max(self._total, 1), 3),
                "mean_frag_pct_of_idle": round(float(np.average(np.asarray(self.frag_pct_of_idle),
                                                                weights=weights)), 3),
                "workload_shapes": len(self._workload)}
