"""The NVML sampler against a stand-in NVML module, and without NVML at all."""

from __future__ import annotations

import math
import time

import pytest
from profiler_fakes import FakeClock, FakeNvmlModule

from profiler import nvml as nvml_module
from profiler.nvml import GpuIdentity, GpuSampler, cuda_device_identity, open_nvml


def open_fake(readings: dict[int, list[tuple[float, float, float]]]):  # type: ignore[no-untyped-def]
    nvml, why = open_nvml(FakeNvmlModule(readings))
    assert nvml is not None, why
    return nvml


def test_the_summary_averages_utilization_and_keeps_the_peak_memory() -> None:
    clock = FakeClock()
    nvml = open_fake({0: [(50, 20, 1000), (70, 40, 3000), (90, 60, 2000), (10, 5, 9000)]})
    sampler = GpuSampler(nvml, [GpuIdentity(0)], clock=clock)
    for _ in range(4):
        sampler.sample_once()
        clock.advance(0.1)

    # The first three samples (t=1000.0 .. 1000.2) fall in the window, the fourth does not.
    summary = sampler.summary(1000.0, 1000.25)
    assert summary.gpu_util == pytest.approx(70.0)
    assert summary.gmem_util == pytest.approx(40.0)
    assert summary.gmem == pytest.approx(3000.0)


def test_with_several_gpus_utilization_is_averaged_and_memory_is_the_busiest_gpus() -> None:
    clock = FakeClock()
    nvml = open_fake({0: [(100, 50, 4000)], 1: [(50, 10, 6000)]})
    sampler = GpuSampler(nvml, [GpuIdentity(0), GpuIdentity(1)], clock=clock)
    sampler.sample_once()
    summary = sampler.summary(0, 2000)
    assert (summary.gpu_util, summary.gmem_util, summary.gmem) == pytest.approx((75.0, 30.0, 6000.0))
    assert sampler.latest_gpu_util() == pytest.approx(75.0)


def test_gpus_are_found_by_the_uuid_their_worker_reported() -> None:
    clock = FakeClock()
    nvml = open_fake({0: [(0, 0, 0)], 3: [(42, 0, 0)]})
    sampler = GpuSampler(nvml, [cuda_device_identity(0, "fake-uuid-3")], clock=clock)
    sampler.sample_once()
    assert sampler.summary(0, 2000).gpu_util == 42


def test_the_thread_samples_until_stopped() -> None:
    nvml = open_fake({0: [(30, 10, 500)]})
    sampler = GpuSampler(nvml, [GpuIdentity(0)], hz=50)
    with sampler:
        deadline = time.monotonic() + 10
        while len(sampler.samples()) < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
    count = len(sampler.samples())
    assert count >= 3
    time.sleep(0.1)
    assert len(sampler.samples()) == count  # stopped means stopped


def test_an_interval_without_samples_reports_nan() -> None:
    clock = FakeClock()
    sampler = GpuSampler(open_fake({0: [(30, 10, 500)]}), [GpuIdentity(0)], clock=clock)
    sampler.sample_once()
    assert math.isnan(sampler.summary(5000, 6000).gpu_util)


def test_without_nvml_the_sampler_runs_and_reports_nan() -> None:
    sampler = GpuSampler(None, [GpuIdentity(0)])
    with sampler:
        sampler.sample_once()
    summary = sampler.summary(0, math.inf)
    assert not sampler.available
    assert math.isnan(summary.gpu_util) and math.isnan(summary.gmem_util) and math.isnan(summary.gmem)
    assert math.isnan(sampler.latest_gpu_util())


def test_nvml_that_is_not_installed_is_reported_not_raised(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing(name: str) -> None:
        raise ImportError(f"No module named {name!r}")

    monkeypatch.setattr(nvml_module.importlib, "import_module", missing)
    nvml, why = open_nvml()
    assert nvml is None
    assert "not installed" in why and "empty" in why


def test_nvml_without_a_driver_is_reported_not_raised() -> None:
    nvml, why = open_nvml(FakeNvmlModule({}, init_error=RuntimeError("NVML Shared Library Not Found")))
    assert nvml is None
    assert "NVML Shared Library Not Found" in why


def test_cuda_visible_devices_maps_cuda_numbering_to_nvml(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,5")
    assert cuda_device_identity(1, None) == GpuIdentity(5)
    assert cuda_device_identity(1, "abc") == GpuIdentity(1, "GPU-abc")
    assert cuda_device_identity(0, "GPU-abc").uuid == "GPU-abc"
