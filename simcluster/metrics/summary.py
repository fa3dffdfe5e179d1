"""From finished jobs to the results contract: the jobs table and the summary figures."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from operator import attrgetter
from typing import Any

import numpy as np
import pandas as pd

from simcluster.job import Job, JobState
from simcluster.metrics.fairness import fairness_figures
from simcluster.metrics.tail import DEFAULT_WAIT_BOUNDS, frame_tail, size_figures

JOB_COLUMNS = [
    "job_id", "vc", "user", "gpu_num", "submit_time", "start_time", "end_time", "duration", "queue", "jct",
    "preemptions", "restarts", "busy_time", "overhead", "lost_work", "shared_seconds", "mean_speed",
]


def jobs_frame(jobs: Iterable[Job], now: float | None = None,
               left_at: Mapping[Job, float] | None = None, trace: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per job, in trace order (times in seconds).

    Jobs not finished (a run stopped at a horizon, or a job abandoned) have no end time and no JCT;
    their queueing and busy time count up to ``now`` (the run's end), or for a job in ``left_at``
    (taken out of the run) up to when it left.  ``trace``: the trace's table the jobs were made from
    (row ``i`` is the job of index ``i``, its columns what the job was given), from which the given
    columns are taken as they are: a million job ids and names need no conversion to text columns again.
    """
    rows = sorted(jobs, key=attrgetter("index"))
    left_at = left_at or {}

    def until(j: Job) -> float:
        return left_at.get(j, now if now is not None else j.pending_since)

    def queue(j: Job) -> float:  # a waiting job's current wait counts too
        return j.queue_time + (until(j) - j.pending_since if j.state is JobState.PENDING else 0.0)

    def busy(j: Job) -> float:  # and a running job's current run
        return j.busy_time + (until(j) - j.run_started_at if j.state is JobState.RUNNING else 0.0)

    def maybe(value: float | None) -> float:
        return np.nan if value is None else value

    n = len(rows)

    def column(name: str, dtype: Any = float) -> np.ndarray:  # (map and attrgetter: no Python frame per job)
        return np.fromiter(map(attrgetter(name), rows), dtype, n)

    counts = ("preemptions", "restarts", "overhead_total", "lost_work", "shared_seconds")
    if list(map(attrgetter("state"), rows)).count(JobState.FINISHED) == n:  # the usual run: every job done
        # (one pass reading every figure of a job at once: after a long run the jobs are out of the CPU's
        # caches, and a pass per column would fetch each job's memory again)
        read = ("index", "start_time", "end_time", "queue_time", "busy_time", *counts)
        whole = ("index", "preemptions", "restarts")
        values: Any = _records(map(attrgetter(*read), rows), n,
                               np.dtype([(name, np.int64 if name in whole else float) for name in read]))
        start, end, queued, busy_time = (values["start_time"], values["end_time"], values["queue_time"],
                                         values["busy_time"])
        index = values["index"]
    else:
        start = np.fromiter((maybe(j.start_time) for j in rows), float, n)
        end = np.fromiter((maybe(j.end_time) for j in rows), float, n)
        queued = np.fromiter((queue(j) for j in rows), float, n)
        busy_time = np.fromiter((busy(j) for j in rows), float, n)
        values = {name: column(name, np.int64 if name in ("preemptions", "restarts") else float) for name in counts}
        index = column("index", np.int64) if trace is not None else None
    given = _given_columns(trace, index) if trace is not None else None
    if given is None:
        given = {"job_id": list(map(attrgetter("job_id"), rows)), "vc": list(map(attrgetter("vc"), rows)),
                 "user": list(map(attrgetter("user"), rows)), "gpu_num": column("gpu_num", np.int64),
                 "submit_time": _whole_if_whole(column("submit_time")),
                 "duration": _whole_if_whole(column("duration"))}
    submit, duration = np.asarray(given["submit_time"]), np.asarray(given["duration"])
    overhead = values["overhead_total"]
    # progress made per second of running (1.0 unless the job shared GPUs); restore overhead excluded
    working, work = busy_time - overhead, duration + values["lost_work"]
    mean_speed = np.where(working > 0, work / np.where(working > 0, working, 1.0), 1.0)
    mean_speed[np.isnan(end)] = np.nan  # its work is not done: no speed to tell
    table = {
        **given,
        "start_time": start,
        "end_time": end,
        "queue": queued,
        "jct": end - submit,
        "preemptions": values["preemptions"],
        "restarts": values["restarts"],
        "busy_time": busy_time,
        "overhead": overhead,
        "lost_work": values["lost_work"],
        "shared_seconds": values["shared_seconds"],
        "mean_speed": mean_speed,
    }
    # (made in its order, no copy to reorder; and the columns as they are, not copied into one block per type,
    # which would hold a second copy of them while the run's jobs are still in memory: the run's peak)
    return pd.DataFrame({name: table[name] for name in JOB_COLUMNS}, copy=False)


