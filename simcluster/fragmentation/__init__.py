"""GPU fragmentation under six placements, FGD's way (``lucid-sim fragmentation``): the study and its outputs.

:func:`fragmentation_study` runs FGD's evaluation (:mod:`~simcluster.fragmentation.study`) for each
placement and seed and returns one row per placement × seed × arrived level; :func:`write_study`
writes ``fragmentation.csv``, ``summary.csv`` and the paper-style plot.

>>> from simcluster.paths import shared_data_dir
>>> folder = shared_data_dir() / "alibaba_openb"
>>> result = fragmentation_study(folder, ["bestfit"], [42], inflate=0.5)  # doctest: +SKIP
>>> float(result.at(50).loc["bestfit", "unallocated_median"])  # doctest: +SKIP
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from simcluster.fragmentation.rules import ALIASES, RULE_NAMES
from simcluster.fragmentation.study import COLUMNS, levels, run
from simcluster.fragmentation.workload import arrival_sequence, load_openb
from simcluster.limits import MAX_INFLATE, MAX_SEEDS, number, shown
from simcluster.paths import resolve_data

__all__ = ["RULE_NAMES", "StudyResult", "fragmentation_study", "parse_placements", "parse_seeds", "plot_unallocated",
           "write_study"]

PAPER_SEEDS = tuple(range(42, 52))  # the seeds of FGD's published runs


@dataclass(frozen=True)
class StudyResult:
    """``table``: one row per placement × seed × arrived level (:data:`~simcluster.fragmentation.study.COLUMNS`);
    ``failed``: pods that found no node, per (placement, seed); ``cpu_seconds``: the runs' CPU time."""

    table: pd.DataFrame
    failed: dict[tuple[str, int], int]
    cpu_seconds: float
    trace: str
    inflate: float

    def at(self, level: int) -> pd.DataFrame:
        """Per placement at one arrived level: median, min and max over seeds of each figure, and the rank
        by median unallocated GPU (1: fewest)."""
        rows = self.table[self.table["arrived_pct"] == level]
        grouped = rows.groupby("placement", sort=False)
        summary = pd.DataFrame({
            "seeds": grouped["seed"].count(),
            "unallocated_median": grouped["unallocated_gpu_pct"].median(),
            "unallocated_min": grouped["unallocated_gpu_pct"].min(),
            "unallocated_max": grouped["unallocated_gpu_pct"].max(),
            "frag_pct_of_capacity_median": grouped["frag_pct_of_capacity"].median(),
            "frag_pct_of_idle_median": grouped["frag_pct_of_idle"].median(),
        })
        summary = summary.round(3)
        summary["rank"] = summary["unallocated_median"].rank(method="min").astype(int)
        return summary

    def summary(self, at: Iterable[int] = (50, 100, 130)) -> pd.DataFrame:
        """:meth:`at` for several levels, one table (``arrived_pct`` first)."""
        parts = [self.at(level).reset_index().assign(arrived_pct=level) for level in at]
        frame = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()
        return frame[["arrived_pct", *[c for c in frame.columns if c != "arrived_pct"]]] if len(frame) else frame


def parse_placements(text: str | Sequence[str]) -> list[str]:
    """``"fgd,bestfit"`` (or ``all``) → the placement names, checked (``random`` also names ``random-fit``)."""
    items = [p.strip() for p in (text.split(",") if isinstance(text, str) else text) if p.strip()]
    if items == ["all"]:
        return list(RULE_NAMES)
    names = [ALIASES.get(p, p) for p in items]
    unknown = [p for p in names if p not in RULE_NAMES]
    if unknown or not names:
        raise ValueError(f"--placement: unknown placement(s) {', '.join(unknown) or '(none given)'}; choose from "
                         f"{', '.join(RULE_NAMES)} or all")
    return list(dict.fromkeys(names))


def parse_seeds(text: str) -> list[int]:
    """``"42-51"`` or ``"1,2,5-7"`` → the seeds.

    >>> parse_seeds("42-44,7")
    [42, 43, 44, 7]
    """
    seeds: dict[int, None] = {}
    for part in (p.strip() for p in text.split(",")):
        low, dash, high = part.partition("-")
        try:
            first, last = (int(low), int(high)) if dash else (int(part), int(part))
        except ValueError:
            raise ValueError(f"--seeds: expected integers or ranges such as 42-51, got {shown(part)}") from None
        if not 0 <= first <= last < 2**63:  # (Go's seeds are int64)
            raise ValueError(f"--seeds: a range runs from a seed to a larger one, each from 0 to 2^63 - 1; got "
                             f"{shown(part)}")
        if len(seeds) + (last - first + 1) > MAX_SEEDS:  # counted before any list is built
            raise ValueError(f"--seeds: more than {MAX_SEEDS:,} seeds ({shown(text)}); FGD's study takes 10")
        seeds.update(dict.fromkeys(range(first, last + 1)))
    if not seeds:
        raise ValueError("--seeds: no seed given")
    return list(seeds)


