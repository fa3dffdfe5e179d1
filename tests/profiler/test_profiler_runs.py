"""Real worker processes on the CPU: single sweeps, failures, resume, pairs, DDP, Ctrl-C.

Each run starts fresh processes (a few seconds each) and measures for about two
seconds, so these tests check behaviour, never speed.
"""

from __future__ import annotations

import math
import multiprocessing
from pathlib import Path
from typing import Any

import profiler_fakes
import pytest
from profiler_fakes import quick_settings

from profiler.observe import QuietSweepObserver
from profiler.pair import sweep_pairs
from profiler.plan import JobConfig, PairConfig
from profiler.runner import JobRequest, run_jobs
from profiler.single import sweep_single
from profiler.tables import ResultTable
from simcluster.colocation import read_pair_table, read_single_table


def config(model: str, batchsize: int = 4, amp: bool = False, gpu_num: int = 1) -> JobConfig:
    return JobConfig(model, profiler_fakes.resolve(model).dataset, batchsize, amp, gpu_num)


class Recorder(QuietSweepObserver):
    def __init__(self) -> None:
        self.started: list[str] = []
        self.windows = 0

    def on_config_start(self, label: str) -> None:
        self.started.append(label)

    def on_window(self, job: int, iters_per_s: float, samples_per_s: float, gpu_util: float) -> None:
        self.windows += 1


def test_a_failing_configuration_is_recorded_and_the_sweep_goes_on_then_resumes(
    tmp_path: Path,
) -> None:
    settings = quick_settings()
    path = tmp_path / "single.csv"
    configs = [config("OOM"), config("NeuMF")]
    observer = Recorder()

    first = sweep_single(configs, ResultTable(path, "single"), profiler_fakes.resolve, settings, observer)

    table = read_single_table(path)
    assert (first.measured, first.failed, first.skipped) == (2, 1, 0)
    oom, neumf = table.iloc[0], table.iloc[1]
    assert oom["status"] == "failed" and oom["error"].startswith("OOM: out of memory: CUDA out of memory")
    assert math.isnan(oom["iters_per_s"])
    assert neumf["status"] == "ok" and neumf["iters_per_s"] > 0
    assert neumf["samples_per_s"] == pytest.approx(neumf["iters_per_s"] * 4)
    assert math.isnan(neumf["gpu_util"])  # no NVML on a CPU run
    assert observer.windows > 0

    again = Recorder()
    second = sweep_single(configs, ResultTable(path, "single"), profiler_fakes.resolve, settings, again)
    assert (second.measured, second.skipped) == (0, 2)
    assert again.started == []
    pd_rows = read_single_table(path)
    assert len(pd_rows) == 2

    retry = sweep_single(
        configs,
        ResultTable(path, "single"),
        profiler_fakes.resolve,
        settings,
        Recorder(),
        retry_failed=True,
    )
    assert (retry.measured, retry.failed, retry.skipped) == (1, 1, 1)
    assert len(read_single_table(path)) == 2  # the retried row replaced, not duplicated


def test_a_worker_that_dies_is_recorded_with_its_signal() -> None:
    settings = quick_settings()
    outcome = run_jobs([JobRequest(profiler_fakes.resolve("Killed"), 4, False, 1)], settings)
    assert not outcome.ok
    assert "Killed" in outcome.error and "SIGKILL" in outcome.error


def test_two_cpu_workloads_share_the_machine_and_give_a_valid_pair_table(
    tmp_path: Path,
) -> None:
    settings = quick_settings()
    single_path, pair_path = tmp_path / "single.csv", tmp_path / "pair.parquet"
    pair = PairConfig(config("TD3", 8), config("NeuMF", 8))
    observer = Recorder()

    summary = sweep_pairs(
        [pair],
        ResultTable(pair_path, "pair"),
        ResultTable(single_path, "single"),
        profiler_fakes.resolve,
        settings,
        observer,
    )

    assert summary.measured == 1
    # then, if the pair seemed faster shared than alone, both solo runs and the pair once more
    assert observer.started[:3] == ["TD3 bs8 (alone)", "NeuMF bs8 (alone)", "TD3 bs8 + NeuMF bs8"]
    assert len(observer.started) in (3, 6)
    solo = read_single_table(single_path)
    assert list(solo["model"]) == ["TD3", "NeuMF"] and set(solo["status"]) == {"ok"}
    row: dict[str, Any] = read_pair_table(pair_path).iloc[0].to_dict()
    assert (row["model1"], row["model2"]) == ("TD3", "NeuMF")
    assert row["iters_per_s1"] > 0 and row["iters_per_s2"] > 0
    if row["status"] == "ok":
        assert row["speed1"] == pytest.approx(row["iters_per_s1"] / solo.iloc[0]["iters_per_s"])
        assert row["speed2"] == pytest.approx(row["iters_per_s2"] / solo.iloc[1]["iters_per_s"])
    else:  # a noisy shared machine can make a solo run look too slow; that is flagged, not hidden
        assert "solo measurement is suspect" in row["error"]

    again = sweep_pairs(
        [PairConfig(pair.second, pair.first)],
        ResultTable(pair_path, "pair"),
        ResultTable(single_path, "single"),
        profiler_fakes.resolve,
        settings,
        Recorder(),
    )
    assert (again.measured, again.skipped) == (0, 1)  # measured either way round is measured


def test_a_pair_whose_solo_run_fails_is_recorded_without_running(
    tmp_path: Path,
) -> None:
    settings = quick_settings()
    observer = Recorder()
    sweep_pairs(
        [PairConfig(config("OOM"), config("OOM"))],
        ResultTable(tmp_path / "pair.csv", "pair"),
        ResultTable(tmp_path / "single.csv", "single"),
        profiler_fakes.resolve,
        settings,
        observer,
    )
    row = read_pair_table(tmp_path / "pair.csv").iloc[0]
    assert row["status"] == "failed" and row["error"].startswith(
        "solo run of OOM bs4 failed: OOM: out of memory"
    )
    assert observer.started == ["OOM bs4 (alone)"]  # solo measured once, the pair never started


def test_a_job_on_two_devices_trains_with_distributed_data_parallel() -> None:
    settings = quick_settings()
    outcome = run_jobs([JobRequest(profiler_fakes.resolve("PPO"), 8, False, 2)], settings)
    assert outcome.ok, outcome.error
    assert outcome.jobs[0].iters_per_s > 0


def test_ctrl_c_during_a_run_ends_the_workers_and_leaves_a_valid_table(
    tmp_path: Path,
) -> None:
    settings = quick_settings()

    class InterruptOnFirstWindowOfSecondRun(Recorder):
        def on_window(self, job: int, iters_per_s: float, samples_per_s: float, gpu_util: float) -> None:
            if len(self.started) == 2:
                raise KeyboardInterrupt

    path = tmp_path / "single.csv"
    with pytest.raises(KeyboardInterrupt):
        sweep_single(
            [config("Linear"), config("NeuMF")],
            ResultTable(path, "single"),
            profiler_fakes.resolve,
            settings,
            InterruptOnFirstWindowOfSecondRun(),
        )
    table = read_single_table(path)
    assert list(table["model"]) == ["Linear"]
    assert multiprocessing.active_children() == []
