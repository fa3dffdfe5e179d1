"""Fit the calibrated colocation model to public measurements: ``python -m simcluster.colocation.calibrate``.

Reads Lucid's RTX 3090 tables (``profiles/lucid_rtx3090/``) and Gavel's throughputs
(``profiles/gavel/simulation_throughputs.json``) from the shared data (``$SIMCLUSTER_DATA``), fits the
model of :mod:`simcluster.colocation.calibrated`, and writes ``parameters.json``, ``README.md`` (the fit
report) and ``fit.png`` (predicted vs measured) into ``traces/profiles/calibrated/`` (or ``--out``), all
at once: a folder renamed into place.  Only parameters are written, never the measured tables.

The fit has two stages, as the model has:

1. **Single jobs** (:func:`fit_solo`): each workload's step-time and memory parameters, and the
   constants they share, by weighted least squares on Lucid's ``single_data.csv`` (throughput, GPU
   utilization, memory, memory-bandwidth utilization of 66 configurations), each parameter pulled
   towards our prior assumptions (:data:`~simcluster.colocation.analytic.ASSUMPTIONS`) in log space,
   so that configurations no one measured (e.g. BERT at batch 128) get plausible figures.
2. **Pairs** (:func:`fit_pairs`): the interference constant, the two exponents and each workload's
   sensitivity and intensity factors, on Lucid's 2,776 pair speeds (clamped to [0.05, 1] as the
   simulator clamps them) with the utilizations of stage 1 -- the model's own estimates, not the
   measured utilizations, so the figures are those of the model as deployed.  A robust loss
   (soft L1, scale 0.05) approximates the mean absolute error the model is judged by; the factors
   are pulled weakly towards 1.

**Honest error** (:func:`leave_one_workload_out`): for each of the 11 workloads measured in pairs,
stage 2 is refitted without any pair involving it, its factors are 1 (unknown), and its pairs are
predicted: the situation of a workload profiled alone but never in pairs (BERT, ResNet50 and
Transformer in the trace).  A second, stricter variant also refits stage 1 without the workload's
solo rows, so it rests on our prior assumptions alone.

**Gavel** (:func:`gavel_check`): its throughput tables carry no utilization, so they cannot be
mapped onto the rule's inputs in general; but two identical jobs that keep a GPU busy each run at
``1 / (1 + kappa)``, so its self-pairs give the interference constant of K80, P100 and V100 GPUs to
set beside the fitted one.  Reported, not fitted: the trace's durations come from RTX 3090s.

**Refit to our own measurements** (:func:`fit_measured`, ``--tables FOLDER``): the same two stages on
the tables our profiler measured on one GPU type (``traces/profiles/measured/<gpu>/``), each parameter
now pulled towards the committed RTX 3090 calibration (:func:`calibration_prior`) rather than our
assumptions, since that is the model the refit replaces on that GPU.  The same leave-one-workload-out
check, plus leave-one-pair-out (both workloads known, the pair unseen: what a configuration pair the
profiler never ran meets).  Written beside the tables (``<gpu>/calibrated/``), where the loader's
``default`` finds it for runs on that GPU type.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy.optimize import least_squares, minimize_scalar
from scipy.sparse import lil_matrix

from simcluster.colocation.analytic import (
    _ALLOCATOR_SLACK,
    _AMP_ACTIVATIONS,
    _AMP_BANDWIDTH,
    _AMP_FIXED,
    _AMP_HOST,
    _BYTES_PER_PARAM,
    _CUDA_CONTEXT_MIB,
    ASSUMPTIONS,
    WorkloadAssumption,
    analytic_model,
    analytic_pair_speeds,
)
from simcluster.colocation.calibrated import (
    CALIBRATED_DIR,
    PARAMETERS_FILE,
    SOLO_CONSTANTS,
    STEP_FIELDS,
    Calibration,
    Constants,
    SoloFit,
    calibrated_tables,
    contention_speed,
    read_calibration,
    solo_figures,
)
from simcluster.colocation.calibration_report import plot_png, refit_markdown, report_markdown
from simcluster.colocation.calibration_results import FitReport, Fold, PairRows, Subject, pair_rows, scores
from simcluster.colocation.folders import CALIBRATED_DIR_NAME, find_table, measured_metadata
from simcluster.colocation.importers import gavel_gpu_types, gavel_path, import_gavel, import_lucid, lucid_dir
from simcluster.colocation.model import CEILING, FLOOR, ColocationModel
from simcluster.colocation.schema import SINGLE_KEY, STATUS_OK, TableError, read_pair_table, read_single_table
from simcluster.job import Workload
from simcluster.results import write_folder

__all__ = [
    "FitReport", "PairRows", "SoloPrior", "assumptions_prior", "calibration_prior", "deployed", "fit",
    "fit_measured", "fit_pairs", "fit_solo", "gavel_check", "leave_one_pair_out", "leave_one_workload_out",
    "main", "pair_rows", "predictions", "scores", "solo_calibration",
]  # fmt: skip

# stage 1: how far a prediction may be off before it costs as much as one unit of squared error
SIGMA_LOG_THROUGHPUT = 0.2  # 20 %: RL "samples" and data-loading-bound jobs are rough
SIGMA_UTIL = 0.03  # 3 points of GPU utilization
SIGMA_LOG_MEMORY = 0.05  # 5 % of memory
SIGMA_MEM_UTIL = 0.03  # 3 points of memory-bandwidth utilization
SIGMA_PRIOR = 2.0  # a parameter may move e^2 ~ 7x from our assumption at the cost of one such unit
# stage 2
LOSS_SCALE = 0.05  # soft-L1 scale: errors beyond it count linearly (a mean absolute error, nearly)
FACTOR_PULL = 0.3  # each log factor costs LOSS_SCALE * FACTOR_PULL * |log factor|: a weak pull towards 1

PRIOR_CONSTANTS = {  # the analytic model's own constants (overlap: its hard maximum, softened)
    "context_mib": _CUDA_CONTEXT_MIB, "amp_host": _AMP_HOST, "amp_fixed": _AMP_FIXED,
    "amp_activations": _AMP_ACTIVATIONS, "amp_bandwidth": _AMP_BANDWIDTH, "overlap": 8.0,
}  # fmt: skip
START_PAIR = {"kappa": 0.7, "own_exponent": 1.5, "partner_exponent": 1.5}


# ----------------------------------------------------------------------------- stage 1: single jobs
@dataclass(frozen=True)
class SoloPrior:
    """What stage 1 pulls each parameter towards, in log space: one row per workload, and the constants."""

    workloads: tuple[tuple[str, str], ...]  # (model, dataset) of each row
    log_params: np.ndarray  # one row per workload, STEP_FIELDS
    log_constants: np.ndarray  # SOLO_CONSTANTS, as _constants_to_log gives them


def _log_params(values: Sequence[float]) -> np.ndarray:
    """STEP_FIELDS in log space; memory figures floored so that a zero stays a small number."""
    sync, host, fixed, per_sample, gain, static, act, bandwidth = values
    return np.log([sync, host, fixed, per_sample, gain, max(static, 1.0), max(act, 0.01), bandwidth])


def _prior_vector(w: WorkloadAssumption) -> np.ndarray:
    static = _ALLOCATOR_SLACK * w.params_m * 1e6 * _BYTES_PER_PARAM / 2**20
    return _log_params([w.sync_ms, w.host_ms, w.fixed_ms, w.per_sample_us, w.amp_gain, static,
                        _ALLOCATOR_SLACK * w.act_mib, w.bandwidth])


def _constants_to_log(values: dict[str, float]) -> np.ndarray:
    return np.array([math.log(values[n] - 1.0) if n == "overlap" else math.log(values[n]) for n in SOLO_CONSTANTS])


def _constants_from_log(x: np.ndarray) -> np.ndarray:
    out = np.exp(x)
    out[SOLO_CONSTANTS.index("overlap")] += 1.0  # k > 1: a smooth maximum, never a sum
    return out


def assumptions_prior(assumptions: Sequence[WorkloadAssumption] = ASSUMPTIONS) -> SoloPrior:
    """Our assumptions (the analytic model's): the prior of the fit to Lucid's public tables."""
    return SoloPrior(tuple((w.model, w.dataset) for w in assumptions),
                     np.array([_prior_vector(w) for w in assumptions]), _constants_to_log(PRIOR_CONSTANTS))


def calibration_prior(calibration: Calibration) -> SoloPrior:
    """A fitted calibration's parameters: the prior of a refit to another GPU's measurements."""
    constants = {name: getattr(calibration.constants, name) for name in SOLO_CONSTANTS}
    return SoloPrior(tuple((w.model, w.dataset) for w in calibration.workloads),
                     np.array([_log_params([getattr(w, f) for f in STEP_FIELDS]) for w in calibration.workloads]),
                     _constants_to_log(constants))


def fit_solo(single: pd.DataFrame, prior: SoloPrior | None = None,
             exclude: str | None = None) -> tuple[list[dict[str, float]], dict[str, float]]:
    """Stage 1: per-workload step-time/memory parameters and the shared constants.

    ``single``: measured single-job table (schema format); rows of workloads outside ``prior`` (default:
    :func:`assumptions_prior`) and of ``exclude`` are left out, so ``exclude`` stays at its prior.
    Returns the parameters per workload (in ``prior``'s order, :data:`STEP_FIELDS`) and the constants.
    """
    pulled_towards = prior or assumptions_prior()
    names = [model for model, _ in pulled_towards.workloads]
    rows = single[(single["status"] == STATUS_OK) & single["model"].isin(names) & (single["model"] != exclude)]
    rows = rows.dropna(subset=["samples_per_s", "gpu_util", "gmem", "gmem_util"])
    index = rows["model"].map({m: i for i, m in enumerate(names)}).to_numpy()
    batch, amp = rows["batchsize"].to_numpy(float), rows["amp"].to_numpy()
    y_throughput = np.log(rows["samples_per_s"].to_numpy(float))
    y_util = rows["gpu_util"].to_numpy(float) / 100
    y_memory = np.log(rows["gmem"].to_numpy(float))
    y_mem_util = rows["gmem_util"].to_numpy(float) / 100
    prior_params, prior_constants = pulled_towards.log_params, pulled_towards.log_constants
    n_w, n_p = prior_params.shape

    def residuals(x: np.ndarray) -> np.ndarray:
        params = x[: n_w * n_p].reshape(n_w, n_p)
        constants = _constants_from_log(x[n_w * n_p:])
        f = solo_figures(np.exp(params[index]), batch, amp, constants)
        return np.concatenate([
            (np.log(1000.0 * batch / f["step_ms"]) - y_throughput) / SIGMA_LOG_THROUGHPUT,
            (f["util"] - y_util) / SIGMA_UTIL,
            (np.log(f["gmem"]) - y_memory) / SIGMA_LOG_MEMORY,
            (f["mem_util"] - y_mem_util) / SIGMA_MEM_UTIL,
            (params - prior_params).ravel() / SIGMA_PRIOR,
            (x[n_w * n_p:] - prior_constants) / SIGMA_PRIOR,
        ])  # fmt: skip

    # each residual depends on its workload's parameters and the constants: tell the solver
    n_rows, n_x = len(rows), n_w * n_p + len(SOLO_CONSTANTS)
    sparsity = lil_matrix((4 * n_rows + n_x, n_x), dtype=int)
    for block in range(4):
        for r, w in enumerate(index):
            sparsity[block * n_rows + r, w * n_p:(w + 1) * n_p] = 1
            sparsity[block * n_rows + r, n_w * n_p:] = 1
    for j in range(n_x):
        sparsity[4 * n_rows + j, j] = 1
    start = np.concatenate([prior_params.ravel(), prior_constants])
    result = least_squares(residuals, start, jac_sparsity=sparsity, method="trf", max_nfev=2000)
    params = np.exp(result.x[: n_w * n_p].reshape(n_w, n_p))
    constants = _constants_from_log(result.x[n_w * n_p:])
    return ([dict(zip(STEP_FIELDS, map(float, p))) for p in params],
            dict(zip(SOLO_CONSTANTS, map(float, constants))))


# ----------------------------------------------------------------------------- stage 2: pairs
def _utilizations(calibration: Calibration, keys: list[tuple]) -> np.ndarray:
    """Stage 1's utilization (fraction) of each single-table key (model, dataset, batch, amp, gpus)."""
    by_model = {w.model: w for w in calibration.workloads}
    params = np.array([[getattr(by_model[k[0]], f) for f in STEP_FIELDS] for k in keys])
    batch = np.array([k[2] for k in keys], dtype=float)
    amp = np.array([k[3] for k in keys])
    return solo_figures(params, batch, amp, calibration.constants.step_vector())["util"]


def fit_pairs(calibration: Calibration, rows: PairRows, exclude: str | None = None,
              factors: bool = True) -> Calibration:
    """Stage 2: the contention rule's constants and per-workload factors, on ``rows`` without ``exclude``.

    Workloads with no training pair (and ``exclude``) keep factors of 1; ``factors=False`` fits the
    three constants alone (every factor 1), to show what the factors add.
    """
    train = rows.take(~rows.involving(exclude)) if exclude else rows
    u_own, u_other = _utilizations(calibration, train.own), _utilizations(calibration, train.other)
    names = sorted({k[0] for k in train.own}) if factors else []
    position = {m: i for i, m in enumerate(names)}
    n = len(names)
    own_index = np.array([position.get(k[0], 0) for k in train.own])
    other_index = np.array([position.get(k[0], 0) for k in train.other])

    def predict(x: np.ndarray) -> np.ndarray:
        sensitivity = np.exp(x[3:3 + n])[own_index] if n else 1.0
        intensity = np.exp(x[3 + n:])[other_index] if n else 1.0
        return contention_speed(u_own, u_other, kappa=math.exp(x[0]), own_exponent=x[1], partner_exponent=x[2],
                                sensitivity=sensitivity, intensity=intensity)

    def residuals(x: np.ndarray) -> np.ndarray:
        return np.concatenate([predict(x) - train.speed, LOSS_SCALE * FACTOR_PULL * x[3:]])

    start = np.r_[math.log(START_PAIR["kappa"]), START_PAIR["own_exponent"], START_PAIR["partner_exponent"],
                  np.zeros(2 * n)]
    bounds = (np.r_[-5.0, 0.05, 0.05, np.full(2 * n, -5.0)], np.r_[5.0, 8.0, 8.0, np.full(2 * n, 5.0)])
    x = least_squares(residuals, start, loss="soft_l1", f_scale=LOSS_SCALE, bounds=bounds).x
    fitted = {m: (math.exp(x[3 + i]), math.exp(x[3 + n + i])) for i, m in enumerate(names)}
    constants = replace(calibration.constants, kappa=math.exp(x[0]), own_exponent=float(x[1]),
                        partner_exponent=float(x[2]))
    workloads = tuple(replace(w, sensitivity=fitted.get(w.model, (1.0, 1.0))[0],
                              intensity=fitted.get(w.model, (1.0, 1.0))[1]) for w in calibration.workloads)
    return replace(calibration, constants=constants, workloads=workloads)


def _rounded(calibration: Calibration) -> Calibration:
    """The calibration as parameters.json holds it (six significant digits): what is evaluated is what is saved."""
    return Calibration.from_json(calibration.to_json())


# ----------------------------------------------------------------------------- evaluation
def deployed(calibration: Calibration) -> ColocationModel:
    """The model exactly as a simulation gets it from these parameters."""
    single, pair = calibrated_tables(calibration)
    return ColocationModel(single, pair, source="calibration", validate=False, per_gpu=True)


def predictions(model: Any, rows: PairRows) -> np.ndarray:
    """``model``'s speed for each row's job (a ColocationModel: the simulator's lookups, clamps included)."""
    out = np.empty(len(rows.speed))
    for i, (a, b) in enumerate(zip(rows.own, rows.other)):
        out[i] = model.pair_speeds(Workload(*a[:4]), a[4], Workload(*b[:4]), b[4])[0]
    return out


def leave_one_workload_out(calibration: Calibration, single: pd.DataFrame, rows: PairRows,
                           prior: SoloPrior | None = None) -> list[Fold]:
    """One fold per workload measured in pairs: refit without its pairs, predict them (see the module doc).

    ``calibration``: stage 1 fitted on every solo row with ``prior`` (its pair constants are refitted per fold).
    """
    folds = []
    for name in sorted({k[0] for k in rows.own}):
        held = rows.involving(name)
        if held.all():  # in every measured pair: nothing is left to refit on without it
            continue
        test = rows.take(held)
        known = _rounded(fit_pairs(calibration, rows, exclude=name))
        blind = _rounded(fit_pairs(solo_calibration(single, exclude=name, prior=prior), rows, exclude=name))
        plain = _rounded(fit_pairs(calibration, rows, exclude=name, factors=False))
        folds.append(Fold(name, test, predictions(deployed(known), test), predictions(deployed(blind), test),
                          predictions(deployed(plain), test), np.full(len(test.speed), rows.speed[~held].mean())))
    return folds


def legacy_rule(calibration: Calibration, rows: PairRows) -> tuple[float, np.ndarray]:
    """The analytic model's max-min rule with its interference constant refitted (on stage 1's utilizations)."""
    u_own, u_other = 100 * _utilizations(calibration, rows.own), 100 * _utilizations(calibration, rows.other)

    def speeds(kappa: float) -> np.ndarray:
        return np.array([analytic_pair_speeds(a, b, kappa)[0] for a, b in zip(u_own, u_other)])

    best = minimize_scalar(lambda k: float(np.mean(np.abs(speeds(k) - rows.speed))), bounds=(0.0, 1.0),
                           method="bounded", options={"xatol": 1e-4})
    return float(best.x), np.clip(speeds(float(best.x)), FLOOR, CEILING)


def gavel_check(path: Path | None = None) -> list[dict[str, Any]]:
    """Per GPU type of Gavel's table: the interference constant its single-GPU self-pairs imply.

    Two copies of one job that keeps the GPU busy each run at ``1 / (1 + kappa)``; a self-pair's
    ``1 / speed - 1`` is that job's kappa (0 for a light job).  Also the median combined throughput
    (speed1 + speed2) of every single-GPU pair.
    """
    out = []
    types = gavel_gpu_types(path)
    for gpu in [t for t in types if not t.endswith("_unconsolidated")] or types:  # those repeat the others
        _, pair = import_gavel(path, gpu_type=gpu)
        ok = pair[(pair["status"] == STATUS_OK) & (pair["gpu_num1"] == 1) & (pair["gpu_num2"] == 1)]
        same = ok[(ok["model1"] == ok["model2"]) & (ok["batchsize1"] == ok["batchsize2"])]
        implied = 1.0 / same["speed1"].to_numpy(float) - 1.0
        out.append({
            "gpu": gpu, "self_pairs": len(same), "pairs": len(ok),
            "kappa_median": float(np.median(implied)), "kappa_q1": float(np.percentile(implied, 25)),
            "kappa_q3": float(np.percentile(implied, 75)),
            "combined_median": float(np.median(ok["speed1"] + ok["speed2"])),
        })  # fmt: skip
    return out


def solo_calibration(single: pd.DataFrame, exclude: str | None = None, prior: SoloPrior | None = None) -> Calibration:
    """Stage 1 as a Calibration (pair constants at their starting values, factors 1)."""
    prior = prior or assumptions_prior()
    params, constants = fit_solo(single, prior, exclude=exclude)
    workloads = tuple(SoloFit(model=m, dataset=d, **p) for (m, d), p in zip(prior.workloads, params))
    return Calibration(Constants(**constants, **START_PAIR), workloads)


def leave_one_pair_out(calibration: Calibration, rows: PairRows) -> np.ndarray:
    """Each measured pair predicted by stage 2 refitted without it: both workloads known, the pair unseen.

    ``calibration``: stage 1 fitted on every solo row.  One refit per pair: for small tables only.
    """
    predicted = np.empty(len(rows.speed))
    pairs = len(rows.speed) // 2  # pair_rows lists every pair's first jobs, then their second jobs
    for i in range(pairs):
        held = np.zeros(len(rows.speed), dtype=bool)
        held[[i, i + pairs]] = True
        fitted = _rounded(fit_pairs(calibration, rows.take(~held)))
        predicted[held] = predictions(deployed(fitted), rows.take(held))
    return predicted


# ----------------------------------------------------------------------------- the whole fit
def _solo_errors(calibration: Calibration, single: pd.DataFrame) -> dict[str, float]:
    table, _ = calibrated_tables(calibration)
    merged = single[single["status"] == STATUS_OK].merge(table, on=SINGLE_KEY, suffixes=("", "_fit"))
    return {
        "configurations": len(merged),
        "util_mae_points": float((merged["gpu_util"] - merged["gpu_util_fit"]).abs().mean()),
        "mem_util_mae_points": float((merged["gmem_util"] - merged["gmem_util_fit"]).abs().mean()),
        "memory_median_relative_error": float((merged["gmem_fit"] / merged["gmem"] - 1).abs().median()),
        "throughput_median_relative_error": float(
            (merged["samples_per_s_fit"] / merged["samples_per_s"] - 1).abs().median()),
    }


def _facts(single: pd.DataFrame, rows: PairRows) -> dict[str, Any]:
    util = {tuple(k): u for *k, u in single[[*SINGLE_KEY, "gpu_util"]].itertuples(index=False, name=None)}
    busy = np.array([util.get(a, 0.0) >= 90 and util.get(b, 0.0) >= 90 for a, b in zip(rows.own, rows.other)])
    paired = {k[0] for k in rows.own}
    return {
        "configurations": len(single), "workloads": int(single["model"].nunique()),
        "paired_workloads": len(paired),
        "never_paired": sorted(set(single["model"]) - paired),
        "in_every_pair": sorted(m for m in paired if all(m in (a[0], b[0]) for a, b in zip(rows.own, rows.other))),
        "above_one": float(np.mean(rows.raw > 1.0)),
        "busy_pairs": int(busy.sum()), "busy_pair_speed": float(rows.speed[busy].mean()) if busy.any() else math.nan,
    }  # fmt: skip


def _fit_stages(single: pd.DataFrame, rows: PairRows, prior: SoloPrior,
                with_folds: bool) -> tuple[Calibration, Calibration, Calibration, list[Fold]]:
    """Both stages on every row: (stage 1 alone, the calibration, the rule without factors, folds)."""
    solo = solo_calibration(single, prior=prior)
    calibration = _rounded(fit_pairs(solo, rows))
    plain = _rounded(fit_pairs(solo, rows, factors=False))
    folds = leave_one_workload_out(solo, single, rows, prior) if with_folds else []
    return solo, calibration, plain, folds


def _fit_figures(report: FitReport) -> dict[str, Any]:
    """The error figures ``parameters.json`` carries (and runs quote in their provenance)."""
    rows = report.rows
    figures: dict[str, Any] = {
        "speeds": len(rows.speed), "pairs": len(rows.speed) // 2,
        "mae_in_sample": round(scores(report.in_sample, rows.speed)["mae"], 4),
    }  # fmt: skip
    if report.folds:
        figures["mae_leave_one_workload_out"] = round(scores(*report.held_out())["mae"], 4)
        figures["mae_nothing_measured"] = round(scores(*report.held_out("predicted_blind"))["mae"], 4)
    if report.pair_held_out is not None:
        figures["mae_leave_one_pair_out"] = round(scores(report.pair_held_out, rows.speed)["mae"], 4)
    return figures


def fit(lucid: Path | None = None, gavel: Path | None = None, with_folds: bool = True) -> FitReport:
    """Fit on Lucid's tables in ``lucid`` (default: the shared data's), check against Gavel's file."""
    single, pair = import_lucid(lucid)
    rows = pair_rows(pair)
    _, calibration, plain, folds = _fit_stages(single, rows, assumptions_prior(), with_folds)
    legacy_kappa, legacy = legacy_rule(calibration, rows)
    gavel_file = gavel if gavel is not None else gavel_path()
    report = FitReport(
        calibration=calibration, rows=rows, in_sample=predictions(deployed(calibration), rows),
        in_sample_global=predictions(deployed(plain), rows),
        baseline=predictions(analytic_model(), rows), legacy_kappa=legacy_kappa, legacy=legacy, folds=folds,
        solo=_solo_errors(calibration, single), gavel=gavel_check(gavel_file) if gavel_file.is_file() else [],
        data=_facts(single, rows),
    )  # fmt: skip
    lucid_folder = Path(lucid) if lucid is not None else lucid_dir()
    fitted_to = {
        "short": "Lucid's public RTX 3090 measurements (ASPLOS'23 artifact)",
        "data": [
            {"name": "Lucid RTX 3090 colocation table", "files": [f"{lucid_folder.name}/single_data.csv",
             f"{lucid_folder.name}/colocate_info.csv"], "rows": {"single": len(single), "pairs": len(pair)},
             "licence": "S-Lab License 1.0 (non-commercial research use)", "use": "fitted"},
            {"name": "Gavel simulation_throughputs.json (K80, P100, V100)", "licence": "MIT",
             "use": "checked against (interference constant of busy self-pairs), not fitted"},
        ],
    }  # fmt: skip
    report.calibration = replace(calibration, fitted_to=fitted_to, fit=_fit_figures(report))
    return report


def fit_measured(folder: Path, with_folds: bool = True, before: Calibration | None = None) -> FitReport:
    """Refit on the tables our profiler measured in ``folder`` (one GPU type; see the module doc).

    Each parameter is pulled towards ``before`` (default: the committed RTX 3090 calibration), whose
    predictions of the same pairs the report sets beside the refit's.  TableError for a folder that
    holds no tables measured on a GPU.
    """
    metadata = measured_metadata(folder)
    if metadata is None:
        raise TableError(f'{folder}: no metadata.json saying "measured": true (tables lucid-profile measured on a GPU)')
    single_path, pair_path = find_table(folder, "single"), find_table(folder, "pair")
    if single_path is None or pair_path is None:
        raise TableError(f"{folder}: a single and a pair table are both needed (single.csv, pair.csv)")
    single, pair = read_single_table(single_path), read_pair_table(pair_path)
    before = before or read_calibration()
    rows = pair_rows(pair)
    if not len(rows.speed):
        raise TableError(f"{pair_path}: no measured pair (status ok) to fit")
    solo, calibration, plain, folds = _fit_stages(single, rows, calibration_prior(before), with_folds)
    legacy_kappa, legacy = legacy_rule(calibration, rows)
    device = str(metadata.get("device_name") or folder.name)
    subject = Subject(gpu=device, baseline_row="calibrated to the RTX 3090 (the default)",
                      baseline_panel="RTX 3090 calibration (before)", baseline_note="Lucid's measurements, not this GPU's",
                      fitted="refitted", axis=f"measured speed (our profiler, {folder.name}; clamped to 1)")
    report = FitReport(
        calibration=calibration, rows=rows, in_sample=predictions(deployed(calibration), rows),
        in_sample_global=predictions(deployed(plain), rows), baseline=predictions(deployed(before), rows),
        legacy_kappa=legacy_kappa, legacy=legacy, folds=folds, solo=_solo_errors(calibration, single), gavel=[],
        data=_facts(single, rows), subject=subject,
        pair_held_out=leave_one_pair_out(solo, rows) if with_folds else None,
    )  # fmt: skip
    fitted_to = {
        "short": f"our profiler's measurements on {device}",
        "note": "a fit to our measurements, not a measurement itself",
        "gpu": folder.name,
        "data": [
            {"name": f"lucid-profile tables measured on {device}", "files": [single_path.name, pair_path.name],
             "rows": {"single": len(single), "pairs": len(pair)}, "use": "fitted"},
            {"name": "the RTX 3090 calibration (traces/profiles/calibrated)", "use": "prior of every parameter"},
        ],
    }  # fmt: skip
    report.calibration = replace(calibration, fitted_to=fitted_to, fit=_fit_figures(report))
    return report


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m simcluster.colocation.calibrate", description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=None,
                        help="folder to write parameters.json, README.md and fit.png to (replaced whole; default: "
                             "traces/profiles/calibrated, or TABLES/calibrated with --tables)")
    parser.add_argument("--tables", type=Path, default=None,
                        help="refit to the tables our profiler measured in this folder (e.g. "
                             "traces/profiles/measured/h100) instead of fitting Lucid's public ones")
    parser.add_argument("--lucid", type=Path, default=None,
                        help="Lucid's RTX 3090 folder (default: profiles/lucid_rtx3090 of $SIMCLUSTER_DATA)")
    parser.add_argument("--gavel", type=Path, default=None,
                        help="Gavel's simulation_throughputs.json (default: from $SIMCLUSTER_DATA)")
    parser.add_argument("--no-folds", action="store_true", help="skip leave-one-workload-out (faster)")
    args = parser.parse_args(argv)
    try:
        if args.tables is not None:
            report = fit_measured(args.tables, with_folds=not args.no_folds)
            out, text = args.out or args.tables / CALIBRATED_DIR_NAME, refit_markdown(report)
        else:
            report = fit(args.lucid, args.gavel, with_folds=not args.no_folds)
            out, text = args.out or CALIBRATED_DIR, report_markdown(report)
    except (FileNotFoundError, TableError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    write_folder(out, {}, {PARAMETERS_FILE: report.calibration.to_json(), "README.md": text},
                 {"fit.png": plot_png(report)}, kind="calibration")
    figures = report.calibration.fit
    print(f"wrote {out}: pair-speed MAE {figures['mae_in_sample']:.3f} in-sample"
          + (f", {figures['mae_leave_one_workload_out']:.3f} leave-one-workload-out" if report.folds else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
