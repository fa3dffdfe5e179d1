"""Fairness: finish-time fairness ρ per job, Jain's index over users, and the per-user table.

**Finish-time fairness** (Themis, Mahajan et al., NSDI'20; the objective of Gavel's
``finish_time_fairness`` policies, Narayanan et al., OSDI'20) compares a job's completion time
with the one it would have had alone on a fair share of the cluster:

    ρ_j = JCT_j / T_alone_j,   T_alone_j = d_j · max(1, g_j · n_j / G)

- ``G`` is the GPU count of the job's VC (a job can only ever use its VC's GPUs, so the VC is
  "the cluster" it shares);
- ``n_j`` is the number of that VC's jobs in the system (waiting or running, the job itself
  included) averaged over the job's life, from its submission to its end — Themis' N, the number
  of jobs contending, which changes while the job lives;
- alone on ``G / n_j`` GPUs the job runs at full speed if it fits (``g_j ≤ G / n_j``: it takes its
  exclusive duration ``d_j``, at least 1 s), else time-sliced at the fraction ``G / (n_j g_j)``.

ρ ≤ 1: the job finished no later than on its fair share (Themis' sharing incentive); ρ > 1: it
would have done better alone on 1/n of its VC.

**Jain's fairness index** (Jain, Chiu and Hawe, "A quantitative measure of fairness and
discrimination for resource allocation in shared computer systems", DEC-TR-301, 1984):

    J(x_1…x_n) = (Σ x_i)² / (n · Σ x_i²)

1 when every x_i is equal, 1/n when one user gets everything.  Jain et al. apply it to each
user's *normalised* allocation, x_i = what the user got ÷ its fair allocation; here the user's
normalised service is ``x_u = mean over u's finished jobs of 1/ρ_j`` (each job's progress rate
relative to running alone on its fair share).  ``jain_users`` is J over the users of the whole
run (``summary.json``) and of each VC (``per_vc``).

>>> jain_index([1.0, 1.0, 1.0, 1.0])
1.0
>>> jain_index([1.0, 0.0, 0.0, 0.0])
0.25
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from simcluster.metrics.tail import DEFAULT_WAIT_BOUNDS, bounded_slowdown, over_key

RHO_FIGURES = ("rho_mean", "rho_p50", "rho_p99", "rho_max", "rho_above_1")
USER_COLUMNS = ["user", "vcs", "jobs", "unfinished", "avg_jct", "p50_jct", "avg_queue", "max_queue", "queue_over_4h",
                "avg_jct_slowdown", "avg_bounded_slowdown", "mean_rho", "gpu_seconds", "gpu_share"]
OLD_USER_NAMES = {"avg_slowdown": "avg_jct_slowdown"}  # users.csv of folders written before the names changed


def jain_index(values: Sequence[float] | np.ndarray) -> float | None:
    """Jain's index of ``values`` (non-negative); None when there are none (or all are 0)."""
    x = np.asarray(values, dtype=float)
    x = x[np.isfinite(x)]
    square_sum = float((x * x).sum())
    if not len(x) or square_sum == 0:
        return None
    return float(x.sum() ** 2 / (len(x) * square_sum))


def contention(submit: np.ndarray, end: np.ndarray) -> np.ndarray:
    """n_j: the time-averaged number of jobs in the system over each job's life [submit_j, end_j].

    ``end`` may hold NaN for jobs that never finished (in the system until the run's end).  A job
    whose life has no length gets the count at its instant.

    >>> contention(np.array([0.0, 0.0, 10.0]), np.array([10.0, 20.0, 20.0])).tolist()
    [2.0, 2.0, 2.0]
    """
    submit, end = np.asarray(submit, dtype=float), np.asarray(end, dtype=float)
    done = np.isfinite(end)
    times = np.concatenate([submit, end[done]])
    deltas = np.concatenate([np.ones(len(submit)), -np.ones(int(done.sum()))])
    order = np.argsort(times, kind="stable")
    t, count = times[order], np.cumsum(deltas[order])
    area = np.concatenate([[0.0], np.cumsum(count[:-1] * np.diff(t))])

    def integral(at: np.ndarray) -> np.ndarray:
        k = np.searchsorted(t, at, side="right") - 1
        return area[k] + count[k] * (at - t[k])

    n = np.full(len(submit), np.nan)
    length = end - submit
    long = done & (length > 0)
    n[long] = (integral(end[long]) - integral(submit[long])) / length[long]
    instant = done & (length <= 0)
    n[instant] = count[np.searchsorted(t, submit[instant], side="right") - 1]
    return n


def finish_time_fairness(jobs: pd.DataFrame, vc_gpus: Mapping[str, int]) -> np.ndarray:
    """ρ of each job of ``jobs`` (a jobs table), NaN for jobs not finished or of a VC not in ``vc_gpus``."""
    rho = np.full(len(jobs), np.nan)
    if not len(jobs):
        return rho
    codes, names = pd.factorize(jobs["vc"])  # (one pass over the text, not one per VC)
    code = {name: k for k, name in enumerate(names)}
    submit, end, duration, gpu_num, jct = (jobs[c].to_numpy(float)
                                           for c in ("submit_time", "end_time", "duration", "gpu_num", "jct"))
    for vc, gpus in vc_gpus.items():
        mine = np.flatnonzero(codes == code[vc]) if vc in code else np.empty(0, np.int64)
        if not len(mine) or gpus <= 0:
            continue
        n = contention(submit[mine], end[mine])
        alone = np.maximum(duration[mine], 1.0) * np.maximum(1.0, gpu_num[mine] * n / gpus)
        rho[mine] = jct[mine] / alone
    return rho


