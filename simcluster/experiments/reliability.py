"""A reliability study: the ETTR of one job of each size against its checkpoint interval, under a fault model.

For each job size N (GPUs) and each interval τ, ``replicas`` runs of one N-GPU job (on N / GPUs-per-node nodes,
with ``spare_nodes`` spares) of ``work`` seconds, seeded 0 … replicas−1; its ETTR is work ÷ (end − start).
A replayed fault log starts each replica at its own offset into the log (``faults_offset="random"``, the default
for a log: :func:`~simcluster.faults.replay.random_offset` of the seed), so that the replicas sample the whole log
rather than its first weeks.  Per (N, τ), three intervals, each named for what it is:

- ``ettr_low``–``ettr_high``: the **95 % confidence interval of the mean** ETTR, mean ± t₀.₉₇₅,ₙ₋₁ · sd / √n
  (Student's t quantile), clipped to [0, 1];
- ``ettr_runs_low``–``ettr_runs_high``: the **middle 95 % of the runs** (their 2.5th and 97.5th percentiles):
  the spread across seeds and offsets, what one training run may see (what ``sweep`` and ``report`` call the
  95 % interval over replicas);
- ``ettr_rate_low``–``ettr_rate_high``, where the model's rate was counted from a log (a replayed log, a
  ``fitted.json``): the mean's interval widened by the **rate's own uncertainty** (:func:`rate_widened`): the
  exact Poisson (Garwood) interval of the rate from k faults in T server-seconds up, propagated to ETTR to first
  order, the loss to faults being proportional to the rate.

Where the model is exponential (a rate model of shape 1) and every fault costs the same (spares, so no wait for
a repair), the closed form (:func:`simcluster.faults.ettr` with the restart exposed).  Each size is also run at
Daly's interval for its rate (λ × its nodes) and its checkpoint cost: the Young/Daly optimum, marked in the table
(``daly``) and the picture.

``lucid-sim reliability`` and :func:`reliability_study` run it, with the same bounds (:func:`check_sizes`,
:func:`check_intervals`); :meth:`ReliabilityStudy.write` writes ``reliability.csv`` and ``reliability.png``.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from simcluster.config import SimConfig
from simcluster.engine import Simulation
from simcluster.faults import LogReplay, RateModel, daly_interval, ettr
from simcluster.faults.fit import poisson_interval
from simcluster.faults.models import FailureModel
from simcluster.faults.replay import random_offset
from simcluster.faults.spec import (
    RANDOM,
    LogReading,
    Offset,
    check_offset,
    failure_model,
    node_rate,
    offset_of,
    rate_evidence,
    seconds,
)
from simcluster.job import Job
from simcluster.limits import LimitError, number, shown
from simcluster.run import resolve_run
from simcluster.settings.reliability import MAX_COST_S

MAX_POINTS = 200
MAX_SIZES = 200  # job sizes in one study, as --points stops at 200 intervals
# each of a job's nodes is simulated (about 6 kB a node in a run): 131,072 nodes stay near a gigabyte, and at 8
# GPUs a node above a million GPUs, beyond the largest cluster built
MAX_JOB_NODES = 131_072
MAX_REPLICAS = 10_000
MAX_WORK_S = 10 * 365 * 86_400.0
CONFIDENCE = 0.95


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


def check_intervals(intervals: Sequence[float], given: str | None = None) -> tuple[float, ...]:
    """Checkpoint intervals as a study takes them: 1 to :data:`MAX_POINTS` of them, each above 0 and at most
    30 days, the cap ``lucid-sim run`` puts on it (:data:`~simcluster.settings.reliability.MAX_COST_S`; beyond
    it the closed form overflows); :class:`LimitError` naming ``--checkpoint-interval`` (and the text as
    ``given``) otherwise.

    >>> check_intervals([1800, 3600.0])
    (1800.0, 3600.0)
    >>> check_intervals([864e6])
    Traceback (most recent call last):
    ...
    simcluster.limits.LimitError: --checkpoint-interval: an interval must be at most 30 days (2,592,000 s), as `lucid-sim run` takes it; got 864,000,000 s
    """
    named = f"--checkpoint-interval {shown(given)}" if given is not None else "--checkpoint-interval"
    if isinstance(intervals, (str, bytes)) or not 1 <= len(intervals) <= MAX_POINTS:
        count = len(intervals) if not isinstance(intervals, (str, bytes)) else 0
        raise LimitError(f"{named}: give 1 to {MAX_POINTS} intervals in seconds, got {count:,}")
    values = tuple(number(v, "--checkpoint-interval", above=0) for v in intervals)
    longest = max(values)
    if longest > MAX_COST_S:
        raise LimitError(f"{named}: an interval must be at most {MAX_COST_S / 86_400:g} days ({MAX_COST_S:,.0f} s), "
                         f"as `lucid-sim run` takes it; got {f'{longest:,.0f}' if longest < 1e15 else f'{longest:g}'} s")
    return values


def parse_sizes(text: str, gpus_per_node: int) -> tuple[int, ...]:
    """``8,64,512``: GPU counts, each a positive multiple of the GPUs per node, at most :data:`MAX_SIZES` of
    them (counted before they are read)."""
    parts = [part for part in text.split(",") if part.strip()]
    if len(parts) > MAX_SIZES:
        raise LimitError(f"--gpus: at most {MAX_SIZES} job sizes in one study (as --points stops at 200), "
                         f"got {len(parts):,}")
    sizes = tuple(int(number(part, "--gpus", low=1, high=10_000_000, whole=True)) for part in parts)
    if not sizes:
        raise LimitError("--gpus: give job sizes in GPUs, e.g. 8,64,512,4096,16384")
    return check_sizes(sizes, gpus_per_node)


def check_sizes(gpus: Sequence[int], gpus_per_node: int) -> tuple[int, ...]:
    """Job sizes as a study takes them: 1 to :data:`MAX_SIZES` sizes, each a whole number of nodes and at most
    :data:`MAX_JOB_NODES` of them, so that a study's time and memory stay bounded; :class:`LimitError` naming
    ``--gpus`` otherwise.

    >>> check_sizes([8, 64], 8)
    (8, 64)
    >>> check_sizes([10_000_000], 8)
    Traceback (most recent call last):
    ...
    simcluster.limits.LimitError: --gpus 10,000,000: a job of at most 131,072 nodes (1,048,576 GPUs at --gpus-per-node 8) is simulated node by node, got 1,250,000 nodes
    """
    per_node = int(number(gpus_per_node, "--gpus-per-node", low=1, high=1024, whole=True))
    if isinstance(gpus, (str, bytes)) or not 1 <= len(gpus) <= MAX_SIZES:
        count = len(gpus) if not isinstance(gpus, (str, bytes)) else 0
        raise LimitError(f"--gpus: at most {MAX_SIZES} job sizes in one study (as --points stops at 200), and at "
                         f"least one, got {count:,}")
    sizes = []
    for given in gpus:
        size = int(number(given, "--gpus", low=1, whole=True))
        if size % per_node:
            raise LimitError(f"--gpus {size}: a job of whole nodes, a multiple of --gpus-per-node {per_node}")
        if size // per_node > MAX_JOB_NODES:
            raise LimitError(f"--gpus {size:,}: a job of at most {MAX_JOB_NODES:,} nodes ({MAX_JOB_NODES * per_node:,} "
                             f"GPUs at --gpus-per-node {per_node}) is simulated node by node, got "
                             f"{size // per_node:,} nodes")
        sizes.append(size)
    return tuple(sizes)


def mean_interval(values: Sequence[float], confidence: float = CONFIDENCE) -> tuple[float, float]:
    """The confidence interval of the mean of ``values`` (ratios): mean ± t · sd / √n with Student's t
    quantile for n − 1 degrees of freedom, clipped to [0, 1] and never on the wrong side of the mean.

    >>> [round(v, 3) for v in mean_interval([0.90, 0.92])]   # t₀.₉₇₅,₁ = 12.7: two runs say little
    [0.783, 1.0]
    >>> mean_interval([0.5, 0.5, 0.5])
    (0.5, 0.5)
    """
    from scipy.stats import t

    data = np.asarray(values, dtype=float)
    mean = float(data.mean())
    if len(data) < 2:
        return mean, mean
    half = float(t.ppf(0.5 + confidence / 2, len(data) - 1) * data.std(ddof=1) / math.sqrt(len(data)))
    return max(0.0, min(mean, mean - half)), min(1.0, max(mean, mean + half))


def runs_spread(values: Sequence[float], confidence: float = CONFIDENCE) -> tuple[float, float]:
    """The middle ``confidence`` of the runs' values: their 2.5th and 97.5th percentiles (at 95 %).

    >>> [round(v, 3) for v in runs_spread([0.1 * i for i in range(11)])]
    [0.025, 0.975]
    """
    tail = (1 - confidence) / 2
    low, high = np.quantile(np.asarray(values, dtype=float), [tail, 1 - tail])
    return float(low), float(high)


def rate_ratios(faults: int, exposure_s: float, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """The exact Poisson (Garwood) interval of a rate counted as ``faults`` in ``exposure_s``, as multiples of
    the rate counted (k / T); (nan, nan) with no fault, whose rate of 0 no multiple widens.

    >>> [round(r, 2) for r in rate_ratios(6, 1e6)]   # six faults: the rate is known to a factor of about 2.6
    [0.37, 2.18]
    """
    if faults <= 0 or exposure_s <= 0:
        return math.nan, math.nan
    low, high = poisson_interval(faults, exposure_s, confidence)
    return low * exposure_s / faults, high * exposure_s / faults


def fault_free_ettr(work: float, interval: float, checkpoint_cost: float) -> float:
    """The ETTR of a job that no fault strikes: its work over its work and its checkpoints (one every
    ``interval`` of progress but after the last stretch).

    >>> round(fault_free_ettr(86_400.0, 3600.0, 60.0), 4)
    0.9843
    """
    checkpoints = max(0, math.ceil(work / interval) - 1)
    return work / (work + checkpoints * checkpoint_cost)


def rate_widened(low: float, high: float, fault_free: float, ratio_low: float, ratio_high: float) -> tuple[float, float]:
    """The ETTR interval ``low``–``high`` widened by a rate known to within ``ratio_low``–``ratio_high`` of the
    rate simulated.  To first order each fault costs the same wall time, so the share of the fault-free ETTR
    E₀ lost to faults, 1 − ETTR / E₀, is proportional to the rate: at r times the rate it is r times as large.
    The low end scales the low end's loss by the high ratio, the high end the high end's by the low ratio;
    clipped to [0, E₀].

    >>> [round(v, 3) for v in rate_widened(0.90, 0.92, 0.98, 0.5, 2.0)]
    [0.82, 0.95]
    """
    if not (math.isfinite(ratio_low) and math.isfinite(ratio_high)):
        return math.nan, math.nan

    def scaled(ettr_value: float, ratio: float) -> float:
        loss = max(0.0, 1.0 - ettr_value / fault_free)
        return min(fault_free, max(0.0, fault_free * (1.0 - ratio * loss)))

    return min(low, scaled(low, ratio_high)), max(high, min(1.0, scaled(high, ratio_low)))


@dataclass(frozen=True)
class ReliabilityStudy:
    """The study's table (one row per size and interval: ``gpus, nodes, interval_s, daly, replicas, ettr_mean,
    ettr_low, ettr_high`` (the mean's 95 % confidence interval), ``ettr_sd, ettr_runs_low, ettr_runs_high`` (the
    middle 95 % of the runs), ``ettr_rate_low, ettr_rate_high`` (with the rate's uncertainty; NaN for a rate
    given by hand), ``closed_form, interruptions_mean, offsets_days`` (each replica's offset into a replayed
    log, in seed order)), each run's ``runs`` (``gpus, interval_s, daly, seed, offset_s, ettr, interruptions``)
    and what it was run with."""

    table: pd.DataFrame
    settings: dict[str, Any]
    runs: pd.DataFrame = field(default_factory=pd.DataFrame)

    def write(self, out: str | os.PathLike[str]) -> list[Path]:
        """``reliability.csv`` and ``reliability.png`` into folder ``out`` (made if needed)."""
        from simcluster.atomic import atomic_write

        folder = Path(out)
        folder.mkdir(parents=True, exist_ok=True)
        csv = self.table.to_csv(index=False).encode()
        png = ettr_picture(self.table, self.settings)
        return [atomic_write(folder / "reliability.csv", lambda h: h.write(csv)),
                atomic_write(folder / "reliability.png", lambda h: h.write(png))]


def replica_offsets(model: FailureModel, faults_offset: Offset | None, replicas: int) -> list[float] | None:
    """Each replica's offset into a replayed log (seed ``i`` the ``i``-th): drawn from the seed for ``random``
    (the default, ``None``, for a log), else the one offset given; None for a model that is not a log (an
    offset given for one is refused, as ``run`` refuses it)."""
    offset = RANDOM if faults_offset is None and isinstance(model, LogReplay) else offset_of(faults_offset or 0.0)
    if not isinstance(model, LogReplay):
        if offset:
            raise LimitError(f"--faults-offset applies to a replayed fault log, not to {type(model).__name__}")
        return None
    span = model.log.span_s
    if offset == RANDOM:
        return [random_offset(span, seed) for seed in range(replicas)]
    return [check_offset(float(offset), span, faults_offset)] * replicas


def reliability_study(gpus: Sequence[int], intervals: Sequence[float], faults: str | FailureModel,
                      replicas: int = 20, work: float = 2 * 86_400.0, checkpoint_cost: float = 60.0,
                      restart_cost: float = 300.0, spare_nodes: int = 8, spare_swap: float = 0.0,
                      gpus_per_node: int = 8, faults_offset: Offset | None = None,
                      reading: LogReading | None = None) -> ReliabilityStudy:
    """Run the study (module docstring).  ``faults``: what ``--faults`` takes, or a failure model;
    ``faults_offset``: ``"random"`` (the default for a log), or seconds into it for every replica; ``reading``:
    how a log is read (its fleet, open faults, columns).  Refuses in words, naming the option, what
    ``lucid-sim reliability`` refuses (sizes, intervals, costs, replicas)."""
    sizes = check_sizes(gpus, gpus_per_node)
    intervals = check_intervals(intervals)
    replicas = int(number(replicas, "--replicas", low=2, high=MAX_REPLICAS, whole=True))
    work = number(work, "--work", above=0, high=MAX_WORK_S)
    for value, name in ((checkpoint_cost, "--checkpoint-cost"), (restart_cost, "--restart-cost"),
                        (spare_swap, "--spare-swap")):
        number(value, name, low=0, high=MAX_COST_S)
    spare_nodes = int(number(spare_nodes, "--spare-nodes", low=0, high=1_000_000, whole=True))
    model = failure_model(faults, reading=reading) if isinstance(faults, (str, os.PathLike)) else faults
    offsets = replica_offsets(model, faults_offset, replicas)
    evidence = rate_evidence(faults if isinstance(faults, (str, os.PathLike)) else model, reading)
    ratios = rate_ratios(*evidence) if evidence is not None else (math.nan, math.nan)
    rate = node_rate(model, gpus_per_node)
    exponential = isinstance(model, RateModel) and model.shape == 1.0 and spare_nodes > 0
    costs = {"checkpoint_cost": checkpoint_cost, "restart_cost": restart_cost, "spare_nodes": spare_nodes,
             "spare_swap": spare_swap, "gpus_per_node": gpus_per_node}
    rows, runs = [], []
    for size in sizes:
        nodes = size // gpus_per_node
        daly = daly_interval(checkpoint_cost, rate * nodes) if rate > 0 and checkpoint_cost > 0 else None
        for interval in (*intervals, *([daly] if daly else [])):
            config = SimConfig(checkpoint_interval=float(interval), checkpoint_cost=checkpoint_cost,
                               restart_cost=restart_cost, spare_nodes=spare_nodes, spare_swap=spare_swap,
                               gpus_per_node=gpus_per_node)
            found = [_one_run(config, model, offsets, seed, size, nodes, work) for seed in range(replicas)]
            runs.extend({"gpus": size, "interval_s": float(interval), "daly": interval is daly, "seed": seed,
                         "offset_s": offset, "ettr": value, "interruptions": count}
                        for seed, (value, count, offset) in enumerate(found))
            rows.append(_row(size, nodes, float(interval), interval is daly, found, ratios, rate, work, costs,
                             exponential))
    settings = {"work_s": work, "checkpoint_cost_s": checkpoint_cost, "restart_cost_s": restart_cost,
                "spare_nodes": spare_nodes, "spare_swap_s": spare_swap, "gpus_per_node": gpus_per_node,
                "node_rate_per_day": rate * 86_400.0, "faults": str(faults) if not hasattr(faults, "outages") else
                type(faults).__name__, **_offset_settings(faults_offset, offsets), **_rate_settings(evidence, ratios, rate)}
    return ReliabilityStudy(pd.DataFrame(rows), settings, pd.DataFrame(runs))


def _one_run(config: SimConfig, model: FailureModel, offsets: list[float] | None, seed: int, size: int, nodes: int,
             work: float) -> tuple[float, int, float | None]:
    """One replica: its ETTR, interruptions and offset into the log (None: not a log)."""
    offset = offsets[seed] if offsets is not None else None
    seeded = model.at(offset) if offset is not None and isinstance(model, LogReplay) else model
    job = Job(index=0, job_id="0", vc="job", gpu_num=size, submit_time=0, duration=work)
    sim = Simulation([job], resolve_run(config=replace(config, seed=seed), cluster={"job": nodes}, faults=seeded))
    sim.run()
    costs = sim.reliability.costs.get(job) if sim.reliability is not None else None
    return work / (job.end_time - job.start_time), costs.interruptions if costs is not None else 0, offset


def _row(size: int, nodes: int, interval: float, daly: bool, found: list[tuple[float, int, float | None]],
         ratios: tuple[float, float], rate: float, work: float, costs: dict[str, Any], exponential: bool
         ) -> dict[str, Any]:
    """One (size, interval)'s row of the table from its replicas (the class docstring names the columns)."""
    values = [value for value, _, _ in found]
    low, high = mean_interval(values)
    runs_low, runs_high = runs_spread(values)
    rate_low, rate_high = rate_widened(low, high, fault_free_ettr(work, interval, costs["checkpoint_cost"]), *ratios)
    closed = (ettr(interval, costs["checkpoint_cost"], rate * nodes, costs["restart_cost"] + costs["spare_swap"],
                   work=work, exposed=True) if exponential else math.nan)
    offsets = [offset for _, _, offset in found if offset is not None]
    return {"gpus": size, "nodes": nodes, "interval_s": interval, "daly": daly, "replicas": len(values),
            "ettr_mean": float(np.mean(values)), "ettr_low": low, "ettr_high": high,
            "ettr_sd": float(np.std(values, ddof=1)), "ettr_runs_low": runs_low, "ettr_runs_high": runs_high,
            "ettr_rate_low": rate_low, "ettr_rate_high": rate_high, "closed_form": closed,
            "interruptions_mean": float(np.mean([count for _, count, _ in found])),
            "offsets_days": ";".join(f"{o / 86_400:.2f}" for o in offsets)}


