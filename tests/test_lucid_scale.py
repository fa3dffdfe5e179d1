"""Lucid off the per-pass path: what it learned is kept, its passes cost what can change, decisions unchanged."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from test_lucid_models import TablesOnly

from simcluster.api import simulate
from simcluster.config import SimConfig
from simcluster.job import Workload
from simcluster.models import cache, packing
from simcluster.models.additive import AdditivePredictor
from simcluster.models.packing import PackingModel
from simcluster.models.throughput import BIN, DAY, SubmissionSeries, ThroughputForecaster
from simcluster.policies.lucid import Lucid
from simcluster.traces.synth import spec_from_text, synthesize

KEY = ("model", "dataset", "batchsize", "amp", "gpu_num")


def tables(n: int = 40, seed: int = 3) -> TablesOnly:
    """Configurations whose sharing speed follows their GPU utilization (three labels)."""
    rng = np.random.default_rng(seed)
    util = rng.uniform(5, 100, n)
    single = pd.DataFrame({"model": [f"m{i}" for i in range(n)], "dataset": "d", "batchsize": rng.choice([16, 32], n),
                           "amp": rng.integers(0, 2, n), "gpu_num": 1, "gpu_util": util,
                           "gmem_util": rng.uniform(5, 80, n), "gmem": rng.uniform(1000, 20000, n)})
    speed = np.where(util > 70, 0.7, np.where(util > 40, 0.9, 0.99))
    pair = pd.DataFrame({**{f"{k}1": single[k] for k in KEY}, **{f"{k}2": single[k] for k in KEY},
                         "speed1": speed, "speed2": speed})
    return TablesOnly(single, pair)


@pytest.fixture
def cache_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("SIMCLUSTER_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def scores(model: PackingModel, table: TablesOnly) -> list[int]:
    return [model.score(Workload(m, "d", int(b), int(a)), 1) for m, b, a in
            zip(table.single["model"], table.single["batchsize"], table.single["amp"])]


def test_a_cached_packing_model_answers_as_the_fitted_one_without_fitting(cache_folder, monkeypatch):
    table = tables()
    fitted = PackingModel(table, cached=True)
    assert fitted.model is not None and len(list(cache_folder.glob("packing-*.json"))) == 1
    monkeypatch.setattr(packing, "_fit", lambda *a: pytest.fail("fitted again"))
    kept = PackingModel(table, cached=True)
    assert kept.model is None  # (from the cache: no EBM)
    assert scores(kept, table) == scores(fitted, table)
    assert len(set(scores(fitted, table))) == 3  # every label occurs: the scores say something
    assert kept.top_terms(3) == fitted.top_terms(3) and fitted.top_terms(1) == ["gpu_util"]


def test_the_cached_evaluation_is_the_fitted_ones_key_for_key(cache_folder):
    table = tables()
    fresh = PackingModel(table).evaluate_for("synthetic")
    first = PackingModel(table, cached=True).evaluate_for("synthetic")
    again = PackingModel(table, cached=True).evaluate_for("synthetic")
    assert fresh == first == again
    assert list(again) == list(fresh) and list(again["labels"]) == list(fresh["labels"])  # (the summary's order)
    assert all(isinstance(k, int) for k in again["labels"])


def test_other_tables_or_labels_make_another_entry(cache_folder):
    PackingModel(tables(), cached=True)
    PackingModel(tables(seed=4), cached=True)
    PackingModel(tables(), thresholds=(0.6, 0.95), cached=True)  # 0.7 is now "some slowdown"
    assert len(list(cache_folder.glob("packing-*.json"))) == 3
    PackingModel(tables(), thresholds=(0.8, 0.95), cached=True)  # the same labels: the same classifier
    assert len(list(cache_folder.glob("packing-*.json"))) == 3


def test_a_damaged_entry_is_fitted_again_and_rewritten(cache_folder):
    table = tables()
    expected = scores(PackingModel(table), table)
    PackingModel(table, cached=True)
    (entry,) = cache_folder.glob("packing-*.json")
    entry.write_text('{"predictor": {"intercept": ')
    again = PackingModel(table, cached=True)
    assert again.model is not None and scores(again, table) == expected
    assert "predictor" in json.loads(entry.read_text())


def test_with_the_cache_off_nothing_is_written(tmp_path, monkeypatch):
    monkeypatch.setenv("SIMCLUSTER_CACHE", "off")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    model = PackingModel(tables(), cached=True)
    assert model.model is not None and cache.cache_dir() is None and not list(tmp_path.iterdir())


def test_a_classifiers_tables_give_its_logits_exactly():
    model = PackingModel(tables())
    fast = AdditivePredictor(model.model)
    again = AdditivePredictor.from_tables(json.loads(json.dumps(fast.tables())))
    rows = [[model.profile(Workload(m, "d", 32, 0), 1)[f] for f in packing.FEATURES] for m in ("m1", "m7")]
    rows += [[55.0, float("nan"), 4000.0, 1, 8, "never seen"]]  # a missing value, an unknown category
    for row in rows:
        assert np.array_equal(fast.predict(row), again.predict(row)) and fast.classify(row) == again.classify(row)


def test_the_forecasters_answer_per_bin_follows_a_threshold_moved_by_training():
    counts = np.random.default_rng(5).poisson(np.tile(np.repeat([1.0, 9.0], 72), 4)).astype(float)
    series, plain = SubmissionSeries(0), SubmissionSeries(0)
    forecaster, reference = ThroughputForecaster(series), ThroughputForecaster(plain)
    answers, expected = [], []
    for b, n in enumerate(counts):
        series.record(b * BIN, n)
        plain.record(b * BIN, n)
        for now in (b * BIN, b * BIN + 300):  # twice per bin: the second from the memo
            answers.append(forecaster.high(now))
            expected.append(reference._is_high(reference.forecast(now)))
    assert forecaster.trainings >= 2 and len(counts) > 2 * DAY
    assert answers == expected and 0 < sum(answers) < len(answers)


def lucid_run(spec: str, **settings):
    result = simulate(synthesize(spec_from_text(spec)), SimConfig(policy="lucid", **settings))
    return result.jobs[["job_id", "start_time", "end_time", "shared_seconds"]], result.summary


@pytest.mark.parametrize("sharing", ["always", "adaptive"])
def test_walking_the_queue_per_gpu_count_makes_the_same_decisions(sharing, cache_folder, monkeypatch):
    # a congested cluster: long queues of multi-node jobs behind which small jobs pair and backfill
    spec = ("jobs=1500,nodes=8,sizes=1:0.4,2:0.1,4:0.1,8:0.2,16:0.1,32:0.1,durations=lognormal:mu=7,sigma=1.5,"
            "max=20000,arrivals=poisson,load=1.5,vcs=1,seed=2")
    monkeypatch.setattr(Lucid, "walk_by_size_from", float("inf"))
    one_walk, summary = lucid_run(spec, lucid_sharing=sharing)
    monkeypatch.setattr(Lucid, "walk_by_size_from", 0)
    by_size, again = lucid_run(spec, lucid_sharing=sharing)
    pd.testing.assert_frame_equal(one_walk, by_size)
    assert summary["lucid"]["paired"] > 0 and (one_walk["shared_seconds"] > 0).any()  # pairs were made
    assert summary["max_queue"] > 0 and summary["lucid"] == again["lucid"]


def test_a_cache_folder_that_cannot_be_written_only_costs_the_fit(tmp_path, monkeypatch):
    blocker = tmp_path / "a file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("SIMCLUSTER_CACHE", str(blocker / "cache"))
    table = tables()
    assert scores(PackingModel(table, cached=True), table) == scores(PackingModel(table), table)
    assert blocker.read_text() == "not a folder"