def fairness_figures(jobs: pd.DataFrame) -> dict[str, Any]:
    """``jain_users`` and the distribution of ρ (mean, p50, p99, max, share of jobs with ρ > 1) over the
    finished jobs of ``jobs``; empty when the table has no ``rho`` column (e.g. round-based runs)."""
    if "rho" not in jobs.columns:
        return {}
    rho = jobs["rho"].to_numpy(float)
    finished = np.isfinite(rho)
    if not finished.any():
        return {"jain_users": None, **{k: None for k in RHO_FIGURES}}
    r = rho[finished]
    users = jobs["user"][finished]  # grouped as a column: no Python string per job
    service = pd.Series(1.0 / np.maximum(r, 1e-12), index=users.index).groupby(users).mean()
    return {
        "jain_users": jain_index(service.to_numpy()),
        "rho_mean": float(r.mean()),
        "rho_p50": float(np.percentile(r, 50)),
        "rho_p99": float(np.percentile(r, 99)),
        "rho_max": float(r.max()),
        "rho_above_1": float((r > 1.0).mean()),
    }


def users_table(jobs: pd.DataFrame, wait_bounds: Sequence[float] = DEFAULT_WAIT_BOUNDS) -> pd.DataFrame:
    """``users.csv``: per user, its VCs, jobs (finished, and unfinished when a run stopped early), average
    and median JCT, average and longest queueing delay, the share of its jobs that waited longer than each of
    ``wait_bounds`` (``queue_over_4h``), average JCT slowdown (JCT ÷ max(duration, 1 s); named
    ``avg_slowdown`` in folders written before), average bounded slowdown (max(1, JCT ÷ max(duration, 10 s)):
    :mod:`simcluster.metrics.tail`), mean ρ, GPU-seconds held and their share of all jobs' GPU-seconds.
    Figures over finished jobs; users sorted by name."""
    overs = [over_key(b) for b in sorted(set(wait_bounds))]
    columns = [*USER_COLUMNS[:USER_COLUMNS.index("queue_over_4h")], *overs,
               *USER_COLUMNS[USER_COLUMNS.index("queue_over_4h") + 1:]]
    if not len(jobs):
        return pd.DataFrame(columns=columns)
    # grouped by the users' codes, found once: grouping by the text would hash a million strings per figure
    # (codes in the names' order, -1 for a job without a user, which grouping by name would drop too)
    codes, names = pd.factorize(jobs["user"].astype(str), sort=True)
    done = jobs["end_time"].notna().to_numpy()
    per_job = pd.DataFrame({
        "jobs": done, "unfinished": ~done, "gpu_seconds": (jobs["busy_time"] * jobs["gpu_num"]).to_numpy(),
    })
    queue, jct = jobs["queue"].to_numpy(float)[done], jobs["jct"].to_numpy(float)[done]
    duration = jobs["duration"].to_numpy(float)[done]
    finished = pd.DataFrame({
        "avg_jct": jct,
        "avg_queue": queue,
        **{key: queue > b for key, b in zip(overs, sorted(set(wait_bounds)), strict=True)},
        "avg_jct_slowdown": jct / np.maximum(duration, 1.0),
        "avg_bounded_slowdown": bounded_slowdown(jct, duration),
        "mean_rho": jobs["rho"].to_numpy(float)[done] if "rho" in jobs.columns else np.nan,
    })
    totals = per_job.groupby(codes).sum()
    by_user = finished.groupby(codes[done])
    table = pd.concat([totals[["jobs", "unfinished"]].astype(np.int64), by_user.mean(),
                       by_user["avg_jct"].median().rename("p50_jct"),
                       by_user["avg_queue"].max().rename("max_queue"), totals["gpu_seconds"]], axis=1)
    table = table.reindex(range(len(names)))  # (drops -1, jobs without a user)
    table.insert(0, "vcs", _vcs_of(codes, jobs["vc"], len(names)))
    total = float(per_job["gpu_seconds"].sum())
    table["gpu_share"] = table["gpu_seconds"] / total if total > 0 else 0.0
    table.index = names.rename("user")
    return table.reset_index()[columns]


def _vcs_of(codes: np.ndarray, vcs: pd.Series, users: int) -> list[str]:
    """Each user's VCs, sorted and joined by ';', from the distinct (user, VC) pairs, not a pass per user."""
    vc_codes, vc_names = pd.factorize(vcs)
    labels = [str(name) for name in vc_names]
    missing = vc_codes < 0
    if missing.any():  # a missing VC is named as str() names it (None, nan, <NA>): a rare case, row by row
        named = np.array([str(v) for v in vcs.to_numpy(object)[missing]], dtype=object)
        extra_codes, extra = pd.factorize(named)
        vc_codes[missing] = len(labels) + extra_codes
        labels += [str(name) for name in extra]
    mine = codes >= 0
    pairs = np.unique(codes[mine] * len(labels) + vc_codes[mine])
    names: list[set[str]] = [set() for _ in range(users)]
    for user, vc in zip(*np.divmod(pairs, len(labels)), strict=True):
        names[user].add(labels[vc])
    return [";".join(sorted(these)) for these in names]