def _offset_settings(given: Offset | None, offsets: list[float] | None) -> dict[str, Any]:
    """The offsets into a replayed log, for the study's settings (None where the model is not a log)."""
    if offsets is None:
        return {"faults_offset": None, "offsets_days": None}
    mode = RANDOM if given is None else offset_of(given)
    return {"faults_offset": mode, "offsets_days": [round(o / 86_400, 4) for o in offsets]}


def _rate_settings(evidence: tuple[int, float] | None, ratios: tuple[float, float], rate: float) -> dict[str, Any]:
    """What the rate was counted from and its 95 % interval per node-day (None for a rate given by hand)."""
    if evidence is None:
        return {"rate_faults": None, "rate_exposure_server_days": None, "node_rate_interval_per_day": None}
    interval = None if math.isnan(ratios[0]) else [rate * 86_400.0 * r for r in ratios]
    return {"rate_faults": evidence[0], "rate_exposure_server_days": evidence[1] / 86_400.0,
            "node_rate_interval_per_day": interval}


def ettr_picture(table: pd.DataFrame, settings: dict[str, Any]) -> bytes:
    """ETTR against the checkpoint interval (log scale), one line per job size: the mean's 95 % confidence
    interval as a band, the middle 95 % of the runs as a fainter one, Daly's interval marked with a star."""
    from simcluster.canvas import new_figure, png_bytes

    fig, ax = new_figure()
    for size, rows in table.groupby("gpus", sort=True):
        grid = rows[~rows["daly"]].sort_values("interval_s")
        minutes = grid["interval_s"] / 60
        line = ax.plot(minutes, grid["ettr_mean"], marker="o", label=f"{size:,} GPUs")[0]
        ax.fill_between(minutes, grid["ettr_low"], grid["ettr_high"], color=line.get_color(), alpha=0.3)
        ax.fill_between(minutes, grid["ettr_runs_low"], grid["ettr_runs_high"], color=line.get_color(), alpha=0.08)
        if grid["closed_form"].notna().any():
            ax.plot(minutes, grid["closed_form"], linestyle=":", color=line.get_color())
        for _, daly in rows[rows["daly"]].iterrows():
            ax.plot([daly["interval_s"] / 60], [daly["ettr_mean"]], marker="*", markersize=14,
                    color=line.get_color(), markeredgecolor="black")
    ax.set_xscale("log")
    ax.set_xlabel("checkpoint interval (min, log scale)")
    ax.set_ylabel("ETTR (productive ÷ wall time)")
    ax.set_title(f"ETTR against checkpoint interval: mean, its 95 % confidence interval (t) and, fainter, the middle "
                 f"95 % of the runs; ★ Daly's interval; dotted: closed form (δ {settings['checkpoint_cost_s']:g} s, "
                 f"R {settings['restart_cost_s']:g} s)", fontsize="small", wrap=True)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="lower left", fontsize="small")
    return png_bytes(fig)
