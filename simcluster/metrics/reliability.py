"""What failures, checkpoints and restarts cost: per job (``jobs.csv``) and per run (``summary.json``).

Only runs given a reliability option (``--faults``, ``--checkpoint-cost``, ``--restart-cost``,
``--checkpoint-interval young-daly``, ``--spare-nodes``, ``--exclude-after``) have these columns and keys.

Per job: ``interruptions`` (failures that stopped it: evictions and spare swaps), ``checkpoints`` (periodic
ones begun), ``checkpoint_s`` and ``restart_s`` (seconds it held GPUs writing checkpoints, a preemption's
included, and restarting, a spare's swap included), ``lost_work`` (already a column: progress thrown away),
``checkpoint_interval_s`` (at its last start), ``requeue_s`` (time queued after its first start: the waits of
requeued restarts and preemptions), ``productive_s`` (time holding GPUs making progress that was kept) and
``ettr`` = productive_s ÷ (end − first start): queueing after an interruption counts against it (it is the
cost of a failure without a spare), the wait before the first start does not.  A job not finished: up to the
run's end.

Per run: the cluster's GPU-time by cause (productive, lost to failures, checkpointing, restarting, other
overhead such as preemption restores, down, idle; GPU-seconds over the makespan and their shares), the mean
and the GPU-weighted ETTR of the jobs that started, and per job size (GPUs: 1-8, 9-64, 65-512, 513-4096,
4097+) the jobs, their interruptions and the mean time to failure they saw (their GPU-holding time ÷
interruptions).

Over time (:class:`CauseTimeline`, ``summary.json``'s ``gpu_time_by_cause_over_time``): the same GPU-seconds by
cause in :data:`BINS` equal bins of the makespan, for the report's picture.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from simcluster.engine.reliability import CHECKPOINT, OTHER, RESTART, ReliabilityRecord
from simcluster.job import Job, JobState
from simcluster.metrics.observer import Observer

SIZE_BUCKETS = ((1, 8), (9, 64), (65, 512), (513, 4096), (4097, None))
COLUMNS = ("interruptions", "checkpoints", "checkpoint_s", "restart_s", "checkpoint_interval_s", "requeue_s",
           "productive_s", "ettr")
CAUSES = ("productive", "lost", "checkpoint", "restart", "other_overhead", "down", "idle")


class DownTime(Observer):
    """GPU-seconds of nodes down (failed, waiting for repair or a spare, or excluded) over a run."""

    def __init__(self, gpus_of: Mapping[str, int], default_gpus: int) -> None:
        self.gpus_of, self.default = gpus_of, default_gpus
        self.since: dict[str, float] = {}
        self.gpu_seconds = 0.0
        self.swaps = 0

    def on_node_down(self, node_name: str, now: float) -> None:
        self.since.setdefault(node_name, now)

    def on_node_up(self, node_name: str, now: float) -> None:
        began = self.since.pop(node_name, None)
        if began is not None:
            self.gpu_seconds += (now - began) * self.gpus_of.get(node_name, self.default)

    def on_swap(self, node_name: str, now: float) -> None:
        self.swaps += 1

    def total(self, end: float) -> float:
        """Down GPU-seconds up to ``end``, nodes still down included."""
        return self.gpu_seconds + sum((end - began) * self.gpus_of.get(name, self.default)
                                      for name, began in self.since.items())


BINS = 100  # bins of the makespan in gpu_time_by_cause_over_time


class CauseTimeline(DownTime):
    """:class:`DownTime`, and when each job held its GPUs and lost work: the GPU-seconds by cause of
    :func:`run_figures` per time bin (:meth:`series`).

    Exact per bin: the down time (each node's outages), the GPU-time held (each job's spans from its start to its
    stop, a swap not stopping it) and so the idle time.  Lost work is drawn over the stretch before the failure
    that lost it (as long as the work lost, not before the job's start or its last swap: where the lost work was
    done); the rest of a job's held time is split between productive, checkpoint, restart and other overhead in
    the job's own proportions (``jobs.csv``), evenly over its held time.  The bins add up to
    ``gpu_seconds_by_cause``.
    """

    def __init__(self, gpus_of: Mapping[str, int], default_gpus: int) -> None:
        super().__init__(gpus_of, default_gpus)
        self.held: dict[Job, float] = {}  # running job → when it took its GPUs
        self.epoch: dict[Job, float] = {}  # running job → its start or last swap (its lost work is done after)
        self.lost_seen: dict[Job, float] = {}
        self.spans: list[tuple[int, float, float]] = []  # (job index, from, to) of GPUs held
        self.losses: list[tuple[int, float, float]] = []  # (job index, from, to) of work lost
        self.outages: list[tuple[int, float, float]] = []  # (GPUs, from, to) of nodes down

    def on_start(self, job: Job, now: float) -> None:
        self.held[job] = self.epoch[job] = now

    def _close(self, job: Job, now: float) -> None:
        began = self.held.pop(job, None)
        self.epoch.pop(job, None)
        if began is not None and now > began:
            self.spans.append((job.index, began, now))

    def on_preempt(self, job: Job, now: float) -> None:
        self._close(job, now)

    def on_move(self, job: Job, now: float) -> None:
        self._close(job, now)

    def on_finish(self, job: Job, now: float) -> None:
        self._close(job, now)

    def on_restart(self, job: Job, now: float) -> None:
        lost = job.lost_work - self.lost_seen.get(job, 0.0)
        self.lost_seen[job] = job.lost_work
        if lost > 0:
            self.losses.append((job.index, max(self.epoch.get(job, now), now - lost), now))
        if job.state is JobState.RUNNING and job in self.held:  # a spare swapped in: it keeps its GPUs
            self.epoch[job] = now
        else:
            self._close(job, now)

    def on_node_up(self, node_name: str, now: float) -> None:
        began = self.since.get(node_name)
        if began is not None:
            self.outages.append((self.gpus_of.get(node_name, self.default), began, now))
        super().on_node_up(node_name, now)

    def series(self, frame: pd.DataFrame, jobs: Iterable[Job], gpus: int, start: float, end: float,
               bins: int = BINS) -> dict[str, Any] | None:
        """GPU-seconds by cause (:data:`CAUSES`) in ``bins`` equal bins from ``start`` to ``end``; ``frame``: the
        jobs table of :func:`job_columns` (rows in the order of ``jobs`` sorted by index).  None for an empty
        span."""
        if not end > start:
            return None
        position = {job.index: i for i, job in enumerate(sorted(jobs, key=lambda j: j.index))}
        g = frame["gpu_num"].to_numpy(float)
        parts = np.stack([frame[name].to_numpy(float) for name in ("productive_s", "checkpoint_s", "restart_s")])
        other = np.maximum(frame["busy_time"].to_numpy(float) - frame["lost_work"].to_numpy(float)
                           - parts.sum(axis=0), 0.0)
        parts = np.vstack([parts, other[None, :]])
        total = parts.sum(axis=0)
        shares = np.where(total > 0, parts / np.where(total > 0, total, 1.0), np.array([[1.0], [0], [0], [0]]))
        edges = np.linspace(start, end, bins + 1)
        open_spans = [(job.index, began, end) for job, began in self.held.items() if end > began]
        spans = _table(self.spans + open_spans, position)
        losses = _table(self.losses, position)
        found: dict[str, np.ndarray] = {}
        lost_w = g[losses[0]] if len(losses[0]) else np.zeros(0)
        for name, share in zip(("productive", "checkpoint", "restart", "other_overhead"), shares, strict=True):
            found[name] = (_per_bin(spans[1], spans[2], g[spans[0]] * share[spans[0]], edges)
                           - _per_bin(losses[1], losses[2], lost_w * share[losses[0]], edges))
        found["lost"] = _per_bin(losses[1], losses[2], lost_w, edges)
        outages = self.outages + [(self.gpus_of.get(n, self.default), began, end) for n, began in self.since.items()]
        down = np.array(outages, dtype=float).reshape(-1, 3)
        found["down"] = _per_bin(down[:, 1], down[:, 2], down[:, 0], edges)
        held = sum(found[name] for name in ("productive", "checkpoint", "restart", "other_overhead", "lost"))
        found["idle"] = np.maximum(gpus * np.diff(edges) - held - found["down"], 0.0)
        return {"start": float(start), "bin_s": float((end - start) / bins), "bins": bins,
                "gpu_seconds": {name: [round(float(v), 3) for v in np.maximum(found[name], 0.0)] for name in CAUSES}}


def _table(rows: list[tuple[int, float, float]], position: Mapping[int, int]) -> tuple[np.ndarray, ...]:
    """(row positions, from, to) of ``rows`` of jobs in the table."""
    kept = [(position[i], a, b) for i, a, b in rows if i in position]
    if not kept:
        return np.zeros(0, dtype=np.int64), np.zeros(0), np.zeros(0)
    found = np.array(kept, dtype=float)
    return found[:, 0].astype(np.int64), found[:, 1], found[:, 2]


def _per_bin(starts: np.ndarray, ends: np.ndarray, weights: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Σ weight × the length of [start, end] within each bin between ``edges``: the weighted spans' cumulative
    (piecewise linear, its slope changing at each start and end) read at the edges.

    >>> _per_bin(np.array([0.5, 1.0]), np.array([2.5, 4.0]), np.array([1.0, 2.0]), np.array([0.0, 2.0, 4.0]))
    array([3.5, 4.5])
    """
    if not len(starts):
        return np.zeros(len(edges) - 1)
    times = np.concatenate([starts, ends])
    order = np.argsort(times, kind="stable")
    times = times[order]
    slope = np.cumsum(np.concatenate([weights, -weights])[order])
    cumulative = np.concatenate([[0.0], np.cumsum(slope[:-1] * np.diff(times))])
    return np.diff(np.interp(edges, times, cumulative))


