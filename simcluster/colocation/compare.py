"""How slowdowns measured on one GPU compare with Lucid's RTX 3090 ones, workload by workload.

``python -m simcluster.colocation.compare traces/profiles/measured/h100`` prints a Markdown table and
writes ``vs_rtx3090.png`` beside the tables.  A workload's slowdown is the mean of ``1 / speed`` over its
measured pairs (each pair counts once for each of its jobs that is that workload; speeds clamped to
[0.05, 1] as the simulator clamps them).  Two comparisons:

* **the same pairs**: pairs measured on both GPUs in the same configurations (batch size, AMP, one GPU
  each): what the GPU changes, nothing else;
* **every pair measured on the new GPU**, against what the RTX 3090 calibration (the default model of
  runs with no GPU type, :mod:`simcluster.colocation.calibrated`) predicts for them: how far off the
  default would be on that GPU.
"""

from __future__ import annotations

import io
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from simcluster.atomic import atomic_write
from simcluster.colocation.calibrate import deployed, predictions
from simcluster.colocation.calibrated import read_calibration
from simcluster.colocation.calibration_results import PairRows, pair_rows
from simcluster.colocation.folders import find_table, measured_metadata
from simcluster.colocation.importers import import_lucid
from simcluster.colocation.schema import TableError, read_pair_table

__all__ = ["Comparison", "compare", "main", "plot_png", "table_markdown"]

PLOT_NAME = "vs_rtx3090.png"


@dataclass(frozen=True)
class Comparison:
    """Per-workload mean slowdowns (columns below), one row per workload measured on the new GPU."""

    gpu: str
    table: pd.DataFrame  # workload, same_pairs, rtx3090, gpu (on the same pairs), speeds, measured, calibrated


def _slowdown_by_workload(rows: PairRows, speeds: np.ndarray) -> pd.Series:
    frame = pd.DataFrame({"workload": [k[0] for k in rows.own], "slowdown": 1.0 / speeds})
    return frame.groupby("workload")["slowdown"].mean()


def _pair_key(a: tuple, b: tuple) -> frozenset[tuple]:
    return frozenset((a, b))


def compare(folder: Path, lucid: Path | None = None) -> Comparison:
    """Compare the pair table measured in ``folder`` with Lucid's (``lucid``: default the shared data's)."""
    metadata = measured_metadata(folder)
    pair_path = find_table(folder, "pair")
    if metadata is None or pair_path is None:
        raise TableError(f'{folder}: no pair table with a metadata.json saying "measured": true')
    mine = pair_rows(read_pair_table(pair_path))
    _, theirs_table = import_lucid(lucid)
    theirs = pair_rows(theirs_table)
    common = {_pair_key(a, b) for a, b in zip(mine.own, mine.other)} & {
        _pair_key(a, b) for a, b in zip(theirs.own, theirs.other)}
    on_mine = np.array([_pair_key(a, b) in common for a, b in zip(mine.own, mine.other)])
    on_theirs = np.array([_pair_key(a, b) in common for a, b in zip(theirs.own, theirs.other)])
    # Lucid measured some pairs more than once: average each oriented (job, partner) first, as lookups do
    theirs_same = theirs.take(on_theirs)
    frame = pd.DataFrame({"own": theirs_same.own, "other": theirs_same.other, "speed": theirs_same.speed})
    averaged = frame.groupby(["own", "other"], sort=False)["speed"].mean().reset_index()
    theirs_rows = PairRows(list(averaged["own"]), list(averaged["other"]), averaged["speed"].to_numpy(),
                           averaged["speed"].to_numpy())
    mine_same = mine.take(on_mine)
    calibrated = predictions(deployed(read_calibration()), mine)
    table = pd.DataFrame({
        "same_pairs": pd.Series([k[0] for k in mine_same.own]).value_counts(),
        "rtx3090": _slowdown_by_workload(theirs_rows, theirs_rows.speed),
        "gpu": _slowdown_by_workload(mine_same, mine_same.speed),
        "speeds": pd.Series([k[0] for k in mine.own]).value_counts(),
        "measured": _slowdown_by_workload(mine, mine.speed),
        "calibrated": _slowdown_by_workload(mine, calibrated),
    })  # fmt: skip
    table["same_pairs"] = table["same_pairs"].fillna(0).astype(int)
    table = table[table["speeds"].notna()].rename_axis("workload").reset_index()
    return Comparison(str(metadata.get("device_name") or folder.name), table)


