"""A reliability study: the ETTR of one job of each size against its checkpoint interval, under a fault model.

For each job size N (GPUs) and each interval τ, ``replicas`` runs of one N-GPU job (on N / GPUs-per-node nodes,
with ``spare_nodes`` spares) of ``work`` seconds, seeded 0 … replicas−1; its ETTR is work ÷ (end − start).
Per (N, τ): the mean ETTR with its 95 % interval (t interval of the replicas' ETTRs), and where the model is
exponential (a rate model of shape 1) and every fault costs the same (spares, so no wait for a repair) the
closed form (:func:`simcluster.faults.ettr` with the restart exposed).  Each size is also run at Daly's
interval for its rate (λ × its nodes) and its checkpoint cost: the Young/Daly optimum, marked in the table
(``daly``) and the picture.

``lucid-sim reliability`` and :func:`reliability_study` (re-exported by :mod:`simcluster.api`) run it;
:meth:`ReliabilityStudy.write` writes ``reliability.csv`` and ``reliability.png``.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from simcluster.config import SimConfig
from simcluster.engine import Simulation
from simcluster.faults import RateModel, daly_interval, ettr
from simcluster.faults.models import FailureModel
from simcluster.faults.spec import failure_model, node_rate, seconds
from simcluster.job import Job
from simcluster.limits import LimitError, number
from simcluster.run import resolve_run

MAX_POINTS = 200
MAX_REPLICAS = 10_000


def parse_intervals(text: str, points: int = 8) -> tuple[float, ...]:
    """``5m..4h`` (``points`` intervals spaced evenly on a log scale, both ends included) or ``5m,30m,1h``.

    >>> [round(t) for t in parse_intervals("5m..4h", 3)]
    [300, 2078, 14400]
    >>> parse_intervals("600,1h")
    (600.0, 3600.0)
    """
    text = text.strip()
    if ".." in text:
        low_text, _, high_text = text.partition("..")
        low = seconds(low_text, "--checkpoint-interval (from)")
        high = seconds(high_text, "--checkpoint-interval (to)")
        points = int(number(points, "--points", low=2, high=MAX_POINTS, whole=True))
        if not 0 < low < high:
            raise LimitError(f"--checkpoint-interval {text}: needs 0 < FROM < TO, e.g. 5m..4h")
        return tuple(float(v) for v in np.geomspace(low, high, points))
    values = tuple(seconds(part, "--checkpoint-interval") for part in text.split(",") if part.strip())
    if not values or any(v <= 0 for v in values) or len(values) > MAX_POINTS:
        raise LimitError(f"--checkpoint-interval {text}: give FROM..TO (5m..4h) or positive times, e.g. 5m,30m,1h")
    return values


def parse_sizes(text: str, gpus_per_node: int) -> tuple[int, ...]:
    """``8,64,512``: GPU counts, each a positive multiple of the GPUs per node."""
    sizes = []
    for part in text.split(","):
        if not part.strip():
            continue
        size = int(number(part, "--gpus", low=1, high=10_000_000, whole=True))
        if size % gpus_per_node:
            raise LimitError(f"--gpus {size}: a job of whole nodes, a multiple of --gpus-per-node {gpus_per_node}")
        sizes.append(size)
    if not sizes:
        raise LimitError("--gpus: give job sizes in GPUs, e.g. 8,64,512,4096,16384")
    return tuple(sizes)


@dataclass(frozen=True)
class ReliabilityStudy:
    """The study's table (one row per size and interval: ``gpus, nodes, interval_s, daly, replicas, ettr_mean,
    ettr_low, ettr_high, closed_form, interruptions_mean``) and what it was run with."""

    table: pd.DataFrame
    settings: dict[str, Any]

    def write(self, out: str | os.PathLike[str]) -> list[Path]:
        """``reliability.csv`` and ``reliability.png`` into folder ``out`` (made if needed)."""
        from simcluster.atomic import atomic_write

        folder = Path(out)
        folder.mkdir(parents=True, exist_ok=True)
        csv = self.table.to_csv(index=False).encode()
        png = ettr_picture(self.table, self.settings)
        return [atomic_write(folder / "reliability.csv", lambda h: h.write(csv)),
                atomic_write(folder / "reliability.png", lambda h: h.write(png))]


def reliability_study(gpus: Sequence[int], intervals: Sequence[float], faults: str | FailureModel,
                      replicas: int = 20, work: float = 2 * 86_400.0, checkpoint_cost: float = 60.0,
                      restart_cost: float = 300.0, spare_nodes: int = 8, spare_swap: float = 0.0,
                      gpus_per_node: int = 8, faults_offset: float = 0.0) -> ReliabilityStudy:
    """Run the study (module docstring).  ``faults``: what ``--faults`` takes, or a failure model."""
    replicas = int(number(replicas, "--replicas", low=2, high=MAX_REPLICAS, whole=True))
    work = number(work, "--work", above=0, high=10 * 365 * 86_400.0)
    for value, name in ((checkpoint_cost, "--checkpoint-cost"), (restart_cost, "--restart-cost"),
                        (spare_swap, "--spare-swap")):
        number(value, name, low=0, high=30 * 86_400.0)
    spare_nodes = int(number(spare_nodes, "--spare-nodes", low=0, high=1_000_000, whole=True))
    model = failure_model(faults, faults_offset) if isinstance(faults, (str, os.PathLike)) else faults
    rate = node_rate(model, gpus_per_node)
    exponential = isinstance(model, RateModel) and model.shape == 1.0 and spare_nodes > 0
    rows = []
    for size in gpus:
        nodes = size // gpus_per_node
        daly = daly_interval(checkpoint_cost, rate * nodes) if rate > 0 and checkpoint_cost > 0 else None
        for interval in (*intervals, *([daly] if daly else [])):
            config = SimConfig(checkpoint_interval=float(interval), checkpoint_cost=checkpoint_cost,
                               restart_cost=restart_cost, spare_nodes=spare_nodes, spare_swap=spare_swap,
                               gpus_per_node=gpus_per_node)
            ratios, interruptions = [], []
            for seed in range(replicas):
                job = Job(index=0, job_id="0", vc="job", gpu_num=size, submit_time=0, duration=work)
                resolved = resolve_run(config=_seeded(config, seed), cluster={"job": nodes}, faults=model)
                sim = Simulation([job], resolved)
                sim.run()
                ratios.append(work / (job.end_time - job.start_time))
                costs = sim.reliability.costs.get(job) if sim.reliability is not None else None
                interruptions.append(costs.interruptions if costs is not None else 0)
            values = np.asarray(ratios)
            half = 1.96 * values.std(ddof=1) / math.sqrt(replicas)
            closed = (ettr(interval, checkpoint_cost, rate * nodes, restart_cost + spare_swap, work=work, exposed=True)
                      if exponential else math.nan)
            rows.append({"gpus": size, "nodes": nodes, "interval_s": float(interval), "daly": interval is daly,
                         "replicas": replicas, "ettr_mean": float(values.mean()),
                         "ettr_low": float(values.mean() - half), "ettr_high": float(values.mean() + half),
                         "closed_form": closed, "interruptions_mean": float(np.mean(interruptions))})
    settings = {"work_s": work, "checkpoint_cost_s": checkpoint_cost, "restart_cost_s": restart_cost,
                "spare_nodes": spare_nodes, "spare_swap_s": spare_swap, "gpus_per_node": gpus_per_node,
                "node_rate_per_day": rate * 86_400.0, "faults": str(faults) if not hasattr(faults, "outages") else
                type(faults).__name__}
    return ReliabilityStudy(pd.DataFrame(rows), settings)


def _seeded(config: SimConfig, seed: int) -> SimConfig:
    from dataclasses import replace

    return replace(config, seed=seed)


def ettr_picture(table: pd.DataFrame, settings: dict[str, Any]) -> bytes:
    """ETTR against the checkpoint interval (log scale), one line per job size with its 95 % intervals as a band,
    Daly's interval marked with a star."""
    from simcluster.canvas import new_figure, png_bytes

    fig, ax = new_figure()
    for size, rows in table.groupby("gpus", sort=True):
        grid = rows[~rows["daly"]].sort_values("interval_s")
        minutes = grid["interval_s"] / 60
        line = ax.plot(minutes, grid["ettr_mean"], marker="o", label=f"{size:,} GPUs")[0]
        ax.fill_between(minutes, grid["ettr_low"], grid["ettr_high"], color=line.get_color(), alpha=0.2)
        if grid["closed_form"].notna().any():
            ax.plot(minutes, grid["closed_form"], linestyle=":", color=line.get_color())
        for _, daly in rows[rows["daly"]].iterrows():
            ax.plot([daly["interval_s"] / 60], [daly["ettr_mean"]], marker="*", markersize=14,
                    color=line.get_color(), markeredgecolor="black")
    ax.set_xscale("log")
    ax.set_xlabel("checkpoint interval (min, log scale)")
    ax.set_ylabel("ETTR (productive ÷ wall time)")
    ax.set_title(f"ETTR against checkpoint interval: mean and 95 % interval over replicas; ★ Daly's interval; dotted: "
                 f"closed form (δ {settings['checkpoint_cost_s']:g} s, R {settings['restart_cost_s']:g} s)",
                 fontsize="small")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="lower left", fontsize="small")
    return png_bytes(fig)
