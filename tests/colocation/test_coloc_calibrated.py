"""The calibrated colocation model: its rule, its committed fit, and its place in the order of preference."""

from __future__ import annotations

import json
import math
import shutil
from functools import cache
from pathlib import Path

import numpy as np
import pytest
from coloc_tables import lucid_folder
from hypothesis import given, settings
from hypothesis import strategies as st

from simcluster.colocation import TableError, validate_pair_table, validate_single_table
from simcluster.colocation.analytic import ANALYTIC_SOURCE
from simcluster.colocation.calibrated import (
    CALIBRATED_DIR,
    PARAMETERS_FILE,
    Calibration,
    calibrated_model,
    calibrated_tables,
    contention_speed,
    read_calibration,
)
from simcluster.colocation.folders import PROFILES_DIR
from simcluster.colocation.loader import default_model, load_colocation_model
from simcluster.colocation.model import FLOOR, ColocationModel
from simcluster.job import Workload

fraction = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)
positive = st.floats(min_value=1e-3, max_value=50.0, allow_nan=False)
exponent = st.floats(min_value=0.05, max_value=8.0, allow_nan=False)


@cache
def committed() -> Calibration:
    return read_calibration()


@cache
def model() -> ColocationModel:
    return calibrated_model()


# ----------------------------------------------------------------------------- the rule
@settings(max_examples=300, deadline=None)
@given(fraction, fraction, fraction, positive, exponent, exponent, positive, positive)
def test_the_contention_rule_gives_a_speed_in_range_that_a_busier_partner_never_raises(
    mine: float, theirs: float, more: float, kappa: float, a: float, b: float, sensitivity: float, intensity: float
) -> None:
    rule = {"kappa": kappa, "own_exponent": a, "partner_exponent": b, "sensitivity": sensitivity,
            "intensity": intensity}
    speed = contention_speed(mine, theirs, **rule)
    assert math.isfinite(speed) and 0.0 < speed <= 1.0
    assert contention_speed(mine, min(1.0, theirs + more), **rule) <= speed + 1e-12
    assert contention_speed(min(1.0, mine + more), theirs, **rule) <= speed + 1e-12


def test_two_busy_jobs_each_run_at_one_over_one_plus_kappa() -> None:
    assert contention_speed(1.0, 1.0, kappa=0.75, own_exponent=1.3, partner_exponent=1.6) == pytest.approx(1 / 1.75)
    assert contention_speed(0.0, 1.0, kappa=0.75, own_exponent=1.3, partner_exponent=1.6) == 1.0  # idle GPU side


# ----------------------------------------------------------------------------- the committed model
def test_the_committed_tables_are_valid_and_cover_every_workload_batch_and_amp() -> None:
    single, pair = calibrated_tables(committed())
    validate_single_table(single, "calibrated single")
    validate_pair_table(pair, "calibrated pair")
    assert len(single) == 14 * 3 * 2 and len(pair) == 84 * 85 // 2
    assert single["gpu_util"].between(0, 100).all() and (single["gmem"] > 0).all()
    assert pair["speed1"].between(FLOOR, 1.0).all() and pair["speed2"].between(FLOOR, 1.0).all()


kinds = st.sampled_from([("ResNet18", "CIFAR-10"), ("BERT", "SQuAD"), ("PPO", "LunarLander"),
                         ("MobileNetV3", "ImageNet"), ("ResNet18", "ImageNet"), ("Unknown", "nothing")])
jobs = st.tuples(kinds, st.integers(min_value=1, max_value=1 << 16), st.sampled_from([0, 1]),
                 st.integers(min_value=1, max_value=256))


@settings(max_examples=200, deadline=None)
@given(jobs, jobs)
def test_the_calibrated_model_answers_any_pair_finite_clamped_and_symmetric(a: tuple, b: tuple) -> None:
    (kind_a, bs_a, amp_a, gpus_a), (kind_b, bs_b, amp_b, gpus_b) = a, b
    wa, wb = Workload(*kind_a, bs_a, amp_a), Workload(*kind_b, bs_b, amp_b)
    s1, s2 = model().pair_speeds(wa, gpus_a, wb, gpus_b)
    for speed in (s1, s2):
        assert math.isfinite(speed) and 0.0 < speed <= 1.0
    assert model().pair_speeds(wb, gpus_b, wa, gpus_a) == (s2, s1)
    assert math.isfinite(model().memory_mib(wa, gpus_a)) and model().memory_mib(wa, gpus_a) > 0


