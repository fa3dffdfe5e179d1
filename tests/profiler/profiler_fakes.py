"""Stand-ins for the profiler tests: a clock, NVML, quick run settings, and test workloads.

A plain module rather than conftest.py fixtures: tests/conftest.py is imported by
its neighbours as ``conftest``, and a second conftest.py here would take that name.
The workloads are module-level builders so that worker processes can import them;
they train a real (small) model or fail the way real jobs fail -- none fakes a
throughput.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from dataclasses import dataclass, field
from types import SimpleNamespace

import torch
from torch import nn

from profiler.measure import MeasureSettings
from profiler.runner import RunSettings
from workloads import ModuleWrapper, TrainingStep, WorkloadConfig, WorkloadSpec, get_workload


class FakeClock:
    """A clock that moves only when told to: the test decides how long each step takes."""

    def __init__(self, start: float = 1000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def quick_settings() -> RunSettings:
    """Real CPU runs cut short: a couple of seconds of measurement each."""
    return RunSettings(
        device="cpu",
        size="tiny",
        measure=MeasureSettings(warmup_steps=2, window_s=0.25, cv_windows=3, cv_target=0.5, time_limit_s=2.0),
        startup_timeout_s=120.0,
        cpu_threads=1,
    )


@dataclass
class FakeNvmlModule:
    """Stands in for ``pynvml``: each GPU plays back its scripted readings, one per sample."""

    readings: dict[int, list[tuple[float, float, float]]]  # index -> [(gpu %, memory %, used MiB)]
    init_error: Exception | None = None
    calls: dict[int, int] = field(default_factory=dict)

    def nvmlInit(self) -> None:
        if self.init_error is not None:
            raise self.init_error

    def nvmlShutdown(self) -> None:
        pass

    def nvmlDeviceGetHandleByIndex(self, index: int) -> int:
        return index

    def nvmlDeviceGetHandleByUUID(self, uuid: str) -> int:
        return int(uuid.rsplit("-", 1)[-1])

    def _reading(self, handle: int) -> tuple[float, float, float]:
        script = self.readings[handle]
        position = self.calls.get(handle, 0)
        return script[min(position, len(script) - 1)]

    def nvmlDeviceGetUtilizationRates(self, handle: int) -> SimpleNamespace:
        gpu, memory, _ = self._reading(handle)
        return SimpleNamespace(gpu=gpu, memory=memory)

    def nvmlDeviceGetMemoryInfo(self, handle: int) -> SimpleNamespace:
        _, _, used = self._reading(handle)
        self.calls[handle] = self.calls.get(handle, 0) + 1  # the sampler reads memory last
        return SimpleNamespace(used=int(used * 1024 * 1024), total=24 * 1024**3)

    def nvmlDeviceGetName(self, handle: int) -> bytes:
        return b"Fake RTX 3090"

    def nvmlSystemGetDriverVersion(self) -> str:
        return "555.42"


class LinearRegressionStep:
    """A genuinely small training job: fast, steady steps."""

    def __init__(self, config: WorkloadConfig, wrap: ModuleWrapper) -> None:
        generator = torch.Generator().manual_seed(config.seed)
        self._model = nn.Linear(16, 1)
        self._trained = wrap(self._model)
        self._optimizer = torch.optim.SGD(self._trained.parameters(), lr=0.01)
        self._x = torch.randn(config.batch_size, 16, generator=generator)
        self._y = torch.randn(config.batch_size, 1, generator=generator)
        self.samples_per_step = config.batch_size

    def step(self) -> float:
        loss = nn.functional.mse_loss(self._trained(self._x), self._y)
        self._optimizer.zero_grad()
        loss.backward()
        self._optimizer.step()
        return float(loss.detach())

    def parameters(self) -> Iterator[nn.Parameter]:
        return self._model.parameters()


def build_linear(config: WorkloadConfig, wrap: ModuleWrapper) -> TrainingStep:
    return LinearRegressionStep(config, wrap)


class OutOfMemoryOnStep(LinearRegressionStep):
    def step(self) -> float:
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 20.00 GiB (injected by the test)")


def build_out_of_memory(config: WorkloadConfig, wrap: ModuleWrapper) -> TrainingStep:
    return OutOfMemoryOnStep(config, wrap)


class KilledOnStep(LinearRegressionStep):
    def step(self) -> float:
        os.kill(os.getpid(), signal.SIGKILL)
        return 0.0


def build_killed(config: WorkloadConfig, wrap: ModuleWrapper) -> TrainingStep:
    return KilledOnStep(config, wrap)


FAKES = {
    "Linear": WorkloadSpec("Linear", "Random", build_linear, "a linear regression (test)"),
    "OOM": WorkloadSpec("OOM", "Random", build_out_of_memory, "raises CUDA out-of-memory on its first step"),
    "Killed": WorkloadSpec("Killed", "Random", build_killed, "its process is killed on its first step"),
}


def resolve(model: str) -> WorkloadSpec:
    """The test workloads first, then the real registry."""
    return FAKES[model] if model in FAKES else get_workload(model)
