"""The default colocation model: the analytic model's ideas, with its parameters fitted to public measurements.

The analytic model (:mod:`simcluster.colocation.analytic`) guessed each workload's step time and a
pair rule (max-min fair division of GPU time plus 10 % interference).  Against the 2,776 pair speeds
Lucid's authors measured on an RTX 3090 it was worse than predicting their mean for every pair.  This
model keeps the two stages, changes the pair rule where the measurements said so, and takes every
constant from a fit (``python -m simcluster.colocation.calibrate``; the figures are in
``traces/profiles/calibrated/README.md``):

**Single jobs** -- per workload a step-time model (as in the analytic model, with a smooth maximum
for the partial overlap of host and GPU work)::

    gpu_ms  = fixed_ms (x amp_fixed) + per_sample_us * batch / 1000 (/ amp_gain)
    step_ms = sync_ms + (host_ms (x amp_host) ** k + gpu_ms ** k) ** (1 / k)
    util    = 100 * gpu_ms / step_ms
    gmem    = context_mib + static_mib + act_mib * batch (x amp_activations)           MiB
    mem_util = min(100, util * bandwidth (x amp_bandwidth))                           %

**Pairs** -- a contention rule.  Job *i* beside job *j* (utilizations ``u`` as fractions)::

    speed_i = 1 / (1 + kappa * sensitivity_i * intensity_j * u_i ** own_exponent * u_j ** partner_exponent)

A job is slowed in proportion to the time it spends on the GPU and to how busy its partner keeps
the GPU; ``kappa`` is the interference constant (two fully busy jobs each run at ``1 / (1 + kappa)``),
``sensitivity`` and ``intensity`` the part of a workload's behaviour that utilization does not
explain (1 for workloads never measured in pairs).  Unlike max-min division it slows jobs whose
utilizations add up to less than 100 %, as the measurements do (two 40 % jobs: about 0.94 each, not
1.0), and with the fitted kappa (about 0.74) two busy jobs run at 0.57 each, not at the 0.5 of strict
time slicing (measured: 0.64 on average).

:class:`Calibration` holds the fitted numbers (``traces/profiles/calibrated/parameters.json``);
:func:`calibrated_tables` evaluates them on the analytic model's grid (the 14 workloads x batch sizes
32/64/128 x AMP off/on) into the schema's single and pair tables, and :func:`calibrated_model` wraps
those in a :class:`~simcluster.colocation.model.ColocationModel`, so every lookup, fallback and
consumer (lucid's packing classifier) works as with measured tables.

>>> rule = dict(kappa=0.75, own_exponent=1.3, partner_exponent=1.5)
>>> round(float(contention_speed(1.0, 1.0, **rule)), 3)  # two busy jobs: 1 / (1 + kappa) each
0.571
>>> [round(float(contention_speed(*u, **rule)), 3) for u in ((0.1, 1.0), (1.0, 0.1))]  # light, then busy
[0.964, 0.977]
>>> round(float(contention_speed(0.4, 0.4, **rule)), 3)  # under 100 % together, still slowed
0.945
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from simcluster.colocation.analytic import BATCH_SIZES
from simcluster.colocation.folders import CALIBRATED_DIR_NAME, PROFILES_DIR
from simcluster.colocation.model import FLOOR, ColocationModel
from simcluster.colocation.schema import PAIR_COLUMNS, SINGLE_COLUMNS, STATUS_OK, TableError

__all__ = [
    "CALIBRATED_DIR",
    "PARAMETERS_FILE",
    "Calibration",
    "Constants",
    "SoloFit",
    "calibrated_model",
    "calibrated_tables",
    "contention_speed",
    "read_calibration",
    "solo_figures",
]

CALIBRATED_DIR = PROFILES_DIR / CALIBRATED_DIR_NAME
PARAMETERS_FILE = "parameters.json"


@dataclass(frozen=True, slots=True)
class SoloFit:
    """One workload's fitted step-time, memory and sharing figures (units as in the module docstring)."""

    model: str
    dataset: str
    sync_ms: float  # host time per step the GPU waits for (input batch, loss read-back)
    host_ms: float  # host time that overlaps GPU work (Python, kernel launches)
    fixed_ms: float  # GPU time per step independent of the batch
    per_sample_us: float  # GPU time per sample, fp32
    amp_gain: float  # per-sample GPU work runs this much faster under AMP
    static_mib: float  # weights, gradients, optimizer state, workspaces (beyond the CUDA context)
    act_mib: float  # memory per sample of the batch (activations kept for backward)
    bandwidth: float  # memory-bandwidth utilization per unit of GPU utilization
    sensitivity: float = 1.0  # how much more than its utilization says this job suffers from a partner
    intensity: float = 1.0  # how much more than its utilization says this job hurts a partner


