"""What a sweep will run: job configurations, pairs of them, and a time estimate."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # (only named: importing the runner imports torch)
    from profiler.runner import RunSettings

SingleKey = tuple[str, str, int, int, int]
PairKey = tuple[str, str, int, int, int, str, str, int, int, int]

STARTUP_ESTIMATE_S = {"cpu": 6.0, "cuda": 20.0}
"""Typical seconds to start the workers, build the model and warm up (for estimates only)."""


@dataclass(frozen=True, slots=True)
class JobConfig:
    """One row key of the single-job table: a workload in one configuration."""

    model: str
    dataset: str
    batchsize: int
    amp: bool
    gpu_num: int

    @property
    def key(self) -> SingleKey:
        return (self.model, self.dataset, self.batchsize, int(self.amp), self.gpu_num)

    @property
    def label(self) -> str:
        gpus = f" x{self.gpu_num}" if self.gpu_num > 1 else ""
        return f"{self.model} bs{self.batchsize}{' amp' if self.amp else ''}{gpus}"

    @classmethod
    def from_key(cls, key: Sequence[object]) -> JobConfig:
        model, dataset, batchsize, amp, gpu_num = key
        return cls(str(model), str(dataset), int(batchsize), bool(int(amp)), int(gpu_num))  # type: ignore[call-overload]


@dataclass(frozen=True, slots=True)
class PairConfig:
    """One row key of the pair table: two job configurations sharing the same GPU(s)."""

    first: JobConfig
    second: JobConfig

    @property
    def key(self) -> PairKey:
        return self.first.key + self.second.key

    @property
    def unordered_key(self) -> frozenset[SingleKey]:
        """Equal for (A, B) and (B, A): a pair measured either way round is done."""
        return frozenset((self.first.key, self.second.key))

    @property
    def label(self) -> str:
        return f"{self.first.label} + {self.second.label}"


def single_plan(
    workloads: Iterable[tuple[str, str]],
    batch_sizes: Sequence[int],
    amps: Sequence[bool],
    gpu_nums: Sequence[int],
) -> list[JobConfig]:
    """Every (workload, batch size, AMP, GPU count), workload-major, in the order given."""
    return [
        JobConfig(model, dataset, batchsize, amp, gpu_num)
        for (model, dataset) in workloads
        for gpu_num in gpu_nums
        for batchsize in batch_sizes
        for amp in amps
    ]


def pair_plan(configs: Sequence[JobConfig], include_self: bool = True) -> list[PairConfig]:
    """Unordered pairs of configurations with the same GPU count (they share the same GPUs).

    ``include_self`` adds each configuration paired with a copy of itself, as
    Lucid's table has.
    """
    combine = itertools.combinations_with_replacement if include_self else itertools.combinations
    return [PairConfig(a, b) for a, b in combine(configs, 2) if a.gpu_num == b.gpu_num]


@dataclass(frozen=True, slots=True)
class TimeEstimate:
    expected_s: float
    """Start-up plus the shortest steady measurement, for each run."""
    at_most_s: float
    """Start-up plus the full time limit, for each run."""

    def __add__(self, other: TimeEstimate) -> TimeEstimate:
        return TimeEstimate(self.expected_s + other.expected_s, self.at_most_s + other.at_most_s)


def estimate_run(settings: RunSettings) -> TimeEstimate:
    """Wall time of one run (a job alone or a pair) under ``settings``."""
    startup = STARTUP_ESTIMATE_S[settings.device]
    measure = settings.measure
    shortest = measure.cv_windows * measure.window_s
    return TimeEstimate(startup + shortest, startup + measure.time_limit_s)


def format_duration(seconds: float) -> str:
    seconds = round(seconds)
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m"
    if minutes:
        return f"{minutes}m{secs:02d}s"
    return f"{secs}s"