def table_markdown(comparison: Comparison) -> str:
    """The comparison as a Markdown table (slowdown ξ = 1 / speed, means per workload)."""
    gpu = _short(comparison.gpu)
    lines = [
        (f"| workload | speeds in the same pairs | RTX 3090 ξ | {gpu} ξ | speeds on the {gpu} | {gpu} ξ measured | "
        "RTX 3090 calibration ξ |"),
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for row in comparison.table.itertuples(index=False):
        same = (f"{row.same_pairs} | {row.rtx3090:.2f} | {row.gpu:.2f}" if row.same_pairs else "0 | – | –")
        lines.append(f"| {row.workload} | {same} | {int(row.speeds)} | {row.measured:.2f} | {row.calibrated:.2f} |")
    t = comparison.table
    both = t[t.same_pairs > 0]
    weights = both.same_pairs
    lines.append(f"| **all** | {int(weights.sum())} | {np.average(both.rtx3090, weights=weights):.2f} | "
                 f"{np.average(both.gpu, weights=weights):.2f} | {int(t.speeds.sum())} | "
                 f"{np.average(t.measured, weights=t.speeds):.2f} | {np.average(t.calibrated, weights=t.speeds):.2f} |")
    return "\n".join(lines) + "\n"


def _short(name: str) -> str:
    words = name.replace("NVIDIA", "").split()
    return words[0] if words else name


def plot_png(comparison: Comparison) -> bytes:
    """Two panels of per-workload mean slowdown: the same pairs on both GPUs; every pair measured on the new
    GPU against the RTX 3090 calibration's prediction."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    gpu = _short(comparison.gpu)
    t = comparison.table
    both = t[t.same_pairs > 0]
    figure, axes = plt.subplots(1, 2, figsize=(12.5, 4.4), gridspec_kw={"width_ratios": [len(both), len(t)]})
    panels = [(axes[0], both, ("rtx3090", "gpu"), ("RTX 3090 (Lucid)", f"{gpu} (ours)"),
               "the same pairs on both GPUs (batch 32, no AMP)"),
              (axes[1], t, ("calibrated", "measured"), ("RTX 3090 calibration (predicted)", f"{gpu} (measured)"),
               f"every pair measured on the {gpu}")]
    for ax, rows, columns, labels, title in panels:
        x = np.arange(len(rows))
        for i, (column, label, colour) in enumerate(zip(columns, labels, ("tab:gray", "tab:blue"), strict=True)):
            ax.bar(x + (i - 0.5) * 0.38, rows[column], width=0.38, label=label, color=colour)
        ax.set_xticks(x, rows["workload"], rotation=45, ha="right", fontsize=8)
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.set_ylim(0.9, max(2.2, float(rows[list(columns)].max().max()) + 0.1))
        ax.set_title(title, fontsize=10)
        ax.legend(fontsize=8, loc="upper left")
        ax.grid(axis="y", alpha=0.3)
    axes[0].set_ylabel("mean slowdown ξ = 1 / speed beside a partner")
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=80, metadata={"Software": None})
    plt.close(figure)
    return buffer.getvalue()


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m simcluster.colocation.compare FOLDER``: print the table, write FOLDER/vs_rtx3090.png."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        print("usage: python -m simcluster.colocation.compare FOLDER  (a folder of measured tables)", file=sys.stderr)
        return 2
    folder = Path(args[0])
    try:
        comparison = compare(folder)
    except (FileNotFoundError, TableError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    image = plot_png(comparison)
    atomic_write(folder / PLOT_NAME, lambda handle: handle.write(image))
    print(table_markdown(comparison), end="")
    print(f"\nwrote {folder / PLOT_NAME}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
