"""The tables our profiler measured on an H100 (traces/profiles/measured/h100): committed, picked by name,
answered for any pair, and never taken as the default behind the user's back."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from simcluster.colocation.loader import committed_measurements, default_model, load_colocation_model
from simcluster.colocation.schema import read_pair_table, read_single_table
from simcluster.errors import TraceError
from simcluster.job import Workload

H100 = committed_measurements()["h100"]
MODELS = ("ResNet18", "MobileNetV2", "EfficientNet", "VGG", "ResNet50", "MobileNetV3", "BERT", "Transformer",
          "LSTM", "DCGAN", "PointNet", "NeuMF", "PPO", "TD3")


def test_the_h100_tables_are_valid_measured_on_a_gpu_and_cover_every_workload() -> None:
    single, pair = read_single_table(H100 / "single.csv"), read_pair_table(H100 / "pair.csv")
    assert set(single["model"]) == set(MODELS) and (single["status"] == "ok").all()
    partners = {m: set() for m in MODELS}
    for a, b in zip(pair["model1"], pair["model2"], strict=True):
        partners[a].add(b)
        partners[b].add(a)
    assert min(len(p - {m}) for m, p in partners.items()) >= 4  # every workload met several others
    metadata = json.loads((H100 / "metadata.json").read_text())
    assert metadata["measured"] is True and metadata["device_name"].startswith("NVIDIA H100")
    for table in metadata["tables"].values():
        assert table["environment"]["device"] == "cuda" and table["environment"]["driver"]
        assert table["environment"]["torch"]


def test_h100_by_name_answers_every_pair_from_its_measurements_or_a_counted_guess() -> None:
    model = load_colocation_model("h100")
    assert model.provenance["kind"] == "measured" and "H100" in model.source
    measured = read_pair_table(H100 / "pair.csv").iloc[1]  # ResNet18 + MobileNetV2, batch 32, no AMP
    a = Workload(measured.model1, measured.dataset1, 32, 0)
    b = Workload(measured.model2, measured.dataset2, 32, 0)
    assert model.pair_speeds(a, 1, b, 1) == pytest.approx((measured.speed1, measured.speed2))
    for m1 in MODELS:
        for m2 in MODELS:
            for batch, amp in ((32, 0), (128, 1)):
                speeds = model.pair_speeds(Workload(m1, "any", batch, amp), 1, Workload(m2, "any", 64, 0), 2)
                assert all(math.isfinite(s) and 0 < s <= 1 for s in speeds)
    assert model.fallback_counts()["exact"] >= 1 and sum(model.fallback_counts().values()) > 1


def test_the_default_model_does_not_take_the_committed_h100_table() -> None:
    assert default_model().provenance["kind"] == "calibrated"


def test_an_unknown_name_lists_the_names_that_work(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match="'h100'"):
        load_colocation_model(str(tmp_path / "nowhere"))