def _records(rows: Iterator[tuple[Any, ...]], n: int, record: np.dtype,
             step: int = 1 << 16) -> dict[str, np.ndarray]:
    """The ``n`` tuples of ``rows`` as one array per field of ``record``: read a block of rows at a time into
    a small record array, so that the columns are contiguous and no record array of every row is held beside
    them."""
    columns = {name: np.empty(n, record[name]) for name in record.names}
    for start in range(0, n, step):
        block = np.fromiter(rows, record, min(step, n - start))  # (takes just that many from the iterator)
        for name, column in columns.items():
            column[start:start + len(block)] = block[name]
    return columns


def _given_columns(trace: pd.DataFrame, index: np.ndarray) -> dict[str, Any] | None:
    """The jobs' given columns (id, VC, user, GPUs, submit time, duration) from the rows ``index`` of the
    trace's table, with the values and types that reading them from the jobs gives; None when the table
    does not hold them all as such (text columns of another type: the jobs are read instead)."""
    if not all(c in trace for c in ("job_id", "vc", "gpu_num", "submit_time", "duration")):
        return None
    text = ["job_id", "vc", *(["user"] if "user" in trace else [])]
    if not all(isinstance(trace[c].dtype, pd.StringDtype) for c in text):
        return None
    whole = len(index) == len(trace) and bool((index == np.arange(len(index))).all())
    taken = {c: trace[c].array if whole else trace[c].array.take(index) for c in text}
    return {
        "job_id": taken["job_id"],
        "vc": taken["vc"],
        "user": taken.get("user", [""] * len(index)),
        "gpu_num": trace["gpu_num"].to_numpy(np.int64)[index],
        "submit_time": _whole_if_whole(trace["submit_time"].to_numpy(float)[index]),
        "duration": _whole_if_whole(trace["duration"].to_numpy(float)[index]),
    }


def _whole_if_whole(values: np.ndarray) -> np.ndarray:
    """Integers when every value is whole (job logs count whole seconds), else the floats (Gavel traces)."""
    whole = np.isfinite(values).all() and (values == np.round(values)).all() and (np.abs(values) < 2**53).all()
    return values.astype(np.int64) if whole else values


def figures(frame: pd.DataFrame, gpus: int, sharing: tuple[float, float] = (0.0, 0.0),
            run_end: float | None = None, wait_bounds: Sequence[float] = DEFAULT_WAIT_BOUNDS) -> dict[str, Any]:
    """avg/p50/p99 JCT, avg/p99 queue, the tail (max and p99.9 queue, the share of jobs that waited longer than
    each of ``wait_bounds``, bounded slowdown: :mod:`simcluster.metrics.tail`), makespan, GPU utilization,
    sharing and fairness of a set of jobs.

    ``sharing``: (GPU-seconds of shared GPUs, job-seconds beyond the first job of a GPU) as the
    cluster counted them, so that a GPU holding two jobs counts once in the utilization.
    JCT, queueing and fairness figures are over finished jobs; when some did not finish, the
    makespan runs to ``run_end`` (the run's end) and the utilization counts their GPU time too.
    ``avg_run_slowdown`` is the mean over finished jobs of 1 ÷ their mean speed while running (how much
    slower than alone they ran: shared GPUs, spread placements); not JCT ÷ duration, which is
    ``avg_jct_slowdown`` in ``users.csv``, nor the bounded slowdown.
    """
    done = frame[frame["end_time"].notna()]
    if done.empty:
        return {k: 0.0 for k in ("avg_jct", "avg_queue", "p50_jct", "p99_jct", "p99_queue", "makespan",
                                 "gpu_utilization")} | {"jobs": 0} | frame_tail(done, wait_bounds) | fairness_figures(done) | {
            "preemptions": int(frame["preemptions"].sum()), "restarts": int(frame["restarts"].sum())}
    jct, queue = done["jct"].to_numpy(), done["queue"].to_numpy()
    last = float(done["end_time"].max())
    if run_end is not None and len(done) < len(frame):
        last = max(last, run_end)
    makespan = last - float(frame["submit_time"].min())
    shared, extra = sharing
    if "gpu_seconds" in frame:  # elastic jobs: their GPU counts changed as they ran
        busy = float(frame["gpu_seconds"].sum()) - extra
    else:
        busy = float((frame["busy_time"] * frame["gpu_num"]).sum()) - extra
    return {
        "jobs": len(done),
        "avg_jct": float(jct.mean()),
        "avg_queue": float(queue.mean()),
        "p50_jct": float(np.percentile(jct, 50)),
        "p99_jct": float(np.percentile(jct, 99)),
        "p99_queue": float(np.percentile(queue, 99)),
        **frame_tail(done, wait_bounds),
        "makespan": makespan,
        "gpu_utilization": busy / (gpus * makespan) if makespan > 0 and gpus else 0.0,
        "preemptions": int(frame["preemptions"].sum()),
        "restarts": int(frame["restarts"].sum()),
        "shared_gpu_fraction": shared / busy if busy > 0 else 0.0,
        "avg_run_slowdown": float((1.0 / done["mean_speed"]).mean()),
        **fairness_figures(done),
    }


