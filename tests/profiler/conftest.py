"""Fixtures of the profiler tests: a fake clock, fast CPU run settings, fake NVML."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace

import pytest

from profiler.measure import MeasureSettings
from profiler.runner import RunSettings


class FakeClock:
    """A clock that moves only when told to: the test decides how long each step takes."""

    def __init__(self, start: float = 1000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
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