def test_a_busy_pair_is_slowed_more_than_a_light_one() -> None:
    r50, r18 = Workload("ResNet50", "ImageNet", 64, 0), Workload("ResNet18", "CIFAR-10", 128, 0)
    td3 = Workload("TD3", "BipedalWalker", 32, 0)
    busy, _ = model().pair_speeds(r50, 1, r18, 1)
    light, _ = model().pair_speeds(td3, 1, r18, 1)
    assert busy < 0.75 and light > 0.95


def test_a_job_on_many_gpus_meets_its_partner_as_a_one_gpu_job_would() -> None:
    fresh = calibrated_model()
    r18, lstm = Workload("ResNet18", "CIFAR-10", 64, 0), Workload("LSTM", "Wikitext2", 128, 1)
    assert fresh.pair_speeds(r18, 8, lstm, 2) == fresh.pair_speeds(r18, 1, lstm, 1)
    assert fresh.memory_mib(r18, 8) == fresh.memory_mib(r18, 1)  # memory per GPU
    assert fresh.fallback_counts() == {"exact": 2, "interpolated": 0, "model_pair": 0, "model_average": 0,
                                       "default": 0}


def test_its_provenance_names_the_public_data_and_its_error() -> None:
    provenance = model().provenance
    assert provenance["kind"] == "calibrated"
    assert "Lucid" in provenance["description"] and "not measured" in provenance["description"]
    assert provenance["fit"]["mae_in_sample"] <= 0.06
    assert provenance["fit"]["mae_leave_one_workload_out"] <= 0.08


# ----------------------------------------------------------------------------- against the public table
def test_the_default_model_predicts_lucids_measured_pair_speeds_within_the_targets() -> None:
    lucid_folder()  # or skip: the public table is not in the repository
    from simcluster.colocation.calibrate import pair_rows, predictions, scores
    from simcluster.colocation.importers import import_lucid

    _, pair = import_lucid()
    rows = pair_rows(pair)
    default = default_model()
    assert default.provenance["kind"] == "calibrated"  # no GPU-measured table is committed
    figures = scores(predictions(default, rows), rows.speed)
    assert figures["nan"] == 0 and figures["out_of_range"] == 0
    assert figures["mae"] <= 0.06
    assert figures["mae"] == pytest.approx(committed().fit["mae_in_sample"], abs=1e-4)  # the report is honest
    assert figures["corr"] > 0.7


def test_a_workload_the_pair_fit_never_saw_is_still_predicted_well() -> None:
    lucid_folder()
    from simcluster.colocation.calibrate import deployed, fit_pairs, pair_rows, predictions, scores
    from simcluster.colocation.importers import import_lucid

    _, pair = import_lucid()
    rows = pair_rows(pair)
    without = fit_pairs(committed(), rows, exclude="ResNet18")  # stage 1 as committed; its pairs unseen
    assert without.workload("ResNet18").sensitivity == 1.0
    held = rows.take(rows.involving("ResNet18"))
    assert scores(predictions(deployed(without), held), held.speed)["mae"] <= 0.08


