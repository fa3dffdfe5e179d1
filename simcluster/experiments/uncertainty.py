"""The report's intervals: each configuration's figures over its replicas, and paired differences.

Two sources of replicas (:mod:`simcluster.experiments.replicas`):

* runs that *are* replicas — a sweep's ``--replicas N``, recorded in each summary's ``sweep_run``;
  configurations run on the same replica indices pair up;
* ``report --replicas N``: a post-hoc bootstrap of finished runs over the trace's days, the schedule
  held fixed (:func:`~simcluster.experiments.replicas.posthoc_bootstrap`).

The comparison table gains ``F_sd``, ``F_low`` and ``F_high`` (the 95 % interval) for each figure that
has replicas; ``differences.csv`` holds the paired differences of avg JCT with their verdicts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from simcluster.experiments.aggregate import FIGURES, Configuration, baseline_of
from simcluster.experiments.replicas import (
    DAY,
    Interval,
    compare,
    interval,
    parse_perturbation,
    posthoc_bootstrap,
)

MAX_PAIRS = 45


@dataclass
class Uncertainty:
    """What the report adds when runs have replicas."""

    method: str  # one sentence: where the replicas come from
    values: dict[str, dict[str, dict[str, dict[int, float]]]]  # label → vc → figure → replica → value
    differences: list[tuple[str, str, Interval, str]] = field(default_factory=list)

    def differences_frame(self) -> pd.DataFrame:
        rows = [{"first": a, "second": b, "figure": "avg_jct", **vars(d), "verdict": text}
                for a, b, d, text in self.differences]
        return pd.DataFrame(rows, columns=["first", "second", "figure", "mean", "sd", "low", "high", "n", "verdict"])

    def with_intervals(self, table: pd.DataFrame) -> pd.DataFrame:
        """``table`` (comparison.csv) with ``F_sd``, ``F_low``, ``F_high`` where a figure has replicas."""
        table = table.copy()
        for i, row in table.iterrows():
            for name, by_replica in self.values.get(row["label"], {}).get(row["vc"], {}).items():
                found = interval(list(by_replica.values()))
                table.loc[i, [f"{name}_sd", f"{name}_low", f"{name}_high", f"{name}_replicas"]] = [
                    found.sd, found.low, found.high, found.n]
        return table


def replica_uncertainty(groups: Sequence[Configuration], baseline: str | None = None) -> Uncertainty | None:
    """Intervals from runs that are replicas; None when none is."""
    values: dict[str, dict[str, dict[str, dict[int, float]]]] = {}
    kinds = set()
    for g in groups:
        for r in g.runs:
            sweep = r.summary.get("sweep_run") or {}
            if sweep.get("replica") is None:
                continue
            kinds.add(str(sweep.get("perturb")))
            for vc in [*g.vcs, "all"]:
                source = r.summary if vc == "all" else r.summary.get("per_vc", {}).get(vc, {})
                for name in FIGURES:
                    value = source.get(name)
                    if value is not None:
                        values.setdefault(g.label, {}).setdefault(vc, {}).setdefault(name, {})[
                            int(sweep["replica"])] = float(value)
    if not values:
        return None
    method = (f"{', '.join(sorted(kinds))} replicas simulated by the sweep (docs/uncertainty.md); each figure's "
              "mean over them with its 95 % percentile interval")
    found = Uncertainty(method, values)
    found.differences = _differences(groups, found, baseline)
    return found


def posthoc_uncertainty(groups: Sequence[Configuration], replicas: int, perturb: str, seed: int,
                        baseline: str | None = None) -> Uncertainty:
    """Intervals by ``report --replicas``: the post-hoc bootstrap of each configuration's first run."""
    made = parse_perturbation(perturb)
    if made.kind != "bootstrap" or made.by != "day":
        raise ValueError(f"report --perturb {perturb}: a finished run can only be resampled by days (bootstrap, "
                         "bootstrap:block=SECONDS); jitter, seeds and users need simulated replicas: lucid-sim sweep "
                         "--replicas N --perturb …")
    jobs = {g.label: g.runs[0].jobs() for g in groups}
    drawn = posthoc_bootstrap(jobs, replicas, seed, made.block)
    block = "days" if made.block == DAY else f"{made.block:g}-second blocks"
    method = (f"post-hoc bootstrap of each configuration's run over the trace's {block} ({replicas} replicas, seed "
              f"{seed}; the schedule held fixed: docs/uncertainty.md)")
    found = Uncertainty(method, {label: {"all": figures} for label, figures in drawn.items()})
    found.differences = _differences(groups, found, baseline)
    return found


def _differences(groups: Sequence[Configuration], found: Uncertainty,
                 baseline: str | None) -> list[tuple[str, str, Interval, str]]:
    """avg JCT's paired differences: each configuration against its baseline's, else every pair on one trace."""
    jct = {g.label: found.values.get(g.label, {}).get("all", {}).get("avg_jct", {}) for g in groups}
    if baseline is not None:
        pairs = [(g.label, base.label) for g in groups if g.policy != baseline
                 and (base := baseline_of(g, groups, baseline)) is not None]
    else:
        pairs = [(a.label, b.label) for i, a in enumerate(groups) for b in groups[i + 1:] if a.trace == b.trace]
    return compare({k: v for k, v in jct.items() if v}, pairs=[p for p in pairs if jct[p[0]] and jct[p[1]]][:MAX_PAIRS])


def interval_cell(row: Any, name: str, text: str, value: Any) -> str | None:
    """``mean [low–high]`` for a figure with replicas (``value`` formats a number), else None."""
    low, high = row.get(f"{name}_low"), row.get(f"{name}_high")
    if not text or low is None or high is None or not np.isfinite(low):
        return None
    return f"{text} [{value(name, low)}–{value(name, high)}]"
