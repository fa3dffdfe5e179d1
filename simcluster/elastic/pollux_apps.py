"""Pollux's measured applications (OSDI'21 artifact): how fast each kind of job trains, and how much a
larger batch is worth, from the files in ``pollux/apps/<app>/`` of the shared data.

*Throughput*: ``placements.csv`` gives the time of a synchronising step and the part of it spent
synchronising, per placement (GPUs on each node) and per-GPU batch; a placement it lacks is
interpolated linearly in (nodes, GPUs, per-GPU batch) between the per-(nodes, GPUs, batch) means of
that file and the rows of ``scalability.csv`` (allocations of 6 to 16 nodes), as the authors'
simulator does.  *Statistical efficiency*: each ``validation-<B>.csv`` is a run at total batch ``B``;
its gradient statistics give the gain of a step at batch ``B`` over a step at the smallest batch
``B0``, ``(var + sqr) / (var / (B / B0) + sqr)``, interpolated linearly between the measured ``B``.
Goodput, in *statistical progress* (steps at ``B0``) per second, is that gain over the time of one
step with its gradient-accumulation steps:

    goodput = gain(B, epoch) / (step_time + accum_steps × (step_time − sync_time))

Outside the measured ranges there is no data: a per-GPU batch off a placement's grid, a total batch
outside [smallest, largest] ``B`` or an epoch past the end raise :class:`OutOfMeasuredRange`, which
names the application, the quantity and the range (the authors' simulator stops with an assertion
there).  ``clamp=True`` on :meth:`PolluxApp.step_times` clamps the per-GPU batch to the grid instead,
for callers that say so.

>>> from simcluster.paths import shared_data_dir
>>> apps = load_pollux_apps(shared_data_dir() / "pollux" / "apps")   # doctest: +SKIP
>>> apps["cifar10"].step_times((2, 2), 128)                          # doctest: +SKIP
(0.0883..., 0.0349...)
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from scipy.interpolate import LinearNDInterpolator

from simcluster.elastic.tables import read_numbers
from simcluster.errors import TraceError

MAX_NODES_MEASURED = 16  # scalability.csv's largest allocation; more nodes are looked up as 16 (as upstream)
# what the authors' simulator sets beyond the files (applications.py): yolov3's per-GPU batch capped at 8
ARTIFACT_OVERRIDES: Mapping[str, Mapping[str, int]] = {"yolov3": {"max_local_bsz": 8}}


class OutOfMeasuredRange(ValueError):
    """A configuration the measurements do not cover (see the module's docstring)."""


Layout = tuple[int, ...]  # GPUs on each node the job uses, e.g. (4, 2)


def canonical_layout(layout: Sequence[int]) -> Layout:
    """Nodes without GPUs dropped, then the lexicographically smallest rotation: the form in which
    ``placements.csv`` writes a placement (node order matters only up to rotation).

    >>> canonical_layout((2, 1, 3)), canonical_layout((0, 4, 0, 1)), canonical_layout((1, 2, 1, 2))
    ((1, 3, 2), (1, 4), (1, 2, 1, 2))
    """
    used = tuple(int(g) for g in layout if g)
    if not used:
        raise ValueError("a layout needs at least one GPU")
    return min(used[i:] + used[:i] for i in range(len(used)))


@dataclass(frozen=True)
class Validation:
    """One training run at total batch ``batch`` (``validation-<batch>.csv``), one entry per epoch."""

    batch: int
    progress: np.ndarray
    iteration: np.ndarray
    metric: np.ndarray
    grad_sqr: np.ndarray
    grad_var: np.ndarray


@dataclass
class PolluxApp:
    """One application's measurements and the lookups the simulator and the policies make in them.

    ``init_batch_size`` (the smallest validated ``B``) is where a job starts and the unit of statistical
    progress; ``max_batch_size`` the largest validated ``B``; ``min_local_bsz``/``max_local_bsz`` the
    per-GPU batch range (the placements' grid unless overridden); ``max_epochs`` the epochs a job runs.
    """

    name: str
    placements: dict[Layout, tuple[np.ndarray, np.ndarray]]  # layout → (local_bsz grid, [step, sync] rows)
    means: np.ndarray  # rows (nodes, replicas, local_bsz, step, sync): placement means + scalability rows
    validation: dict[int, Validation]  # by batch, ascending
    init_batch_size: int
    max_batch_size: int
    min_local_bsz: int
    max_local_bsz: int
    max_epochs: int
    _interpolator: Any = field(default=None, init=False, repr=False)
    _steps: dict[tuple[Layout, float], tuple[float, float]] = field(default_factory=dict, init=False, repr=False)

    # --- throughput ------------------------------------------------------
    @functools.cached_property
    def max_gpus_per_node(self) -> int:
        """The most GPUs of one node any measured placement used (4: the authors' nodes)."""
        return max((max(layout) for layout in self.placements), default=1)

    def step_times(self, layout: Sequence[int], local_bsz: float, *, clamp: bool = False) -> tuple[float, float]:
        """(step_time, sync_time) in seconds of a synchronising step with ``local_bsz`` samples per GPU.

        A node holding more of the job's GPUs than any measured placement (more than 4) counts as several
        nodes of at most that many: its GPUs synchronise as if across nodes, a pessimistic choice where the
        measurements say nothing."""
        per_node = self.max_gpus_per_node
        if max(layout) > per_node:
            layout = tuple(part for g in layout for part in ((per_node,) * (g // per_node) + ((g % per_node,)
                                                                                            if g % per_node else ())))
        key = canonical_layout(layout)
        cached = None if clamp else self._steps.get((key, float(local_bsz)))
        if cached is not None:
            return cached
        bsz = float(local_bsz)
        if key in self.placements:
            grid, times = self.placements[key]
            if clamp:
                bsz = min(max(bsz, float(grid[0])), float(grid[-1]))
            if not grid[0] <= bsz <= grid[-1]:
                raise OutOfMeasuredRange(f"{self.name}: per-GPU batch {local_bsz:g} on placement "
                                         f"{''.join(map(str, key))} is outside the measured {grid[0]:g}..{grid[-1]:g}")
            result = (float(np.interp(bsz, grid, times[:, 0])), float(np.interp(bsz, grid, times[:, 1])))
        else:
            nodes = min(len(key), MAX_NODES_MEASURED)
            if clamp:
                bsz = min(max(bsz, float(self.means[:, 2].min())), float(self.means[:, 2].max()))
            step, sync = self._nd()([nodes, sum(key), bsz])[0]
            if not (math.isfinite(step) and math.isfinite(sync)):
                raise OutOfMeasuredRange(f"{self.name}: no measurements around {sum(key)} GPUs on {len(key)} nodes "
                                         f"at per-GPU batch {local_bsz:g} (placement {''.join(map(str, key))})")
            result = (float(step), float(sync))
        if not clamp:
            self._steps[(key, float(local_bsz))] = result
        return result

    def _nd(self) -> LinearNDInterpolator:
        if self._interpolator is None:
            self._interpolator = LinearNDInterpolator(self.means[:, :3], self.means[:, 3:])
        return self._interpolator

    def iteration_time(self, layout: Sequence[int], atomic_bsz: float, accum_steps: int) -> float:
        """Seconds of one optimiser step: ``accum_steps`` local steps, then one synchronising step."""
        step, sync = self.step_times(layout, atomic_bsz)
        return step + accum_steps * (step - sync)

    # --- statistical efficiency -------------------------------------------
    def _bracket(self, batch_size: float) -> tuple[int, int]:
        sizes = list(self.validation)
        if not sizes[0] <= batch_size <= sizes[-1]:
            raise OutOfMeasuredRange(f"{self.name}: total batch {batch_size:g} is outside the validated "
                                     f"{sizes[0]}..{sizes[-1]}")
        lower = max(b for b in sizes if b <= batch_size)
        upper = min(b for b in sizes if b >= batch_size)
        return lower, upper

    def _between(self, batch_size: float, values: dict[int, float]) -> float:
        lower, upper = self._bracket(batch_size)
        if lower == upper:
            return values[lower]
        return ((batch_size - lower) * values[upper] + (upper - batch_size) * values[lower]) / (upper - lower)

    def _check_epoch(self, epoch: int) -> None:
        if not 0 <= epoch < self.max_epochs:
            raise OutOfMeasuredRange(f"{self.name}: epoch {epoch} is outside 0..{self.max_epochs - 1}")

    def grad_stats(self, batch_size: float, epoch: int) -> tuple[float, float]:
        """(grad_sqr, grad_var) during ``epoch`` at total batch ``batch_size``."""
        self._check_epoch(epoch)
        sqr = self._between(batch_size, {b: float(v.grad_sqr[epoch]) for b, v in self.validation.items()})
        var = self._between(batch_size, {b: float(v.grad_var[epoch]) for b, v in self.validation.items()})
        return sqr, var

    def gain(self, batch_size: float, epoch: int) -> float:
        """Statistical progress of one step at ``batch_size``, in steps at ``init_batch_size``."""
        sqr, var = self.grad_stats(batch_size, epoch)
        return statistical_gain(sqr, var, batch_size / self.init_batch_size)

    def iterations(self, batch_size: float, epoch: int) -> float:
        """Optimiser steps a run at ``batch_size`` has taken by the end of ``epoch`` (interpolated)."""
        self._check_epoch(epoch)
        return self._between(batch_size, {b: float(v.iteration[epoch]) for b, v in self.validation.items()})

    def epoch_progress(self, epoch: int) -> float:
        """Statistical progress at which ``epoch`` epochs are done (0 for none): the least of the runs'."""
        if epoch == 0:
            return 0.0
        self._check_epoch(epoch - 1)
        return min(float(v.progress[epoch - 1]) for v in self.validation.values())

    def epoch_at(self, progress: float) -> int:
        """The epoch a job is in at ``progress`` (the most epochs any run had finished by then)."""
        return max(int(np.searchsorted(v.progress, progress, side="right")) for v in self.validation.values())

    @property
    def total_progress(self) -> float:
        """Statistical progress that completes a job (all ``max_epochs`` epochs)."""
        return self.epoch_progress(self.max_epochs)

    # --- goodput -------------------------------------------------------------
    def goodput(self, layout: Sequence[int], atomic_bsz: int, accum_steps: int, epoch: int) -> float:
        """Statistical progress per second (see the module's docstring)."""
        replicas = sum(layout)
        batch = replicas * atomic_bsz * (accum_steps + 1)
        return self.gain(batch, epoch) / self.iteration_time(layout, atomic_bsz, accum_steps)

    def run_time(self, layout: Sequence[int], atomic_bsz: int, accum_steps: int, from_progress: float = 0.0) -> float:
        """Seconds to finish from ``from_progress`` on ``layout`` at a fixed (atomic_bsz, accum_steps): each
        epoch's progress over that epoch's goodput (the gain changes at every epoch boundary)."""
        seconds = 0.0
        for epoch in range(self.epoch_at(from_progress), self.max_epochs):
            start = max(self.epoch_progress(epoch), from_progress)
            seconds += (self.epoch_progress(epoch + 1) - start) / self.goodput(layout, atomic_bsz, accum_steps, epoch)
        return seconds

    def fixed_batch(self, batch_size: int, num_replicas: int) -> tuple[int, int]:
        """(atomic_bsz, accum_steps) of a job that keeps total batch ``batch_size`` on ``num_replicas``
        GPUs, as the authors' simulator splits it: the per-GPU share, cut into accumulation steps where
        it passes ``max_local_bsz``; a single GPU above the starting batch accumulates at least once
        (AdaScale needs two micro-batches to measure its gradient statistics); never more than
        ``max_batch_size`` in all.

        >>> app = PolluxApp("x", {}, np.zeros((0, 5)), {}, 128, 4096, 32, 1024, 100)
        >>> app.fixed_batch(2048, 1), app.fixed_batch(2048, 4), app.fixed_batch(128, 1)
        ((1024, 1), (512, 0), (128, 0))
        """
        local = math.ceil(batch_size / num_replicas - 1e-8)
        accum = math.ceil(local / self.max_local_bsz - 1e-8) - 1
        if num_replicas == 1 and batch_size > self.init_batch_size:
            accum = max(1, accum)
        atomic = math.ceil(local / (accum + 1) - 1e-8)
        atomic = min(atomic, int(self.max_batch_size / (num_replicas * (accum + 1))))
        return atomic, accum


def statistical_gain(grad_sqr: float, grad_var: float, scale: float) -> float:
    """Progress of a step at ``scale`` × the starting batch, in steps at the starting batch (AdaScale's gain):
    ``(var + sqr) / (var / scale + sqr)``; 1 at scale 1, at most ``scale``.

    >>> statistical_gain(1.0, 3.0, 1.0), statistical_gain(1.0, 3.0, 3.0), statistical_gain(0.0, 2.0, 8.0)
    (1.0, 2.0, 8.0)
    """
    denominator = grad_var / scale + grad_sqr
    return (grad_var + grad_sqr) / denominator if denominator > 0 else 1.0


def load_pollux_app(folder: str | Path, **overrides: int) -> PolluxApp:
    """One application folder (``placements.csv``, ``scalability.csv``, ``validation-<B>.csv``);
    ``overrides`` set ``max_epochs``, ``max_local_bsz`` and the like where the files' own ranges are not
    what a study uses."""
    folder = Path(folder)
    if not folder.is_dir():
        raise TraceError(folder, "no such application folder (expected placements.csv, scalability.csv, validation-*.csv)")
    name = folder.name
    raw = read_numbers(folder / "placements.csv", "placements file", ["placement", "local_bsz", "step_time", "sync_time"])
    placements: dict[Layout, tuple[np.ndarray, np.ndarray]] = {}
    rows = []
    for pid, group in raw.groupby("placement", sort=False):
        layout = tuple(int(c) for c in str(int(pid)))
        group = group.sort_values("local_bsz")
        placements[layout] = (group["local_bsz"].to_numpy(), group[["step_time", "sync_time"]].to_numpy())
        rows.append(np.column_stack([np.full(len(group), len(layout)), np.full(len(group), sum(layout)),
                                     group[["local_bsz", "step_time", "sync_time"]].to_numpy()]))
    table = np.vstack(rows)
    # per-(nodes, replicas, local_bsz) means of the placements, then the scalability rows (as upstream)
    keys, inverse = np.unique(table[:, :3], axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    sums = np.zeros((len(keys), 2))
    np.add.at(sums, inverse, table[:, 3:])
    means = np.column_stack([keys, sums / np.bincount(inverse)[:, None]])
    scal = read_numbers(folder / "scalability.csv", "scalability file",
                        ["num_nodes", "num_replicas", "local_bsz", "step_time", "sync_time"]).to_numpy()
    means = np.vstack([means, scal])
    validation: dict[int, Validation] = {}
    for path in sorted(folder.glob("validation-*.csv")):
        try:
            batch = int(path.stem.split("-")[-1])
        except ValueError as exc:
            raise TraceError(path, "expected validation-<batch size>.csv") from exc
        v = read_numbers(path, "validation file", ["progress", "iteration", "metric", "grad_sqr", "grad_var"])
        validation[batch] = Validation(batch, *(v[c].to_numpy() for c in v.columns))
    if not validation:
        raise TraceError(folder, "no validation-<batch size>.csv files")
    validation = dict(sorted(validation.items()))
    settings = {
        "init_batch_size": min(validation), "max_batch_size": max(validation),
        "min_local_bsz": int(raw["local_bsz"].min()), "max_local_bsz": int(raw["local_bsz"].max()),
        "max_epochs": min(len(v.progress) for v in validation.values()),
    }
    unknown = set(overrides) - set(settings)
    if unknown:
        raise ValueError(f"unknown application setting(s) {sorted(unknown)}; known: {sorted(settings)}")
    settings.update(overrides)
    if settings["max_epochs"] > min(len(v.progress) for v in validation.values()):
        raise OutOfMeasuredRange(f"{name}: max_epochs {settings['max_epochs']} is beyond the validation runs' "
                                 f"{min(len(v.progress) for v in validation.values())} epochs")
    return PolluxApp(name, placements, means, validation, **settings)


def load_pollux_apps(folder: str | Path, overrides: Mapping[str, Mapping[str, int]] = ARTIFACT_OVERRIDES
                     ) -> dict[str, PolluxApp]:
    """Every application under ``folder`` (``pollux/apps`` of the shared data), by name."""
    folder = Path(folder)
    if not folder.is_dir():
        raise TraceError(folder, "no such folder of Pollux applications")
    apps = {p.name: load_pollux_app(p, **overrides.get(p.name, {}))
            for p in sorted(folder.iterdir()) if (p / "placements.csv").is_file()}
    if not apps:
        raise TraceError(folder, "no application folders (each holds placements.csv) in it")
    return apps