STEP_FIELDS: tuple[str, ...] = (
    "sync_ms", "host_ms", "fixed_ms", "per_sample_us", "amp_gain", "static_mib", "act_mib", "bandwidth",
)  # fmt: skip
"""The per-workload single-job parameters, in the order :func:`solo_figures` takes them."""


@dataclass(frozen=True, slots=True)
class Constants:
    """The fitted constants every workload shares."""

    context_mib: float  # CUDA context and library memory of any job
    amp_host: float  # host time per step under AMP, relative (autocast, GradScaler)
    amp_fixed: float  # batch-independent GPU time under AMP, relative
    amp_activations: float  # per-sample memory under AMP, relative
    amp_bandwidth: float  # memory-bandwidth per GPU utilization under AMP, relative
    overlap: float  # k of the smooth maximum of host and GPU time (large: a hard maximum)
    kappa: float  # interference constant: two fully busy jobs each run at 1 / (1 + kappa)
    own_exponent: float  # how a job's slowdown grows with its own utilization
    partner_exponent: float  # how it grows with the partner's

    def step_vector(self) -> np.ndarray:
        return np.array([getattr(self, name) for name in SOLO_CONSTANTS], dtype=float)


SOLO_CONSTANTS: tuple[str, ...] = (
    "context_mib", "amp_host", "amp_fixed", "amp_activations", "amp_bandwidth", "overlap",
)  # fmt: skip
"""The single-job constants, in the order :func:`solo_figures` takes them."""
PAIR_CONSTANTS: tuple[str, ...] = ("kappa", "own_exponent", "partner_exponent")


@dataclass(frozen=True)
class Calibration:
    """Fitted parameters plus where they came from and how well they fit (``parameters.json``)."""

    constants: Constants
    workloads: tuple[SoloFit, ...]
    fitted_to: dict[str, Any] = field(default_factory=dict)  # data sets, their sizes and licences
    fit: dict[str, Any] = field(default_factory=dict)  # error figures, for run outputs and the report

    def workload(self, model: str) -> SoloFit | None:
        return next((w for w in self.workloads if w.model == model), None)

    def to_json(self) -> str:
        document = {
            "format": "simcluster calibrated colocation model 1",
            "generated_by": "python -m simcluster.colocation.calibrate",
            "fitted_to": self.fitted_to,
            "fit": self.fit,
            "constants": _significant(asdict(self.constants)),
            "workloads": [_significant(asdict(w)) for w in self.workloads],
        }
        return json.dumps(document, indent=2, sort_keys=False) + "\n"

    @classmethod
    def from_json(cls, text: str, source: str = "<calibration>") -> Calibration:
        """Parse and check a ``parameters.json``; TableError naming the file and field at fault."""
        try:
            document = json.loads(text)
        except json.JSONDecodeError as exc:
            raise TableError(f"{source}: not valid JSON: {exc}") from exc
        if not isinstance(document, dict):
            raise TableError(f"{source}: expected a JSON object at the top")
        constants = _numbers(document.get("constants"), [*SOLO_CONSTANTS, *PAIR_CONSTANTS], f"{source}, constants")
        rows = document.get("workloads")
        if not isinstance(rows, list) or not rows:
            raise TableError(f"{source}, workloads: expected a non-empty list of workloads")
        workloads: list[SoloFit] = []
        for i, row in enumerate(rows):
            where = f"{source}, workloads[{i}]"
            if not isinstance(row, dict) or not all(isinstance(row.get(k), str) and row[k] for k in ("model", "dataset")):
                raise TableError(f"{where}: expected an object with non-empty 'model' and 'dataset'")
            if any(w.model == row["model"] for w in workloads):
                raise TableError(f"{where}: workload {row['model']!r} given twice")
            numbers = _numbers(row, [*STEP_FIELDS, "sensitivity", "intensity"], where)
            workloads.append(SoloFit(model=row["model"], dataset=row["dataset"], **numbers))
        extras = {}
        for name in ("fitted_to", "fit"):
            extras[name] = document.get(name) or {}
            if not isinstance(extras[name], dict):
                raise TableError(f"{source}, {name}: expected an object")
        return cls(Constants(**constants), tuple(workloads), **extras)