def fragmentation_study(trace: str | Path, placements: Sequence[str] = RULE_NAMES, seeds: Sequence[int] = PAPER_SEEDS,
                        inflate: float = 1.3, node_list: str | Path | None = None,
                        on_run: Callable[[str, int], None] | None = None) -> StudyResult:
    """FGD's evaluation of ``placements`` over ``seeds`` on an openb pod list (a file, or a folder whose
    ``openb_pod_list_default.csv`` it uses) and its node list (beside it, or ``node_list``).

    ``inflate``: the GPU demand that arrives, as a multiple of the cluster's GPUs (FGD: 1.3).
    ``on_run(placement, seed)`` is called after each run (progress).
    """
    inflate = number(inflate, "--inflate", above=0, high=MAX_INFLATE)  # (pods are drawn until it is reached)
    cluster, pods = load_openb(resolve_data(trace), node_list and resolve_data(node_list))
    workload = pods.typical()
    cpu0 = time.process_time()
    parts, failed = [], {}
    for seed in seeds:
        sequence = arrival_sequence(pods, cluster, seed, inflate)
        for placement in placements:
            fresh = arrival_sequence(pods, cluster, seed, inflate) if placement == "random-fit" else sequence
            path = run(cluster, pods, placement, seed, inflate, workload, fresh)
            parts.append(levels(path, placement, seed))
            failed[(placement, seed)] = path.failed
            if on_run is not None:
                on_run(placement, seed)
    table = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=list(COLUMNS))
    order = {p: i for i, p in enumerate(placements)}
    table = table.sort_values(["placement", "seed", "arrived_pct"], key=lambda c: c.map(order) if c.name ==
                              "placement" else c, kind="stable").reset_index(drop=True)
    return StudyResult(table, failed, time.process_time() - cpu0, pods.source, inflate)


def plot_unallocated(table: pd.DataFrame, title: str = "Unallocated GPU vs arrived workload",
                     start: int = 50) -> bytes:
    """The paper's figure: unallocated GPU % (median over seeds, min–max band) against arrived GPU demand %,
    from ``start`` % on (below it every placement places every pod)."""
    from simcluster.canvas import new_figure, png_bytes

    fig, ax = new_figure()
    for placement, rows in table[table["arrived_pct"] >= start].groupby("placement", sort=False):
        by_level = rows.groupby("arrived_pct")["unallocated_gpu_pct"]
        x = np.array(by_level.median().index, dtype=float)
        line = ax.plot(x, by_level.median().to_numpy(), label=str(placement))[0]
        ax.fill_between(x, by_level.min().to_numpy(), by_level.max().to_numpy(), color=line.get_color(), alpha=0.2)
    ax.set_xlabel("arrived GPU demand (% of the cluster's GPUs)")
    ax.set_ylabel("unallocated GPUs (% of the cluster's GPUs)")
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    ax.legend(loc="upper right", fontsize="small")
    return png_bytes(fig)


def write_study(result: StudyResult, out: str | Path, overwrite: bool = False) -> Path:
    """``out``/fragmentation.csv, summary.csv (per placement at 50, 100 and 130 %), summary.json and
    unallocated.png, written as one folder (atomically: the old one or the new one, never half)."""
    from simcluster.results import to_json, write_folder

    summary = result.summary()
    facts: dict[str, Any] = {
        "trace": result.trace, "inflate": result.inflate, "cpu_seconds": round(result.cpu_seconds, 2),
        "placements": list(dict.fromkeys(result.table["placement"])),
        "seeds": sorted(set(result.table["seed"].tolist())),
        "at_100": result.at(100).reset_index().to_dict(orient="records"),
        "failed_pods": {f"{p}/{s}": n for (p, s), n in result.failed.items()},
    }
    return write_folder(Path(out), {"fragmentation.csv": result.table, "summary.csv": summary},
                        {"summary.json": to_json(facts, indent=2) + "\n"},
                        {"unallocated.png": plot_unallocated(result.table)}, kind="fragmentation",
                        inputs=[result.trace], overwrite=overwrite)

