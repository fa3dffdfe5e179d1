"""Plans, rows and metadata: the bookkeeping around the measurements."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from profiler_fakes import FakeNvmlModule

from profiler.measure import StopReason, Verdict
from profiler.metadata import describe_environment, resume_conflict, write_metadata
from profiler.nvml import GpuSummary, open_nvml
from profiler.plan import JobConfig, PairConfig, pair_plan, single_plan
from profiler.runner import JobMeasurement, RunOutcome, RunSettings
from profiler.tables import ResultTable, pair_row, single_row

RESNET = JobConfig("ResNet18", "CIFAR-10", 32, False, 1)
LSTM = JobConfig("LSTM", "Wikitext2", 64, True, 1)


def outcome(*iters: float, gpu: GpuSummary | None = None) -> RunOutcome:
    verdict = Verdict(StopReason.STEADY, (3, 4), tuple(iters), (0.01,) * len(iters))
    jobs = tuple(JobMeasurement(i, 1200.0) for i in iters)
    return RunOutcome(True, "", jobs, gpu or GpuSummary(80.0, 40.0, 5000.0), verdict)


def test_a_single_plan_covers_every_combination_workload_by_workload() -> None:
    plan = single_plan([("ResNet18", "CIFAR-10"), ("LSTM", "Wikitext2")], [32, 64], [True, False], [1, 2])
    assert len(plan) == 2 * 2 * 2 * 2
    assert [c.model for c in plan[:8]] == ["ResNet18"] * 8


def test_pairs_are_unordered_share_a_gpu_count_and_may_include_a_job_with_itself() -> None:
    two_gpus = JobConfig("ResNet18", "CIFAR-10", 32, False, 2)
    with_self = pair_plan([RESNET, LSTM, two_gpus], include_self=True)
    assert [p.label for p in with_self] == [
        "ResNet18 bs32 + ResNet18 bs32",
        "ResNet18 bs32 + LSTM bs64 amp",
        "LSTM bs64 amp + LSTM bs64 amp",
        "ResNet18 bs32 x2 + ResNet18 bs32 x2",
    ]
    assert [p.label for p in pair_plan([RESNET, LSTM], include_self=False)] == [
        "ResNet18 bs32 + LSTM bs64 amp"
    ]


def test_a_single_row_takes_nvml_memory_or_falls_back_to_torchs_peak() -> None:
    row = single_row(RESNET, outcome(20.0))
    assert (row["iters_per_s"], row["samples_per_s"], row["gmem"], row["status"]) == (
        20.0,
        640.0,
        5000.0,
        "ok",
    )
    without_nvml = single_row(RESNET, outcome(20.0, gpu=GpuSummary.unavailable()))
    assert without_nvml["gmem"] == 1200.0 and math.isnan(without_nvml["gpu_util"])


def test_a_pair_row_divides_shared_by_solo_throughput() -> None:
    row = pair_row(PairConfig(RESNET, LSTM), outcome(10.0, 30.0), solo=(20.0, 40.0))
    assert (row["speed1"], row["speed2"], row["status"], row["error"]) == (0.5, 0.75, "ok", "")
    assert (row["model2"], row["amp2"], row["gpu_util"]) == ("LSTM", 1, 80.0)


def test_a_pair_much_faster_than_alone_is_flagged_not_stored_as_a_speed() -> None:
    row = pair_row(PairConfig(RESNET, LSTM), outcome(50.0, 30.0), solo=(20.0, 40.0))
    assert row["status"] == "failed" and "speed1 2.5 outside (0, 2]" in row["error"]
    assert math.isnan(row["speed1"]) and row["iters_per_s1"] == 50.0


def test_a_failed_run_gives_a_failed_row_with_its_reason() -> None:
    failed = RunOutcome.failed("job 2 (LSTM): out of memory: CUDA out of memory", jobs=2)
    row = pair_row(PairConfig(RESNET, LSTM), failed, solo=(20.0, 40.0))
    assert row["status"] == "failed" and row["error"].startswith("job 2 (LSTM)")
    assert math.isnan(row["iters_per_s1"])


def test_a_table_adds_rows_and_replaces_a_retried_one(tmp_path: Path) -> None:
    table = ResultTable(tmp_path / "single.csv", "single")
    table.add(single_row(RESNET, RunOutcome.failed("out of memory", jobs=1)))
    table.add(single_row(LSTM, outcome(5.0)))
    table.add(single_row(RESNET, outcome(20.0)))
    reopened = ResultTable(tmp_path / "single.csv", "single")
    assert len(reopened) == 2
    assert reopened.status(RESNET.key) == "ok" and reopened.status(LSTM.key) == "ok"


def test_metadata_names_the_gpus_and_guards_against_mixing_devices(tmp_path: Path) -> None:
    nvml, _ = open_nvml(FakeNvmlModule({0: [(0, 0, 0)], 1: [(0, 0, 0)]}))
    settings = RunSettings(device="cuda", size="full")
    environment = describe_environment(settings, gpu_count=2, nvml=nvml)
    assert environment["device_name"] == "Fake RTX 3090" and environment["driver"] == "555.42"
    assert environment["gpus"] == [{"name": "Fake RTX 3090", "memory_mib": 24576}] * 2
    assert environment["torch"] and environment["torchvision"] and environment["date"]

    table = tmp_path / "single.csv"
    ResultTable(table, "single").add(single_row(RESNET, outcome(20.0)))
    write_metadata(table, environment, settings, {"command": "single"})
    assert resume_conflict(table, environment) is None
    elsewhere = environment | {"device_name": "NVIDIA H100"}
    conflict = resume_conflict(table, elsewhere)
    assert conflict is not None and "Fake RTX 3090" in conflict and "NVIDIA H100" in conflict


@pytest.mark.parametrize("kind", ["single", "pair"])
def test_a_table_that_does_not_exist_yet_is_empty(tmp_path: Path, kind: str) -> None:
    table = ResultTable(tmp_path / f"{kind}.parquet", kind)
    assert len(table) == 0 and table.status(RESNET.key) is None


def test_a_pair_a_little_faster_than_alone_is_flagged_too() -> None:
    row = pair_row(PairConfig(RESNET, LSTM), outcome(24.6, 30.0), solo=(20.0, 40.0))
    assert row["status"] == "failed" and "speed1 1.23 above 1.05" in row["error"]
    assert "solo measurement is suspect" in row["error"]


class ScriptedRuns:
    """A runner playing back throughputs: solo runs of ResNet18 and LSTM, then pairs, in order."""

    def __init__(self, solos: dict[str, list[float]], pairs: list[tuple[float, float]]) -> None:
        self.solos, self.pairs, self.calls = solos, list(pairs), []

    def __call__(self, requests, observer) -> RunOutcome:
        self.calls.append(len(requests))
        if len(requests) == 1:
            return outcome(self.solos[requests[0].spec.model].pop(0))
        return outcome(*self.pairs.pop(0))


@pytest.mark.parametrize(("second_pair", "status"), [((15.0, 30.0), "ok"), ((24.0, 30.0), "failed")])
def test_a_pair_faster_shared_than_alone_gets_its_solo_runs_and_itself_measured_again(
    tmp_path: Path, second_pair, status
) -> None:
    from profiler.observe import QuietSweepObserver
    from profiler.pair import sweep_pairs
    from profiler.runner import RunSettings
    from workloads import get_workload

    runs = ScriptedRuns({"ResNet18": [16.0, 20.0], "LSTM": [40.0, 40.0]}, [(20.0, 30.0), second_pair])
    single, pairs = ResultTable(tmp_path / "single.csv", "single"), ResultTable(tmp_path / "pair.csv", "pair")
    sweep_pairs([PairConfig(RESNET, LSTM)], pairs, single, get_workload, RunSettings(), QuietSweepObserver(),
                runner=runs)
    assert runs.calls == [1, 1, 2, 1, 1, 2]  # solos, the pair (1.25: too fast), solos again, the pair again
    assert single.row(RESNET.key)["iters_per_s"] == 20.0
    row = pairs.row(PairConfig(RESNET, LSTM).key)
    assert row["status"] == status
    if status == "ok":
        assert (row["speed1"], row["speed2"]) == (0.75, 0.75)
    else:
        assert "above 1.05" in row["error"]
