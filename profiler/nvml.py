"""GPU utilization and memory from NVML, sampled in a background thread.

NVML sees the whole GPU, every process on it, which is what a colocation table
needs: the utilization and memory of the GPU with both jobs on it.  NVML is
optional -- on a machine without it (or without a GPU) the sampler still works and
reports NaN, and the caller prints a warning.

On GPUs with performance monitoring (GPM: Hopper and later) the sampler also reads
what NVML's utilization cannot tell apart -- SM activity and occupancy, tensor-pipe
and DRAM activity, PCIe and NVLink traffic -- each between two consecutive ticks.
They are what a job alone says about how it will share a GPU; where a GPU (or its
virtualisation) lacks them they stay NaN and nothing else changes.
"""

from __future__ import annotations

import contextlib
import importlib
import math
import os
import statistics
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Self

from profiler.measure import DEFAULT_CLOCK, Clock

MIB = 1024 * 1024

GPM_METRICS: dict[str, int] = {
    "gr_active": 1, "sm_active": 2, "sm_occupancy": 3, "tensor_active": 5, "dram_active": 10, "fp32_active": 12,
    "fp16_active": 13, "pcie_tx_mibps": 20, "pcie_rx_mibps": 21, "nvlink_rx_mibps": 60, "nvlink_tx_mibps": 61,
}
"""The single table's GPM columns (:data:`simcluster.colocation.SINGLE_GPM_COLUMNS`) by NVML metric id
(``NVML_GPM_METRIC_*``: percentages, then MiB/s)."""
_GPM_PERCENT = {"gr_active", "sm_active", "sm_occupancy", "tensor_active", "dram_active", "fp32_active",
                "fp16_active"}


@dataclass(frozen=True, slots=True)
class GpuSample:
    time: float
    device: int
    """Position of the GPU in the sampler's list, not an NVML index."""
    gpu_util: float
    gmem_util: float
    used_mib: float
    gpm: tuple[float, ...] = ()
    """GPM metrics since the device's previous tick, in :data:`GPM_METRICS` order; empty without GPM."""


@dataclass(frozen=True, slots=True)
class GpuSummary:
    """NVML's view of a time interval; NaN where nothing was sampled."""

    gpu_util: float
    gmem_util: float
    gmem: float
    """Peak used MiB on the busiest GPU."""
    gpm: dict[str, float] = field(default_factory=dict)
    """Mean GPM metrics by :data:`GPM_METRICS` name over the interval and the GPUs; empty without GPM."""

    @classmethod
    def unavailable(cls) -> GpuSummary:
        return cls(math.nan, math.nan, math.nan)