def size_label(low: int, high: int | None) -> str:
    return f"{low}-{high}" if high is not None else f"{low}+"


def job_columns(frame: pd.DataFrame, jobs: Iterable[Job], record: ReliabilityRecord, end: float) -> pd.DataFrame:
    """``frame`` (the jobs table, rows in trace order as ``jobs_frame`` makes them) with the columns of
    :data:`COLUMNS`."""
    rows = sorted(jobs, key=lambda j: j.index)
    n = len(rows)
    values = {name: np.zeros(n) for name in COLUMNS}
    for i, job in enumerate(rows):
        costs = record.costs.get(job)
        paid = costs.paid_now(job, end) if costs is not None else [0.0, 0.0, 0.0]
        values["checkpoint_s"][i] = paid[CHECKPOINT]
        values["restart_s"][i] = paid[RESTART]
        if costs is not None:
            values["interruptions"][i] = costs.interruptions
            values["checkpoints"][i] = costs.checkpoints
        values["checkpoint_interval_s"][i] = costs.interval if costs is not None and costs.interval else \
            record.interval_of(job)
        values["productive_s"][i] = -(paid[CHECKPOINT] + paid[RESTART] + paid[OTHER])  # busy added below
    busy = frame["busy_time"].to_numpy(float)
    start, finish = frame["start_time"].to_numpy(float), frame["end_time"].to_numpy(float)
    overhead_paid = -values["productive_s"]
    productive = np.maximum(busy - overhead_paid - frame["lost_work"].to_numpy(float), 0.0)
    span = np.where(np.isnan(finish), end, finish) - start
    out = frame.copy()
    for name in ("interruptions", "checkpoints"):
        out[name] = values[name].astype(np.int64)
    for name in ("checkpoint_s", "restart_s", "checkpoint_interval_s"):
        out[name] = values[name]
    out["requeue_s"] = frame["queue"].to_numpy(float) - (start - frame["submit_time"].to_numpy(float))
    out.loc[np.isnan(start), "requeue_s"] = 0.0
    out["productive_s"] = productive
    with np.errstate(invalid="ignore", divide="ignore"):
        out["ettr"] = np.where(span > 0, productive / np.where(span > 0, span, 1.0), np.where(np.isnan(start), np.nan, 1.0))
    return out


