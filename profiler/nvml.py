"""GPU utilization and memory from NVML, sampled in a background thread.

NVML sees the whole GPU, every process on it, which is what a colocation table
needs: the utilization and memory of the GPU with both jobs on it.  NVML is
optional -- on a machine without it (or without a GPU) the sampler still works and
reports NaN, and the caller prints a warning.
"""

from __future__ import annotations

import contextlib
import importlib
import math
import os
import statistics
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Self

from profiler.measure import DEFAULT_CLOCK, Clock

MIB = 1024 * 1024


@dataclass(frozen=True, slots=True)
class GpuSample:
    time: float
    device: int
    """Position of the GPU in the sampler's list, not an NVML index."""
    gpu_util: float
    gmem_util: float
    used_mib: float


@dataclass(frozen=True, slots=True)
class GpuSummary:
    """NVML's view of a time interval; NaN where nothing was sampled."""

    gpu_util: float
    gmem_util: float
    gmem: float
    """Peak used MiB on the busiest GPU."""

    @classmethod
    def unavailable(cls) -> GpuSummary:
        return cls(math.nan, math.nan, math.nan)


@dataclass(frozen=True, slots=True)
class Nvml:
    """An initialised NVML library (``pynvml`` or a stand-in with the same functions)."""

    api: Any

    def handle(self, device: GpuIdentity) -> Any:
        """NVML's handle of the device: by UUID when known, else (or if NVML rejects it) by index."""
        if device.uuid:
            with contextlib.suppress(Exception):
                return self.api.nvmlDeviceGetHandleByUUID(device.uuid)
        return self.api.nvmlDeviceGetHandleByIndex(device.index)

    def read(self, handle: Any) -> tuple[float, float, float]:
        """GPU utilization %, memory utilization %, used MiB."""
        rates = self.api.nvmlDeviceGetUtilizationRates(handle)
        memory = self.api.nvmlDeviceGetMemoryInfo(handle)
        return float(rates.gpu), float(rates.memory), memory.used / MIB

    def describe(self, handle: Any) -> dict[str, object]:
        name = self.api.nvmlDeviceGetName(handle)
        memory = self.api.nvmlDeviceGetMemoryInfo(handle)
        return {
            "name": name.decode() if isinstance(name, bytes) else str(name),
            "memory_mib": round(memory.total / MIB),
        }

    def driver_version(self) -> str:
        version = self.api.nvmlSystemGetDriverVersion()
        return version.decode() if isinstance(version, bytes) else str(version)

    def close(self) -> None:
        with contextlib.suppress(Exception):  # shutting down a library that may already be gone
            self.api.nvmlShutdown()


@dataclass(frozen=True, slots=True)
class GpuIdentity:
    """How to find a CUDA device in NVML: by UUID when the worker told us, else by index."""

    index: int
    uuid: str | None = None


def open_nvml(module: ModuleType | Any | None = None) -> tuple[Nvml | None, str]:
    """Initialise NVML; ``(None, why)`` when it cannot be used.  ``module`` replaces pynvml in tests."""
    try:
        api = module if module is not None else importlib.import_module("pynvml")
    except ImportError as exc:
        return None, f"NVML is not installed ({exc}); GPU utilization columns will be empty"
    try:
        api.nvmlInit()
    except Exception as exc:  # noqa: BLE001 - pynvml raises its own NVMLError family
        return None, f"NVML could not be initialised ({exc}); GPU utilization columns will be empty"
    return Nvml(api), ""


def cuda_device_identity(cuda_index: int, uuid: str | None) -> GpuIdentity:
    """NVML's way to the CUDA device ``cuda_index`` of a worker.

    The worker's UUID is exact.  Without it, CUDA_VISIBLE_DEVICES (when it lists
    indices) maps CUDA's numbering back to NVML's.
    """
    if uuid:
        return GpuIdentity(cuda_index, uuid if uuid.startswith(("GPU-", "MIG-")) else f"GPU-{uuid}")
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "")
    entries = [e.strip() for e in visible.split(",") if e.strip()]
    if cuda_index < len(entries) and entries[cuda_index].isdigit():
        return GpuIdentity(int(entries[cuda_index]))
    return GpuIdentity(cuda_index)


class GpuSampler:
    """Samples the given GPUs at ``hz`` in a daemon thread and summarises any interval.

    Without NVML (``nvml=None``), or when NVML cannot find the GPUs, it samples
    nothing and every summary is NaN; ``error`` then says why.
    """

    def __init__(
        self,
        nvml: Nvml | None,
        devices: Sequence[GpuIdentity],
        hz: float = 10.0,
        clock: Clock = DEFAULT_CLOCK,
    ) -> None:
        if hz <= 0:
            raise ValueError(f"sampling rate must be > 0 Hz, got {hz}")
        self._period = 1.0 / hz
        self._clock = clock
        self._samples: list[GpuSample] = []
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None
        self.error: str | None = None
        """Why nothing (or not everything) was sampled, if NVML failed."""
        self._nvml = nvml
        self._handles: list[Any] = []
        if nvml is not None:
            try:
                self._handles = [nvml.handle(d) for d in devices]
            except Exception as exc:  # noqa: BLE001 - pynvml raises its own NVMLError family
                self._nvml = None
                self.error = f"NVML cannot find the GPUs in use ({exc}); utilization columns stay empty"

    @property
    def available(self) -> bool:
        return self._nvml is not None and bool(self._handles)

    def sample_once(self) -> None:
        """Read every GPU once (the thread calls this; tests may too)."""
        if self._nvml is None:
            return
        now = self._clock()
        readings = [
            GpuSample(now, position, *self._nvml.read(handle))
            for position, handle in enumerate(self._handles)
        ]
        with self._lock:
            self._samples.extend(readings)

    def start(self) -> Self:
        if self.available and self._thread is None:
            self._thread = threading.Thread(target=self._run, name="gpu-sampler", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        self._stopped.set()
        if self._thread is not None:
            self._thread.join(timeout=5.0)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _run(self) -> None:
        while not self._stopped.is_set():
            try:
                self.sample_once()
            except Exception as exc:  # noqa: BLE001 - a dying NVML must not kill the measurement
                self.error = f"NVML sampling stopped: {exc}"
                return
            self._stopped.wait(self._period)

    def samples(self) -> list[GpuSample]:
        with self._lock:
            return list(self._samples)

    def latest_gpu_util(self) -> float:
        """Mean GPU utilization of the latest reading of each GPU (for a live display)."""
        latest: dict[int, GpuSample] = {}
        for sample in self.samples():
            latest[sample.device] = sample
        return statistics.fmean(s.gpu_util for s in latest.values()) if latest else math.nan

    def summary(self, start: float, end: float) -> GpuSummary:
        """Mean utilizations over ``[start, end]`` and the busiest GPU's peak memory."""
        inside = [s for s in self.samples() if start <= s.time <= end]
        if not inside:
            return GpuSummary.unavailable()
        return GpuSummary(
            gpu_util=statistics.fmean(s.gpu_util for s in inside),
            gmem_util=statistics.fmean(s.gmem_util for s in inside),
            gmem=max(s.used_mib for s in inside),
        )
