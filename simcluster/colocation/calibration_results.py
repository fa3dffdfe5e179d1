"""What a calibration found: the measured speeds it was fitted to, its predictions and their scores.

The records passed from the fit (:mod:`simcluster.colocation.calibrate`) to its report
(:mod:`simcluster.colocation.calibration_report`), in a module of their own so that the fit can
write the report and the report needs nothing of the fit.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from simcluster.colocation.calibrated import Calibration
from simcluster.colocation.model import CEILING, FLOOR
from simcluster.colocation.schema import SINGLE_KEY, STATUS_OK

__all__ = ["FitReport", "Fold", "PairRows", "Subject", "pair_rows", "scores"]


@dataclass(frozen=True)
class PairRows:
    """Measured pair speeds, one row per job of each pair (both orientations)."""

    own: list[tuple]  # the job's single-table key
    other: list[tuple]  # its partner's
    speed: np.ndarray  # measured, clamped to [FLOOR, CEILING]
    raw: np.ndarray  # measured, as published

    def involving(self, model: str) -> np.ndarray:
        return np.array([a[0] == model or b[0] == model for a, b in zip(self.own, self.other)])

    def take(self, mask: np.ndarray) -> PairRows:
        index = np.flatnonzero(mask)
        return PairRows([self.own[i] for i in index], [self.other[i] for i in index], self.speed[index],
                        self.raw[index])


def pair_rows(pair: pd.DataFrame) -> PairRows:
    ok = pair[pair["status"] == STATUS_OK]
    keys = [list(zip(*(ok[f"{f}{i}"].tolist() for f in SINGLE_KEY))) for i in (1, 2)]
    own = keys[0] + keys[1]
    other = keys[1] + keys[0]
    raw = np.concatenate([ok["speed1"].to_numpy(float), ok["speed2"].to_numpy(float)])
    return PairRows(own, other, np.clip(raw, FLOOR, CEILING), raw)


def scores(predicted: np.ndarray, truth: np.ndarray) -> dict[str, float]:
    return {
        "mae": float(np.mean(np.abs(predicted - truth))),
        "p90": float(np.percentile(np.abs(predicted - truth), 90)),
        "mean_predicted": float(np.mean(predicted)),
        "mean_measured": float(np.mean(truth)),
        "corr": float(np.corrcoef(predicted, truth)[0, 1]) if np.ptp(predicted) > 0 else 0.0,
        "nan": int(np.isnan(predicted).sum()),
        "out_of_range": int(((predicted <= 0) | (predicted > 1)).sum()),
    }


@dataclass
class Fold:
    """One workload left out: its pairs, and what each variant predicted for them."""

    workload: str
    rows: PairRows
    predicted: np.ndarray  # its solo profile known (stage 1 as deployed), its pairs unseen
    predicted_blind: np.ndarray  # nothing measured about it: stage 1 refitted without its solo rows too
    predicted_global: np.ndarray  # solo profile known, the rule without per-workload factors
    predicted_mean: np.ndarray  # the mean speed of the training pairs


@dataclass(frozen=True)
class Subject:
    """What was fitted, in the words of the report and plot.

    The defaults describe the committed calibration (Lucid's RTX 3090 tables, compared with the analytic
    model it replaced); a refit to our own measurements on another GPU names that GPU and compares with
    the RTX 3090 calibration.
    """

    gpu: str = "RTX 3090"
    baseline_row: str = "analytic model (the old default)"
    baseline_panel: str = "analytic model (before)"
    baseline_note: str = "our assumptions, max-min rule"
    fitted: str = "calibrated"
    axis: str = "measured speed (Lucid, RTX 3090; clamped to 1)"


@dataclass
class FitReport:
    """Everything the fit found: the parameters and the figures of the report and plot."""

    calibration: Calibration
    rows: PairRows
    in_sample: np.ndarray  # deployed model's speed per row
    in_sample_global: np.ndarray  # the rule without per-workload factors
    baseline: np.ndarray  # the model this calibration replaces, on the same rows
    legacy_kappa: float
    legacy: np.ndarray  # the analytic rule, kappa refitted
    folds: list[Fold]
    solo: dict[str, float]  # stage 1 errors against the measured single table
    gavel: list[dict[str, Any]]
    data: dict[str, Any]  # facts about the measured tables the report quotes
    subject: Subject = field(default_factory=Subject)
    pair_held_out: np.ndarray | None = None  # each pair predicted by a fit without it (both workloads known)

    def held_out(self, variant: str = "predicted") -> tuple[np.ndarray, np.ndarray]:
        """(predicted, measured) over every fold's pairs: a pair of two left-out workloads counts in both."""
        return (np.concatenate([getattr(f, variant) for f in self.folds]),
                np.concatenate([f.rows.speed for f in self.folds]))