def test_calibrate_writes_parameters_report_and_plot_that_load(tmp_path: Path) -> None:
    lucid_folder()
    from simcluster.colocation.calibrate import main

    out = tmp_path / "calibrated"
    assert main(["--out", str(out), "--no-folds"]) == 0
    assert sorted(p.name for p in out.iterdir()) == [".simcluster.json", "README.md", "fit.png", PARAMETERS_FILE]
    assert (out / "fit.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "| **calibrated (the default)** |" in (out / "README.md").read_text()
    fitted = load_colocation_model(str(out))
    assert fitted.provenance["kind"] == "calibrated" and fitted.provenance["fit"]["mae_in_sample"] <= 0.06


def test_calibrate_without_the_public_data_fails_cleanly_and_writes_nothing(tmp_path: Path, capsys) -> None:
    from simcluster.colocation.calibrate import main

    out = tmp_path / "calibrated"
    assert main(["--out", str(out), "--lucid", str(tmp_path / "nowhere"), "--no-folds"]) == 2
    assert "nowhere" in capsys.readouterr().err
    assert not out.exists() and list(tmp_path.iterdir()) == []


# ----------------------------------------------------------------------------- parameters.json
def test_a_broken_parameters_file_is_reported_with_its_field(tmp_path: Path) -> None:
    document = json.loads((CALIBRATED_DIR / PARAMETERS_FILE).read_text())
    document["constants"]["kappa"] = "high"
    (tmp_path / PARAMETERS_FILE).write_text(json.dumps(document))
    with pytest.raises(TableError, match=r"parameters.json, constants, field 'kappa'"):
        calibrated_model(tmp_path)
    (tmp_path / PARAMETERS_FILE).write_text("{not json")
    with pytest.raises(TableError, match="not valid JSON"):
        calibrated_model(tmp_path)


def test_parameters_survive_a_round_trip() -> None:
    assert Calibration.from_json(committed().to_json()) == committed()


# ----------------------------------------------------------------------------- order of preference
def profiles_with_calibration(root: Path) -> Path:
    (root / "calibrated").mkdir(parents=True)
    shutil.copy(CALIBRATED_DIR / PARAMETERS_FILE, root / "calibrated" / PARAMETERS_FILE)
    return root


def gpu_folder(root: Path, name: str, measured: object) -> None:
    from coloc_tables import pair_row, pairs, single_row, singles

    from simcluster.colocation import write_table

    folder = root / name
    folder.mkdir()
    (folder / "metadata.json").write_text(json.dumps({"measured": measured, "device_name": "Test GPU"}))
    job = ("ResNet18", "CIFAR-10", 32, 0, 1)
    write_table(singles([single_row(job, gmem=1234, util=50)]), folder / "single.csv")
    write_table(pairs([pair_row(job, job, 0.6, 0.6)]), folder / "pair.csv")


def test_a_table_measured_on_a_gpu_wins_over_the_calibrated_model(tmp_path: Path) -> None:
    root = profiles_with_calibration(tmp_path)
    gpu_folder(root, "rtx4090", measured=True)
    chosen = default_model(root)
    assert chosen.provenance["kind"] == "measured" and chosen.provenance["device"] == "Test GPU"
    r18 = Workload("ResNet18", "CIFAR-10", 32, 0)
    assert chosen.pair_speeds(r18, 1, r18, 1) == (0.6, 0.6)


def test_a_table_measured_on_a_cpu_does_not(tmp_path: Path) -> None:
    root = profiles_with_calibration(tmp_path)
    gpu_folder(root, "cpu", measured=False)
    assert default_model(root).provenance["kind"] == "calibrated"


def test_without_a_calibration_the_analytic_model_is_the_last_resort(tmp_path: Path) -> None:
    chosen = default_model(tmp_path)
    assert chosen.source == ANALYTIC_SOURCE and chosen.provenance["kind"] == "analytic"


def test_the_repository_default_is_the_calibrated_model_until_a_gpu_table_is_committed() -> None:
    measured = [p for p in PROFILES_DIR.iterdir() if (p / "metadata.json").is_file()
                and json.loads((p / "metadata.json").read_text()).get("measured") is True]
    expected = "measured" if measured else "calibrated"
    assert load_colocation_model("default").provenance["kind"] == expected
    assert load_colocation_model("calibrated").provenance["kind"] == "calibrated"
    assert load_colocation_model("analytic").provenance["kind"] == "analytic"


# ----------------------------------------------------------------------------- run outputs
def test_a_sharing_run_names_its_colocation_model_and_provenance(tmp_path: Path, capsys) -> None:
    from simcluster.cli import main as sim_main
    from simcluster.traces.synth import SynthSpec, save_trace, synthesize

    trace = synthesize(SynthSpec(jobs=120, nodes=2, vcs=1, seed=5, load=1.5))
    trace.frame["model"], trace.frame["dataset"] = "ResNet18", "CIFAR-10"
    trace.frame["batchsize"], trace.frame["amp"] = 64, 0
    save_trace(trace, tmp_path / "trace")
    for flags in (["--json"], []):
        with pytest.raises(SystemExit) as exited:
            sim_main(["run", "--trace", str(tmp_path / "trace"), "--policy", "srtf-wrs", "--out",
                      str(tmp_path / f"run{len(flags)}"), *flags])
        assert exited.value.code == 0
    printed = capsys.readouterr().out
    summary = json.loads(printed.splitlines()[0])
    assert summary["colocation_provenance"]["kind"] == "calibrated"
    assert summary["colocation"].startswith("calibrated model")
    assert set(summary["colocation_fallbacks"]) >= {"exact", "default"}
    saved = json.loads((tmp_path / "run1" / "summary.json").read_text())
    assert saved["colocation_provenance"] == summary["colocation_provenance"]
    assert "colocation model: calibrated model fitted to Lucid" in printed  # the Rich summary says it too
    assert np.isfinite(summary["avg_jct"])