class GpmReader:
    """One GPU's GPM metrics between consecutive :meth:`read` calls (NVML's two-sample protocol).

    Raises on construction where the GPU or driver has no GPM; each :meth:`read` gives the metrics
    since the previous one (the first since construction), NaN for a metric NVML does not report.
    """

    def __init__(self, api: Any, handle: Any) -> None:
        if not api.nvmlGpmQueryDeviceSupport(handle).isSupportedDevice:
            raise RuntimeError("this GPU has no performance monitoring (GPM)")
        self._api, self._handle = api, handle
        self._samples = [api.nvmlGpmSampleAlloc(), api.nvmlGpmSampleAlloc()]
        api.nvmlGpmSampleGet(handle, self._samples[0])

    def read(self) -> tuple[float, ...]:
        api = self._api
        previous, current = self._samples
        api.nvmlGpmSampleGet(self._handle, current)
        request = api.c_nvmlGpmMetricsGet_t()
        request.version = api.NVML_GPM_METRICS_GET_VERSION
        request.numMetrics = len(GPM_METRICS)
        request.sample1, request.sample2 = previous, current
        for i, metric in enumerate(GPM_METRICS.values()):
            request.metrics[i].metricId = metric
        api.nvmlGpmMetricsGet(request)
        self._samples.reverse()
        values = []
        for i, name in enumerate(GPM_METRICS):
            metric = request.metrics[i]
            value = float(metric.value) if metric.nvmlReturn == 0 and math.isfinite(metric.value) else math.nan
            # a counter ratio can round past its bound; the table refuses a percentage over 100
            values.append(min(max(value, 0.0), 100.0) if name in _GPM_PERCENT else max(value, 0.0))
        return tuple(values)

    def close(self) -> None:
        for sample in self._samples:
            with contextlib.suppress(Exception):  # freeing what a dying NVML may already have dropped
                self._api.nvmlGpmSampleFree(sample)


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

    def gpm_reader(self, handle: Any) -> GpmReader | None:
        """A GPM reader of the device, or None where the GPU, the driver or pynvml has none."""
        try:
            return GpmReader(self.api, handle)
        except Exception:  # noqa: BLE001 - no GPM (old GPU, vGPU, old pynvml) is normal, not an error
            return None

    def describe(self, handle: Any) -> dict[str, object]:
        name = self.api.nvmlDeviceGetName(handle)
        memory = self.api.nvmlDeviceGetMemoryInfo(handle)
        return {
            "name": name.decode() if isinstance(name, bytes) else str(name),
            "memory_mib": round(memory.total / MIB),
            **self._state(handle),
        }

    def _state(self, handle: Any) -> dict[str, object]:
        """Clocks, power limit, temperature and GPM support now: what can explain a speed that moved between
        sessions.  Readings the GPU or NVML does not give are left out."""
        api, state = self.api, {}
        readings = {
            "sm_clock_mhz": lambda: api.nvmlDeviceGetClockInfo(handle, api.NVML_CLOCK_SM),
            "sm_clock_max_mhz": lambda: api.nvmlDeviceGetMaxClockInfo(handle, api.NVML_CLOCK_SM),
            "memory_clock_mhz": lambda: api.nvmlDeviceGetClockInfo(handle, api.NVML_CLOCK_MEM),
            "power_limit_w": lambda: api.nvmlDeviceGetEnforcedPowerLimit(handle) / 1000,
            "temperature_c": lambda: api.nvmlDeviceGetTemperature(handle, api.NVML_TEMPERATURE_GPU),
            "gpm": lambda: bool(api.nvmlGpmQueryDeviceSupport(handle).isSupportedDevice),
        }
        for key, read in readings.items():
            with contextlib.suppress(Exception):  # a reading this GPU or this pynvml lacks
                state[key] = read()
        return state

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
        self._gpm: list[GpmReader | None] = []
        if nvml is not None:
            try:
                self._handles = [nvml.handle(d) for d in devices]
            except Exception as exc:  # noqa: BLE001 - pynvml raises its own NVMLError family
                self._nvml = None
                self.error = f"NVML cannot find the GPUs in use ({exc}); utilization columns stay empty"
            self._gpm = [nvml.gpm_reader(h) for h in self._handles] if self._nvml is not None else []

    @property
    def available(self) -> bool:
        return self._nvml is not None and bool(self._handles)

    def sample_once(self) -> None:
        """Read every GPU once (the thread calls this; tests may too)."""
        if self._nvml is None:
            return
        now = self._clock()
        readings = [
            GpuSample(now, position, *self._nvml.read(handle), self._read_gpm(position))
            for position, handle in enumerate(self._handles)
        ]
        with self._lock:
            self._samples.extend(readings)

    def _read_gpm(self, position: int) -> tuple[float, ...]:
        reader = self._gpm[position] if position < len(self._gpm) else None
        if reader is None:
            return ()
        try:
            return reader.read()
        except Exception as exc:  # noqa: BLE001 - losing GPM must not lose the utilization columns
            reader.close()
            self._gpm[position] = None
            self.error = f"GPM sampling stopped: {exc}; its columns stay empty"
            return ()

    def start(self) -> Self:
        if self.available and self._thread is None:
            self._thread = threading.Thread(target=self._run, name="gpu-sampler", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        self._stopped.set()
        if self._thread is not None:
            self._thread.join(timeout=5.0)
        if self._thread is None or not self._thread.is_alive():
            for reader in self._gpm:
                if reader is not None:
                    reader.close()
            self._gpm = []

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
            gpm=_mean_gpm([s.gpm for s in inside if s.gpm]),
        )


def _mean_gpm(readings: list[tuple[float, ...]]) -> dict[str, float]:
    """Each GPM metric's mean over the readings that have it (NaN where none has)."""
    if not readings:
        return {}
    means = {}
    for i, name in enumerate(GPM_METRICS):
        values = [r[i] for r in readings if not math.isnan(r[i])]
        means[name] = statistics.fmean(values) if values else math.nan
    return means
