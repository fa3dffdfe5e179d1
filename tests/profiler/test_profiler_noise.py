"""The noise report of a repeat stage: solo CVs and pair-speed spreads over rounds, each pair against its own
round's solo runs, and the distance to the main tables; from the CLI as tables or one JSON document."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from profiler.cli import app
from profiler.noise import measurement_noise, read_noise
from simcluster.colocation import write_table

JOB = {"dataset": "d", "amp": 0, "gpu_num": 1, "batchsize": 32}


def solo_row(model: str, iters: float, repeat: int | None = None) -> dict[str, object]:
    row = JOB | {"model": model, "iters_per_s": iters, "samples_per_s": iters * 32, "gpu_util": math.nan,
                 "gmem_util": math.nan, "gmem": math.nan, "torch_peak_mem": math.nan, "status": "ok", "error": ""}
    return row | ({"repeat": repeat} if repeat else {})


def pair_row(a: str, b: str, iters: tuple[float, float], speeds: tuple[float, float], repeat: int | None = None,
             status: str = "ok") -> dict[str, object]:
    row: dict[str, object] = {}
    for suffix, model in (("1", a), ("2", b)):
        row |= {f"{k}{suffix}": v for k, v in (JOB | {"model": model}).items()}
    row |= {"iters_per_s1": iters[0], "iters_per_s2": iters[1], "speed1": speeds[0] if status == "ok" else math.nan,
            "speed2": speeds[1] if status == "ok" else math.nan, "gpu_util": math.nan, "gmem_util": math.nan,
            "gmem": math.nan, "status": status, "error": "" if status == "ok" else "faster shared than alone"}
    return row | ({"repeat": repeat} if repeat else {})


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    write_table(pd.DataFrame([solo_row("A", 100.0, 1), solo_row("B", 50.0, 1),
                              solo_row("A", 80.0, 2), solo_row("B", 50.0, 2)]), tmp_path / "single_repeats.csv")
    # round 2's row is 'failed' (A looked faster shared than alone): its throughputs still count
    write_table(pd.DataFrame([pair_row("A", "B", (60.0, 40.0), (0.6, 0.8), 1),
                              pair_row("A", "B", (88.0, 30.0), (0, 0), 2, status="failed")]),
                tmp_path / "pair_repeats.csv")
    write_table(pd.DataFrame([solo_row("A", 180.0), solo_row("B", 45.0)]), tmp_path / "single.csv")
    write_table(pd.DataFrame([pair_row("B", "A", (1, 1), (0.5, 0.7))]), tmp_path / "pair.csv")  # the other order
    return tmp_path


def test_each_pair_is_judged_against_its_rounds_solo_runs_and_compared_with_the_tables(folder: Path) -> None:
    report = read_noise(folder)
    solo = report.solo.set_index("model")
    assert solo.at["A", "cv"] == pytest.approx(math.sqrt(200) / 90)  # 100 and 80
    assert solo.at["B", "cv"] == 0 and solo.at["A", "ratio"] == pytest.approx(90 / 180)
    [pair] = report.pairs.to_dict("records")
    assert (pair["job1"], pair["job2"], pair["rounds"]) == ("A bs32", "B bs32", 2)
    speeds_a = (0.6, 88 / 80)  # B: 40/50 and 30/50, mean 0.7
    assert pair["mean_speed1"] == pytest.approx(sum(speeds_a) / 2) and pair["mean_speed2"] == pytest.approx(0.7)
    assert pair["sd_speed1"] == pytest.approx(abs(speeds_a[1] - speeds_a[0]) / math.sqrt(2))
    assert (pair["table_speed1"], pair["table_speed2"]) == (0.7, 0.5)  # pair.csv holds it as B + A
    assert report.summary["pair_speed_mae_to_table"] == pytest.approx(
        (abs(sum(speeds_a) / 2 - 0.7) + abs(0.7 - 0.5)) / 2)
    assert report.summary["rounds"] == 2 and report.summary["pair_speeds_compared"] == 2


def test_one_round_gives_no_spread_but_still_the_distance_to_the_tables() -> None:
    report = measurement_noise(pd.DataFrame([solo_row("A", 100.0, 1)]), None,
                               pd.DataFrame([solo_row("A", 50.0)]), None)
    assert math.isnan(report.summary["solo_cv_median"]) and report.summary["solo_ratio_to_table_median"] == 2.0
    assert report.pairs.empty and math.isnan(report.summary["pair_speed_mae_to_table"])


def test_the_cli_prints_tables_or_exactly_one_json_document(folder: Path) -> None:
    runner = CliRunner()
    shown = runner.invoke(app, ["noise", str(folder)])
    assert shown.exit_code == 0 and "2 round(s)" in shown.output and "difference 0.175 over 2 speeds" in " ".join(shown.output.split())
    as_json = runner.invoke(app, ["noise", str(folder), "--json"])
    document = json.loads(as_json.stdout)
    assert document["summary"]["rounds"] == 2 and len(document["pairs"]) == 1
    missing = runner.invoke(app, ["noise", str(folder / "nothing")])
    assert missing.exit_code == 1 and "neither single_repeats.csv nor pair_repeats.csv" in missing.output