def _significant(record: dict[str, Any], digits: int = 6) -> dict[str, Any]:
    """Numbers to ``digits`` significant digits: enough for the model, and the file stays readable."""
    return {k: float(f"{v:.{digits}g}") if isinstance(v, float) else v for k, v in record.items()}


def _numbers(mapping: object, names: list[str], where: str) -> dict[str, float]:
    if not isinstance(mapping, dict):
        raise TableError(f"{where}: expected an object with {', '.join(names)}")
    out = {}
    for name in names:
        value = mapping.get(name)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise TableError(f"{where}, field {name!r}: expected a finite number, got {value!r}")
        if value < 0 or (value == 0 and name not in ("act_mib", "static_mib")):
            raise TableError(f"{where}, field {name!r}: expected a positive number, got {value!r}")
        out[name] = float(value)
    return out


def read_calibration(folder: str | os.PathLike[str] | None = None) -> Calibration:
    """The calibration in ``folder`` (default ``traces/profiles/calibrated``); FileNotFoundError if absent."""
    path = Path(folder if folder is not None else CALIBRATED_DIR) / PARAMETERS_FILE
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file (python -m simcluster.colocation.calibrate writes it)")
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as exc:  # a folder, no permission, not text
        raise TableError(f"{path}: cannot be read: {exc}") from exc
    return Calibration.from_json(text, str(path))


# ----------------------------------------------------------------------------- the two formulas
def solo_figures(params: np.ndarray, batch: np.ndarray, amp: np.ndarray, constants: np.ndarray) -> dict[str, np.ndarray]:
    """Single-job figures of n configurations: ``params`` n x 8 (:data:`STEP_FIELDS`), ``constants`` as
    :data:`SOLO_CONSTANTS`.  Returns arrays ``util`` and ``mem_util`` (fractions), ``gmem`` (MiB),
    ``step_ms``.  The fit and the tables both call this, so what was fitted is what runs."""
    sync, host, fixed, per_sample, gain, static, act, bandwidth = np.asarray(params, dtype=float).T
    context, amp_host, amp_fixed, amp_act, amp_bw, k = constants
    on = np.asarray(amp) > 0
    batch = np.asarray(batch, dtype=float)
    gpu = fixed * np.where(on, amp_fixed, 1.0) + per_sample * batch / 1000.0 / np.where(on, gain, 1.0)
    host = host * np.where(on, amp_host, 1.0)
    top = np.maximum(host, gpu)  # the smooth maximum, scaled to avoid overflow for large k
    step = sync + top * ((host / top) ** k + (gpu / top) ** k) ** (1.0 / k)
    util = gpu / step
    return {
        "util": util,
        "mem_util": np.minimum(1.0, util * bandwidth * np.where(on, amp_bw, 1.0)),
        "gmem": context + static + act * batch * np.where(on, amp_act, 1.0),
        "step_ms": step,
    }


def contention_speed(u_self: Any, u_other: Any, *, kappa: float, own_exponent: float, partner_exponent: float,
                     sensitivity: Any = 1.0, intensity: Any = 1.0) -> Any:
    """Speed (shared / alone) of a job with utilization ``u_self`` (fraction) beside one with ``u_other``.

    Works on floats and numpy arrays; in (0, 1] for utilizations in [0, 1].
    """
    u_self = np.clip(u_self, 0.0, 1.0)
    u_other = np.clip(u_other, 0.0, 1.0)
    return 1.0 / (1.0 + kappa * sensitivity * intensity * u_self**own_exponent * u_other**partner_exponent)