OLD_NAMES = {"avg_slowdown": "avg_run_slowdown"}  # summary.json of folders written before the names changed


def current_names(summary: dict[str, Any]) -> dict[str, Any]:
    """A summary read back from a folder, with its figures under today's names (an older ``avg_slowdown``, which
    meant 1 ÷ mean speed, is ``avg_run_slowdown``), overall and per VC.

    >>> current_names({"avg_slowdown": 1.2, "per_vc": {"a": {"avg_slowdown": 1.1}}})
    {'avg_run_slowdown': 1.2, 'per_vc': {'a': {'avg_run_slowdown': 1.1}}}
    """
    def renamed(figures: dict[str, Any]) -> dict[str, Any]:
        if not any(old in figures and new not in figures for old, new in OLD_NAMES.items()):
            return figures
        return {(OLD_NAMES[k] if k in OLD_NAMES and OLD_NAMES[k] not in figures else k): v for k, v in figures.items()}

    summary = renamed(summary)
    if isinstance(summary.get("per_vc"), dict):
        summary["per_vc"] = {vc: renamed(f) if isinstance(f, dict) else f for vc, f in summary["per_vc"].items()}
    return summary


def summarize(frame: pd.DataFrame, vc_gpus: Mapping[str, int],
              vc_sharing: Mapping[str, tuple[float, float]] | None = None, partition_gpus: int = 0,
              run_end: float | None = None, wait_bounds: Sequence[float] = DEFAULT_WAIT_BOUNDS,
              **header: Any) -> dict[str, Any]:
    """The run's ``summary.json``: ``header`` (policy, placement, timings...), overall, per-VC and per-size
    figures (``per_size``: :func:`~simcluster.metrics.tail.size_figures`).

    ``partition_gpus``: GPUs of a policy's own partitions (lucid's profiler), counted in the
    overall utilization but not in any VC's.  ``run_end``: when the run stopped, if some jobs did not finish.
    ``wait_bounds``: the waits whose share of jobs exceeding them is a figure (``queue_over_4h``).
    """
    summary: dict[str, Any] = dict(header)
    vc_sharing = vc_sharing or {}
    total = (sum(s for s, _ in vc_sharing.values()), sum(e for _, e in vc_sharing.values()))
    wait_bounds = sorted(set(wait_bounds))
    summary.update(figures(frame, sum(vc_gpus.values()) + partition_gpus, total, run_end, wait_bounds))
    vcs = frame["vc"]
    slim = frame.drop(columns=["job_id", "vc"], errors="ignore")  # (text figures do not read: less to copy per VC)
    summary["per_vc"] = {
        vc: figures(slim[(vcs == vc).to_numpy()], gpus, vc_sharing.get(vc, (0.0, 0.0)), run_end, wait_bounds)
        for vc, gpus in vc_gpus.items()
    }
    summary["per_size"] = size_figures(frame, wait_bounds)
    summary["wait_bounds"] = wait_bounds
    return summary
