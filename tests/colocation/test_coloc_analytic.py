"""The analytic colocation model, and default_model's choice between measured, calibrated and analytic models."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from coloc_tables import pair_row, pairs, single_row, singles
from hypothesis import given, settings
from hypothesis import strategies as st

from simcluster.colocation import TableError, read_pair_table, read_single_table, write_table
from simcluster.colocation.analytic import (
    ANALYTIC_SOURCE,
    ASSUMPTIONS,
    analytic_pair_speeds,
    analytic_pair_table,
    estimate_single_table,
    write_analytic_tables,
)
from simcluster.colocation.folders import PROFILES_DIR
from simcluster.colocation.loader import default_model, load_colocation_model
from simcluster.job import Workload
from simcluster.traces.errors import TraceError

utilization = st.floats(min_value=0.0, max_value=100.0, allow_nan=False)


# ----------------------------------------------------------------------------- the formula
@settings(max_examples=300, deadline=None)
@given(utilization, utilization, utilization)
def test_speeds_in_range_symmetric_and_decreasing_with_load(u1: float, u2: float, more: float) -> None:
    s1, s2 = analytic_pair_speeds(u1, u2)
    assert 0.0 < s1 <= 1.0 and 0.0 < s2 <= 1.0
    assert analytic_pair_speeds(u2, u1) == (s2, s1)
    heavier = min(100.0, u2 + more)
    t1, t2 = analytic_pair_speeds(u1, heavier)
    assert t1 <= s1 + 1e-9  # a busier partner never helps
    assert t2 <= s2 + 1e-9  # nor does being busier oneself


def test_formula_regimes() -> None:
    assert analytic_pair_speeds(0.0, 0.0) == (1.0, 1.0)
    assert analytic_pair_speeds(30.0, 40.0) == (0.96, 0.97)  # fits: interference only
    assert analytic_pair_speeds(100.0, 100.0) == (0.45, 0.45)  # two busy jobs: half each
    light, heavy = analytic_pair_speeds(10.0, 100.0)
    assert light == pytest.approx(0.9) and heavy == pytest.approx(0.9 * 0.99)
    below, above = analytic_pair_speeds(50.0, 49.999), analytic_pair_speeds(50.0, 50.001)
    assert below == pytest.approx(above, abs=1e-4)  # continuous at 100 %


# ----------------------------------------------------------------------------- the tables
def test_single_estimates_cover_the_workloads_and_behave() -> None:
    single = estimate_single_table()
    assert len(single) == len(ASSUMPTIONS) * 3 * 2 == 84
    assert single["model"].nunique() == 14 and (single["status"] == "ok").all()
    assert single["gpu_util"].between(0, 100).all() and (single["gmem"] > 0).all()
    for (_model, _amp), rows in single.groupby(["model", "amp"]):
        ordered = rows.sort_values("batchsize")
        assert ordered["gmem"].is_monotonic_increasing
        assert ordered["samples_per_s"].is_monotonic_increasing
    fp32 = single[single.amp == 0].set_index(["model", "batchsize"])["gmem"]
    amp = single[single.amp == 1].set_index(["model", "batchsize"])["gmem"]
    assert (amp <= fp32).all()


def test_pair_table_speeds_and_memory() -> None:
    single = estimate_single_table()
    pair = analytic_pair_table(single)
    assert len(pair) == 84 * 85 // 2
    assert pair["speed1"].between(0, 1, inclusive="right").all()
    assert pair["speed2"].between(0, 1, inclusive="right").all()
    memory = single.set_index(["model", "batchsize", "amp"])["gmem"]
    row = pair.iloc[100]
    assert (
        row.gmem
        == memory[(row.model1, row.batchsize1, row.amp1)] + memory[(row.model2, row.batchsize2, row.amp2)]
    )
    util = single.set_index(["model", "batchsize", "amp"])["gpu_util"]
    for row in pair.sample(50, random_state=0).itertuples():
        u1, u2 = util[(row.model1, row.batchsize1, row.amp1)], util[(row.model2, row.batchsize2, row.amp2)]
        assert (row.speed1, row.speed2) == analytic_pair_speeds(u1, u2)
        assert row.gpu_util == pytest.approx(min(100.0, u1 + u2))


def test_committed_tables_are_current(tmp_path: Path) -> None:
    """traces/profiles/analytic/ holds exactly what the generator writes."""
    folder = PROFILES_DIR / "analytic"
    single_path, pair_path = write_analytic_tables(tmp_path)
    pd.testing.assert_frame_equal(read_single_table(folder / "single.csv"), read_single_table(single_path))
    pd.testing.assert_frame_equal(read_pair_table(folder / "pair.csv"), read_pair_table(pair_path))
    readme = (folder / "README.md").read_text()
    assert "not measured" in readme and readme == (tmp_path / "README.md").read_text()


# ----------------------------------------------------------------------------- default_model
def test_default_model_needs_no_shared_data(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("SIMCLUSTER_DATA", str(tmp_path / "nowhere"))
    model = default_model()  # the calibrated model: parameters committed, tables computed from them
    assert model.provenance["kind"] == "calibrated"
    r18, bert = Workload("ResNet18", "CIFAR-10", 64, 1), Workload("BERT", "SQuAD", 32, 0)
    s1, s2 = model.pair_speeds(r18, 1, bert, 1)
    assert 0 < s1 < 1.0 and 0 < s2 < 1.0  # a busy pair: both slowed
    assert model.fallback_counts()["exact"] == 1
    assert model.memory_mib(bert, 1) > model.memory_mib(r18, 1)


def measured_folder(root: Path, name: str, measured: object = True, tables: bool = True) -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "metadata.json").write_text(json.dumps({"measured": measured, "device_name": "Test GPU"}))
    if tables:
        job = ("ResNet18", "CIFAR-10", 32, 0, 1)
        write_table(singles([single_row(job, gmem=1234, util=50)]), folder / "single.csv")
        write_table(pairs([pair_row(job, job, 0.6, 0.6)]), folder / "pair.parquet")
    return folder


def test_default_model_prefers_a_measured_table(tmp_path: Path) -> None:
    measured_folder(tmp_path, "a100", measured=False)
    folder = measured_folder(tmp_path, "h100")
    model = default_model(tmp_path)
    assert model.source.startswith("measured on Test GPU") and str(folder) in model.source
    r18 = Workload("ResNet18", "CIFAR-10", 32, 0)
    assert model.pair_speeds(r18, 1, r18, 1) == (0.6, 0.6)
    assert model.memory_mib(r18, 1) == 1234


def test_default_model_without_measured_tables_is_analytic(tmp_path: Path) -> None:
    measured_folder(tmp_path, "a100", measured="yes")  # only a literal true counts
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "metadata.json").write_text("{not json")
    model = default_model(tmp_path)  # no analytic/ folder here either: computed in memory
    assert model.source == ANALYTIC_SOURCE
    speeds = model.pair_speeds(
        Workload("VGG", "CIFAR-10", 64, 0), 1, Workload("PPO", "LunarLander", 32, 0), 1
    )
    assert np.all(np.isfinite(speeds))


def test_default_model_refuses_a_broken_measured_folder(tmp_path: Path) -> None:
    measured_folder(tmp_path, "h100", tables=False)
    with pytest.raises(TableError, match="single and pair tables are not both there"):
        default_model(tmp_path)
    with pytest.raises(TableError, match="single and pair tables are not both there"):
        default_model(tmp_path, gpu="h100")


def test_a_gpu_type_nobody_measured_gets_the_calibrated_model_unless_named_outright() -> None:
    assert default_model(gpu="a100").provenance["kind"] == "calibrated"
    assert load_colocation_model("default", ["a100"]).provenance["kind"] == "calibrated"
    with pytest.raises(TraceError, match="no tables measured on GPU type 'a100': measured types are 'h100'"):
        load_colocation_model("default@a100")