def run_figures(frame: pd.DataFrame, record: ReliabilityRecord, down_gpu_seconds: float, gpus: int,
                makespan: float) -> dict[str, Any]:
    """summary.json's figures of failures and their costs (module docstring), from the jobs table of
    :func:`job_columns`."""
    g = frame["gpu_num"].to_numpy(float)
    busy = float((frame["busy_time"].to_numpy(float) * g).sum())
    by_cause = {
        "productive": float((frame["productive_s"].to_numpy(float) * g).sum()),
        "lost": float((frame["lost_work"].to_numpy(float) * g).sum()),
        "checkpoint": float((frame["checkpoint_s"].to_numpy(float) * g).sum()),
        "restart": float((frame["restart_s"].to_numpy(float) * g).sum()),
    }
    by_cause["other_overhead"] = max(0.0, busy - sum(by_cause.values()))
    total = gpus * makespan
    by_cause["down"] = down_gpu_seconds
    by_cause["idle"] = max(0.0, total - busy - down_gpu_seconds)
    started = frame[frame["start_time"].notna()]
    ettr = started["ettr"].to_numpy(float)
    weights = started["gpu_num"].to_numpy(float)
    figures: dict[str, Any] = {
        "ettr_mean": float(ettr.mean()) if len(ettr) else None,
        "ettr_gpu_weighted": float((ettr * weights).sum() / weights.sum()) if weights.sum() > 0 else None,
        "interruptions": int(frame["interruptions"].sum()),
        "gpu_seconds_by_cause": by_cause,
        "gpu_share_by_cause": {k: (v / total if total > 0 else 0.0) for k, v in by_cause.items()},
        "per_size_reliability": size_reliability(frame),
    }
    return figures | {"failures": record.report}


def size_reliability(frame: pd.DataFrame) -> dict[str, dict[str, Any]]:
    """Per size bucket with jobs: jobs, interruptions, per job, the MTTF they saw (s) and their mean ETTR."""
    gpus = frame["gpu_num"].to_numpy()
    found: dict[str, dict[str, Any]] = {}
    for low, high in SIZE_BUCKETS:
        mask = (gpus >= low) & ((gpus <= high) if high is not None else True)
        rows = frame[mask]
        if rows.empty:
            continue
        count = int(rows["interruptions"].sum())
        held = float(rows["busy_time"].sum())
        ettr = rows["ettr"].dropna()
        found[size_label(low, high)] = {
            "jobs": len(rows), "interruptions": count, "interruptions_per_job": count / len(rows),
            "mttf_s": held / count if count else None, "ettr_mean": float(ettr.mean()) if len(ettr) else None,
        }
    return found
