"""Can a job's solo GPM profile predict how much it slows beside another?  Leave-one-workload-out, against the
calibrated refit and the measured noise floor (issue 44, step 3).

Features of a job and of its partner come from ``single_repeats.csv`` (the GPM columns of jobs measured alone,
mean over rounds), targets from ``pair.csv``; only pairs whose two workloads both have GPM features count.
For each workload W: fit on the pairs without W, predict W's pairs.  Two interpretable models:

* ``additive``: least squares on the two jobs' features and their products (own x partner), with a small
  ridge -- a linear model a reader can check term by term;
* ``ebm``: InterpretML's explainable boosting regressor (additive shape functions and pairwise terms).

The refit's predictions are those of its own leave-one-workload-out folds (``fit_measured``), on the same rows.

    python benchmarks/gpm_slowdown_model.py [--folder traces/profiles/measured/h100]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from profiler.noise import read_noise
from simcluster.colocation import read_single_repeat_table
from simcluster.colocation.calibrate import fit_measured
from simcluster.colocation.model import CEILING, FLOOR

FEATURES = ["gr_active", "sm_active", "sm_occupancy", "tensor_active", "dram_active", "fp32_active", "pcie_rx_mibps"]


def gpm_features(folder: Path) -> pd.DataFrame:
    """Each (model, batch size, amp) alone: its GPM features, mean over the repeat rounds, in [0, 1] units."""
    table = read_single_repeat_table(folder / "single_repeats.csv")
    table = table[(table["status"] == "ok") & table["sm_active"].notna()]
    means = table.groupby(["model", "batchsize", "amp"])[FEATURES].mean()
    percent = [f for f in FEATURES if f != "pcie_rx_mibps"]
    means[percent] = means[percent] / 100.0
    means["pcie_rx_mibps"] = np.log1p(means["pcie_rx_mibps"]) / np.log1p(2000.0)  # 0 .. ~1 over 0 .. 2 GB/s
    return means


def design(own: np.ndarray, other: np.ndarray) -> np.ndarray:
    return np.column_stack([np.ones(len(own)), own, other, own * other])


def additive_fit(x_own: np.ndarray, x_other: np.ndarray, y: np.ndarray, ridge: float = 1e-2) -> np.ndarray:
    a = design(x_own, x_other)
    penalty = ridge * np.eye(a.shape[1])
    penalty[0, 0] = 0.0  # the intercept is free
    return np.linalg.solve(a.T @ a + penalty, a.T @ y)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--folder", type=Path, default=Path("traces/profiles/measured/h100"))
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    args = parser.parse_args(argv)
    features = gpm_features(args.folder)
    report = fit_measured(args.folder, with_folds=True)
    rows = report.rows

    def key(job: tuple) -> tuple:
        return job[0], int(job[2]), int(job[3])  # model, batch size, amp

    usable = np.array([key(a) in features.index and key(b) in features.index for a, b in zip(rows.own, rows.other)])
    x_own = np.array([features.loc[key(a)].to_numpy() if u else np.zeros(len(FEATURES))
                      for a, u in zip(rows.own, usable)])
    x_other = np.array([features.loc[key(b)].to_numpy() if u else np.zeros(len(FEATURES))
                        for b, u in zip(rows.other, usable)])
    y = rows.speed
    refit = {}  # row index -> the refit's held-out prediction (a row of two left-out workloads: their mean)
    for fold in report.folds:
        for job, partner, predicted in zip(fold.rows.own, fold.rows.other, fold.predicted):
            index = next(i for i, (a, b) in enumerate(zip(rows.own, rows.other)) if a == job and b == partner)
            refit.setdefault(index, []).append(predicted)
    workloads = sorted({a[0] for a, u in zip(rows.own, usable) if u})
    predicted = {"additive": np.full(len(y), np.nan), "ebm": np.full(len(y), np.nan)}
    ebm_error = ""
    for name in workloads:
        held = usable & np.array([a[0] == name or b[0] == name for a, b in zip(rows.own, rows.other)])
        train = usable & ~held
        if not held.any() or train.sum() < 10:
            continue
        coefficients = additive_fit(x_own[train], x_other[train], y[train])
        predicted["additive"][held] = design(x_own[held], x_other[held]) @ coefficients
        try:
            from interpret.glassbox import ExplainableBoostingRegressor

            ebm = ExplainableBoostingRegressor(interactions=5, random_state=0, outer_bags=4)
            ebm.fit(np.column_stack([x_own[train], x_other[train]]), y[train])
            predicted["ebm"][held] = ebm.predict(np.column_stack([x_own[held], x_other[held]]))
        except ImportError as exc:  # pragma: no cover - interpret is a dependency; say so if it is missing
            ebm_error = str(exc)
    evaluated = usable & ~np.isnan(predicted["additive"]) & np.array([i in refit for i in range(len(y))])
    results = {"rows": int(evaluated.sum()), "workloads_with_gpm": workloads,
               "refit_lowo_mae": float(np.mean(np.abs([np.mean(refit[i]) for i in np.flatnonzero(evaluated)]
                                                    - y[evaluated])))}
    for model, values in predicted.items():
        if not np.isnan(values[evaluated]).any():
            clipped = np.clip(values[evaluated], FLOOR, CEILING)
            results[f"{model}_lowo_mae"] = float(np.mean(np.abs(clipped - y[evaluated])))
    results["mean_speed_baseline_mae"] = float(np.mean(np.abs(y[evaluated].mean() - y[evaluated])))
    noise = read_noise(args.folder).summary
    results["noise_floor_pair_speed_mae_to_table"] = noise["pair_speed_mae_to_table"]
    if ebm_error:
        results["ebm_error"] = ebm_error
    if args.json:
        print(json.dumps(results))
    else:
        print(f"rows (job speeds of pairs whose two workloads have GPM features): {results['rows']}; "
              f"workloads: {', '.join(workloads)}")
        for name in ("refit_lowo_mae", "additive_lowo_mae", "ebm_lowo_mae", "mean_speed_baseline_mae",
                     "noise_floor_pair_speed_mae_to_table"):
            if name in results:
                print(f"  {name:40s} {results[name]:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
