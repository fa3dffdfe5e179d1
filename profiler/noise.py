"""How repeatable a campaign's measurements are: the noise floor a slowdown model's error is judged against.

A repeat stage (:mod:`profiler.campaign`) measures jobs alone (``single_repeats.csv``) and pairs
(``pair_repeats.csv``) several times, round by round, each repeated pair against the solo runs of its own
round.  From those tables this module gives:

* **within the machine**: each job's solo-throughput CV over the rounds, and each repeated pair's speed
  spread (standard deviation over the rounds, per job of the pair) -- needs two rounds or more;
* **against the main tables** (``single.csv``, ``pair.csv``, often measured on another machine or day):
  each job's repeated solo throughput as a ratio of the table's, and how far each repeated pair's speeds
  lie from the table's (the mean absolute difference is directly comparable to a model's MAE).

A pair's speed is recomputed from its throughputs and its round's solo runs, so a row recorded failed as
"faster shared than alone" still counts: in a noise measurement that is the noise.

>>> import pandas as pd
>>> key = {"dataset": "d", "amp": 0, "gpu_num": 1, "batchsize": 32, "status": "ok"}
>>> solo = pd.DataFrame([key | {"model": "A", "iters_per_s": v, "repeat": r} for r, v in ((1, 90.0), (2, 110.0))])
>>> summary = measurement_noise(solo, None, None, None).summary
>>> summary["rounds"], round(summary["solo_cv_median"], 3)
(2, 0.141)
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from profiler.plan import JobConfig
from simcluster.colocation import (
    SINGLE_KEY,
    STATUS_OK,
    read_pair_table,
    read_repeat_table,
    read_single_repeat_table,
    read_single_table,
)


@dataclass(frozen=True)
class NoiseReport:
    """Per job, per pair and overall figures (see the module's docstring)."""

    solo: pd.DataFrame  # model, batchsize, amp, gpu_num, rounds, mean_iters_per_s, cv, table_iters_per_s, ratio
    pairs: pd.DataFrame  # job1, job2, rounds, mean_speed1/2, sd_speed1/2, table_speed1/2, diff1/2
    summary: dict[str, Any]


def read_noise(folder: Path) -> NoiseReport:
    """The noise report of a campaign folder: its repeat tables, against its main tables where present."""
    if not (folder / "single_repeats.csv").exists() and not (folder / "pair_repeats.csv").exists():
        raise FileNotFoundError(f"{folder}: neither single_repeats.csv nor pair_repeats.csv; a campaign's "
                                "repeat stage writes them")

    def load(name: str, reader: Any) -> pd.DataFrame | None:
        return reader(folder / name) if (folder / name).exists() else None

    return measurement_noise(load("single_repeats.csv", read_single_repeat_table),
                             load("pair_repeats.csv", read_repeat_table),
                             load("single.csv", read_single_table), load("pair.csv", read_pair_table))


def _cv(values: list[float]) -> float:
    return statistics.stdev(values) / statistics.fmean(values) if len(values) > 1 else math.nan


def _sd(values: list[float]) -> float:
    return statistics.stdev(values) if len(values) > 1 else math.nan


def _median(values: Any) -> float:
    finite = [v for v in values if not math.isnan(v)]
    return statistics.median(finite) if finite else math.nan


def measurement_noise(single_repeats: pd.DataFrame | None, pair_repeats: pd.DataFrame | None,
                      single: pd.DataFrame | None, pair: pd.DataFrame | None) -> NoiseReport:
    """The noise report of validated tables (any may be None: its figures are then NaN or absent)."""
    solo_runs: dict[tuple[Any, ...], dict[int, float]] = {}
    if single_repeats is not None:
        for row in single_repeats[single_repeats["status"] == STATUS_OK].to_dict("records"):
            solo_runs.setdefault(tuple(row[c] for c in SINGLE_KEY), {})[int(row["repeat"])] = row["iters_per_s"]
    table_solo = {} if single is None else {
        tuple(r[c] for c in SINGLE_KEY): r["iters_per_s"] for r in single.to_dict("records") if r["status"] == STATUS_OK}
    solo_rows = []
    for key, runs in solo_runs.items():
        mean = statistics.fmean(runs.values())
        reference = table_solo.get(key, math.nan)
        solo_rows.append(dict(zip(SINGLE_KEY, key, strict=True)) | {
            "rounds": len(runs), "mean_iters_per_s": mean, "cv": _cv(list(runs.values())),
            "table_iters_per_s": reference, "ratio": mean / reference})
    solo = pd.DataFrame(solo_rows, columns=[*SINGLE_KEY, "rounds", "mean_iters_per_s", "cv", "table_iters_per_s", "ratio"])

    table_pairs: dict[tuple[Any, ...], tuple[float, float]] = {}
    if pair is not None:
        for row in pair[pair["status"] == STATUS_OK].to_dict("records"):
            first, second = (tuple(row[f"{c}{s}"] for c in SINGLE_KEY) for s in ("1", "2"))
            table_pairs[(first, second)] = (row["speed1"], row["speed2"])
            table_pairs.setdefault((second, first), (row["speed2"], row["speed1"]))
    speeds: dict[tuple[Any, ...], list[tuple[float, float]]] = {}
    labels: dict[tuple[Any, ...], tuple[str, str]] = {}
    for row in ([] if pair_repeats is None else pair_repeats.to_dict("records")):
        first, second = (tuple(row[f"{c}{s}"] for c in SINGLE_KEY) for s in ("1", "2"))
        r = int(row["repeat"])
        measured = []
        for job, suffix in ((first, "1"), (second, "2")):
            alone = solo_runs.get(job, {}).get(r)
            iters = row[f"iters_per_s{suffix}"]
            measured.append(iters / alone if alone and not math.isnan(iters) else row[f"speed{suffix}"])
        if any(math.isnan(s) for s in measured):
            continue  # not run (a solo run failed) or no round solo and no recorded speed
        speeds.setdefault((first, second), []).append((measured[0], measured[1]))
        labels[(first, second)] = (JobConfig.from_key(first).label, JobConfig.from_key(second).label)
    pair_rows = []
    for key, values in speeds.items():
        ones, twos = [v[0] for v in values], [v[1] for v in values]
        reference = table_pairs.get(key, (math.nan, math.nan))
        mean1, mean2 = statistics.fmean(ones), statistics.fmean(twos)
        pair_rows.append({"job1": labels[key][0], "job2": labels[key][1], "rounds": len(values),
                          "mean_speed1": mean1, "mean_speed2": mean2, "sd_speed1": _sd(ones), "sd_speed2": _sd(twos),
                          "table_speed1": reference[0], "table_speed2": reference[1],
                          "diff1": mean1 - reference[0], "diff2": mean2 - reference[1]})
    pairs = pd.DataFrame(pair_rows, columns=["job1", "job2", "rounds", "mean_speed1", "mean_speed2", "sd_speed1",
                                             "sd_speed2", "table_speed1", "table_speed2", "diff1", "diff2"])
    diffs = [abs(d) for d in [*pairs["diff1"], *pairs["diff2"]] if not math.isnan(d)]
    rounds = [*solo["rounds"], *pairs["rounds"]]
    summary = {
        "rounds": int(max(rounds)) if rounds else 0,
        "jobs_alone": len(solo), "pairs": len(pairs),
        "solo_cv_median": _median(solo["cv"]),
        "pair_speed_sd_median": _median([*pairs["sd_speed1"], *pairs["sd_speed2"]]),
        "solo_ratio_to_table_median": _median(solo["ratio"]),
        "pair_speed_mae_to_table": statistics.fmean(diffs) if diffs else math.nan,
        "pair_speeds_compared": len(diffs),
    }
    return NoiseReport(solo, pairs, summary)
