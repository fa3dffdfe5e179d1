"""GPM metrics (Hopper's performance monitoring through NVML): sampled beside utilization, averaged over the
measured window, written to the single table where a GPU has them, and absent -- not empty columns -- where
it has none.  Also what metadata.json records of the host and the GPU to explain a speed that moved."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pynvml
import pytest
from profiler_fakes import FakeClock, FakeNvmlModule

from profiler.metadata import describe_host
from profiler.nvml import GPM_METRICS, GpuIdentity, GpuSampler, GpuSummary, open_nvml
from profiler.plan import JobConfig
from profiler.runner import JobMeasurement, RunOutcome
from profiler.tables import ResultTable, single_row
from simcluster.colocation import SINGLE_GPM_COLUMNS, TableError, read_single_table, validate_single_table


@dataclass
class FakeGpmModule(FakeNvmlModule):
    """A stand-in NVML with GPM: each metric reads ``base + id + tick`` (``unsupported`` ids report an error)."""

    base: float = 10.0
    unsupported: frozenset[int] = frozenset()
    fail_after: int | None = None  # the metrics call raises after this many reads
    reads: int = 0
    freed: list[object] = field(default_factory=list)
    c_nvmlGpmMetricsGet_t = pynvml.c_nvmlGpmMetricsGet_t
    NVML_GPM_METRICS_GET_VERSION = pynvml.NVML_GPM_METRICS_GET_VERSION

    def nvmlGpmQueryDeviceSupport(self, handle: int) -> SimpleNamespace:
        return SimpleNamespace(isSupportedDevice=1)

    def nvmlGpmSampleAlloc(self) -> object:
        return pynvml.c_nvmlGpmSample_t()

    def nvmlGpmSampleGet(self, handle: int, sample: object) -> object:
        return sample

    def nvmlGpmSampleFree(self, sample: object) -> None:
        self.freed.append(sample)

    def nvmlGpmMetricsGet(self, request: pynvml.c_nvmlGpmMetricsGet_t) -> pynvml.c_nvmlGpmMetricsGet_t:
        if self.fail_after is not None and self.reads >= self.fail_after:
            raise RuntimeError("GPM went away")
        for i in range(request.numMetrics):
            metric = request.metrics[i]
            metric.value = self.base + metric.metricId + self.reads
            metric.nvmlReturn = 3 if metric.metricId in self.unsupported else 0
        self.reads += 1
        return request


def sampled(module: FakeNvmlModule, ticks: int = 3) -> tuple[GpuSampler, GpuSummary]:
    nvml, why = open_nvml(module)
    assert nvml is not None, why
    clock = FakeClock()
    sampler = GpuSampler(nvml, [GpuIdentity(0)], clock=clock)
    for _ in range(ticks):
        sampler.sample_once()
        clock.advance(0.1)
    return sampler, sampler.summary(0, 1e9)


def test_gpm_metrics_are_averaged_over_the_window_beside_utilization() -> None:
    _, summary = sampled(FakeGpmModule({0: [(50, 20, 1000)]}))
    assert summary.gpu_util == 50
    assert set(summary.gpm) == set(GPM_METRICS) == set(SINGLE_GPM_COLUMNS)
    assert summary.gpm["sm_active"] == pytest.approx(10 + 2 + 1)  # ticks 0, 1, 2 of metric 2
    assert summary.gpm["pcie_rx_mibps"] == pytest.approx(10 + 21 + 1)


def test_a_percentage_past_100_is_clamped_and_a_metric_nvml_does_not_report_is_nan() -> None:
    _, summary = sampled(FakeGpmModule({0: [(50, 20, 1000)]}, base=99.0, unsupported=frozenset({60})))
    assert summary.gpm["dram_active"] == 100.0
    assert math.isnan(summary.gpm["nvlink_rx_mibps"]) and summary.gpm["nvlink_tx_mibps"] > 100


def test_gpm_that_fails_mid_run_stops_alone_and_says_so() -> None:
    module = FakeGpmModule({0: [(50, 20, 1000)]}, fail_after=1)
    sampler, summary = sampled(module)
    assert summary.gpu_util == 50 and summary.gpm["sm_active"] == pytest.approx(12)  # the one reading before
    assert sampler.error is not None and "GPM sampling stopped: GPM went away" in sampler.error
    assert len(module.freed) == 2  # both samples given back


def test_without_gpm_the_summary_has_none_and_the_table_no_gpm_columns(tmp_path: Path) -> None:
    _, summary = sampled(FakeNvmlModule({0: [(50, 20, 1000)]}))  # pynvml-like, but no GPM functions
    assert summary.gpm == {}
    table = ResultTable(tmp_path / "single.csv", "single")
    table.add(single_row(JobConfig("TD3", "BipedalWalker", 32, False, 1), outcome(summary)))
    assert not set(SINGLE_GPM_COLUMNS) & set(pd.read_csv(tmp_path / "single.csv").columns)


def outcome(gpu: GpuSummary) -> RunOutcome:
    return RunOutcome(True, "", (JobMeasurement(100.0, 500.0),), gpu)


def test_a_single_table_keeps_gpm_columns_and_checks_them(tmp_path: Path) -> None:
    _, summary = sampled(FakeGpmModule({0: [(50, 20, 1000)]}))
    table = ResultTable(tmp_path / "single.csv", "single")
    table.add(single_row(JobConfig("TD3", "BipedalWalker", 32, False, 1), outcome(GpuSummary.unavailable())))
    table.add(single_row(JobConfig("PPO", "LunarLander", 32, False, 1), outcome(summary)))
    read = read_single_table(tmp_path / "single.csv")
    assert list(read.columns[-len(SINGLE_GPM_COLUMNS):]) == SINGLE_GPM_COLUMNS
    assert math.isnan(read.at[0, "sm_active"]) and read.at[1, "sm_active"] == pytest.approx(13)
    with pytest.raises(TableError, match="row 2, field 'sm_occupancy': expected a percentage"):
        validate_single_table(read.assign(sm_occupancy=[math.nan, 140.0]))


def test_metadata_records_the_hosts_cpu_clock_and_load(tmp_path: Path) -> None:
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("model name\t: Xeon Test\ncpu MHz\t\t: 2100.000\n\nmodel name\t: Xeon Test\ncpu MHz\t\t: 2300.0\n")
    host = describe_host(cpuinfo)
    assert host["cpu_model"] == "Xeon Test" and host["cpu_mhz"] == {"min": 2100.0, "mean": 2200.0, "max": 2300.0}
    assert len(host["load_average"]) == 3 and host["cpus_usable"] >= 1
    assert "cpu_model" not in describe_host(tmp_path / "absent")


def test_a_gpus_description_says_whether_it_has_gpm() -> None:
    with_gpm, _ = open_nvml(FakeGpmModule({0: [(0, 0, 0)]}))
    without, _ = open_nvml(FakeNvmlModule({0: [(0, 0, 0)]}))
    assert with_gpm is not None and without is not None
    assert with_gpm.describe(0)["gpm"] is True and "gpm" not in without.describe(0)