# ----------------------------------------------------------------------------- tables and the model
def calibrated_tables(calibration: Calibration) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(single, pair)`` in the schema's format: every workload x 32/64/128 x AMP 0/1 on one GPU, and
    every unordered pair of those configurations (self-pairs included)."""
    c = calibration.constants
    configs = [(w, bs, amp) for w in calibration.workloads for bs in BATCH_SIZES for amp in (0, 1)]
    params = np.array([[getattr(w, f) for f in STEP_FIELDS] for w, _, _ in configs])
    batch = np.array([bs for _, bs, _ in configs], dtype=float)
    amp = np.array([a for _, _, a in configs])
    figures = solo_figures(params, batch, amp, c.step_vector())
    iters = 1000.0 / figures["step_ms"]
    single = pd.DataFrame({
        "model": [w.model for w, _, _ in configs], "dataset": [w.dataset for w, _, _ in configs],
        "batchsize": batch.astype(np.int64), "amp": amp.astype(np.int64), "gpu_num": 1,
        "iters_per_s": np.round(iters, 4), "samples_per_s": np.round(iters * batch, 3),
        "gpu_util": np.round(100 * figures["util"], 2), "gmem_util": np.round(100 * figures["mem_util"], 2),
        "gmem": np.round(figures["gmem"]), "torch_peak_mem": np.round(figures["gmem"] - c.context_mib),
        "status": STATUS_OK, "error": "",
    }, columns=SINGLE_COLUMNS)  # fmt: skip

    n = len(configs)
    first, second = np.triu_indices(n)
    util = figures["util"]
    sensitivity = np.array([w.sensitivity for w, _, _ in configs])
    intensity = np.array([w.intensity for w, _, _ in configs])
    rule = {"kappa": c.kappa, "own_exponent": c.own_exponent, "partner_exponent": c.partner_exponent}
    s1 = contention_speed(util[first], util[second], sensitivity=sensitivity[first], intensity=intensity[second], **rule)
    s2 = contention_speed(util[second], util[first], sensitivity=sensitivity[second], intensity=intensity[first], **rule)
    s1, s2 = np.clip(s1, FLOOR, 1.0), np.clip(s2, FLOOR, 1.0)
    mem_util = figures["mem_util"]
    pair = {}
    for i, index in ((1, first), (2, second)):
        for column in ("model", "dataset", "batchsize", "amp", "gpu_num"):
            pair[f"{column}{i}"] = single[column].to_numpy()[index]
    pair.update(
        iters_per_s1=np.round(s1 * iters[first], 4), iters_per_s2=np.round(s2 * iters[second], 4),
        speed1=np.round(s1, 6), speed2=np.round(s2, 6),
        # while sharing, each job keeps the GPU busy for its utilization times its speed
        gpu_util=np.round(100 * np.minimum(1.0, util[first] * s1 + util[second] * s2), 2),
        gmem_util=np.round(100 * np.minimum(1.0, mem_util[first] * s1 + mem_util[second] * s2), 2),
        gmem=single["gmem"].to_numpy()[first] + single["gmem"].to_numpy()[second],
        status=STATUS_OK, error="",
    )  # fmt: skip
    return single, pd.DataFrame(pair, columns=PAIR_COLUMNS)


def describe(calibration: Calibration) -> str:
    """One line for run outputs: what the model is, what it was fitted to, how well it fits."""
    data = calibration.fitted_to.get("short", "public measurements")
    fit = calibration.fit
    figures = ""
    if "mae_in_sample" in fit and "mae_leave_one_workload_out" in fit:
        figures = (f"; pair-speed MAE {fit['mae_in_sample']:.3f} in-sample, "
                   f"{fit['mae_leave_one_workload_out']:.3f} for workloads left out of the fit")
    note = calibration.fitted_to.get("note", "not measured on a GPU by us")
    return f"calibrated model fitted to {data}{figures}; {note}"


def calibrated_model(folder: str | os.PathLike[str] | None = None) -> ColocationModel:
    """The calibrated model from ``folder``'s ``parameters.json`` (default: the committed one)."""
    directory = Path(folder) if folder is not None else CALIBRATED_DIR
    calibration = read_calibration(directory)
    single, pair = calibrated_tables(calibration)
    provenance = {
        "kind": "calibrated",
        "description": describe(calibration),
        "parameters": _display(directory / PARAMETERS_FILE),
        "fitted_to": calibration.fitted_to.get("data", []),
        "fit": calibration.fit,
    }
    # generated here from checked parameters: the tables are valid by construction (and tested); the
    # rule has no GPU count (a job on n GPUs meets its partner on each GPU as a one-GPU job would)
    return ColocationModel(single, pair, source=f"calibrated model ({_display(directory)})",
                           provenance=provenance, validate=False, per_gpu=True)


def _display(path: Path) -> str:
    """A path relative to the repository when it is inside it (stable across checkouts)."""
    try:
        return str(path.resolve().relative_to(PROFILES_DIR.parent.parent))
    except ValueError:
        return str(path)
