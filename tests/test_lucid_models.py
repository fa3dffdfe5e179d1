"""Lucid's three models: each explanation's top term is the one that generated the target."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from simcluster.cli import app
from simcluster.estimators.ebm import FEATURES, fit_duration_model
from simcluster.models.additive import AdditivePredictor
from simcluster.models.explanation import term_importances
from simcluster.models.packing import PackingModel, sharing_labels
from simcluster.models.throughput import BIN, DAY, SubmissionSeries, ThroughputForecaster

rng = np.random.default_rng(7)


class TablesOnly:
    """A colocation model reduced to its measured tables and single-job lookups."""

    source = "synthetic tables"

    def __init__(self, single: pd.DataFrame, pair: pd.DataFrame) -> None:
        self.single, self.pair = single, pair
        self._by_model = single.set_index("model")

    def solo_util(self, w, gpus):
        return float(self._by_model.at[w.model, "gpu_util"])

    def solo_mem_util(self, w, gpus):
        return float(self._by_model.at[w.model, "gmem_util"])

    def memory_mib(self, w, gpus):
        return float(self._by_model.at[w.model, "gmem"])


def synthetic_tables(n: int = 60) -> TablesOnly:
    """Configurations whose sharing speed is decided by GPU utilization alone."""
    util = rng.uniform(5, 100, n)
    single = pd.DataFrame({"model": [f"m{i}" for i in range(n)], "dataset": "d", "batchsize": rng.choice([16, 32, 64], n),
                           "amp": rng.integers(0, 2, n), "gpu_num": 1, "gpu_util": util,
                           "gmem_util": rng.uniform(5, 80, n), "gmem": rng.uniform(1000, 20000, n)})
    speed = np.where(util > 70, 0.7, np.where(util > 40, 0.9, 0.99))
    rows = []
    for i in range(n):
        j = (i + 1) % n
        rows.append({**{f"{k}1": single.at[i, k] for k in ("model", "dataset", "batchsize", "amp", "gpu_num")},
                     **{f"{k}2": single.at[j, k] for k in ("model", "dataset", "batchsize", "amp", "gpu_num")},
                     "speed1": speed[i], "speed2": speed[i]})  # the measured speed follows the first job
    pair = pd.DataFrame(rows)
    # make each configuration's mean speed its own: pair it with itself only
    pair[[f"{k}2" for k in ("model", "dataset", "batchsize", "amp", "gpu_num")]] = \
        pair[[f"{k}1" for k in ("model", "dataset", "batchsize", "amp", "gpu_num")]].to_numpy()
    return TablesOnly(single, pair)


def test_packing_labels_follow_the_thresholds():
    tables = synthetic_tables()
    labels = sharing_labels(tables.pair, (0.85, 0.95)).set_index("model")["label"]
    util = tables.single.set_index("model")["gpu_util"]
    assert (labels[util > 70] == 2).all() and (labels[(util > 40) & (util <= 70)] == 1).all()
    assert (labels[util <= 40] == 0).all()


def test_packing_model_explains_with_gpu_utilization_and_scores_jobs():
    from simcluster.job import Workload

    tables = synthetic_tables()
    model = PackingModel(tables)
    assert term_importances(model.model)["term"].iloc[0] == "gpu_util"
    report = model.evaluate(folds=3)
    assert report["accuracy"] >= 0.8
    hottest = tables.single.loc[tables.single["gpu_util"].idxmax(), "model"]
    assert model.score(Workload(hottest, "d", 32, 0), 1) == 2


def test_workload_model_explains_with_the_feature_that_made_the_duration():
    n = 1500
    rows = pd.DataFrame({"user": rng.choice([f"u{i}" for i in range(20)], n), "vc": rng.choice(["a", "b"], n),
                         "gpu_num": rng.choice([1, 2, 4, 8, 16], n), "model": rng.choice(["x", "y", "z"], n),
                         "hour": rng.integers(0, 24, n), "weekday": rng.choice([str(d) for d in range(7)], n),
                         "user_recent": rng.uniform(2, 10, n), "user_gpus_recent": np.nan})
    durations = 60.0 * rows["gpu_num"].to_numpy() ** 2 * rng.uniform(0.9, 1.1, n)
    model = fit_duration_model(rows[FEATURES], durations)
    assert term_importances(model)["term"].iloc[0] == "gpu_num"
    fast = AdditivePredictor(model)  # the policy's per-job predictor is the EBM itself
    np.testing.assert_allclose([fast.predict(r) for r in rows[FEATURES].head(50).itertuples(index=False)],
                               model.predict(rows[FEATURES].head(50)), rtol=1e-12)


def test_throughput_model_explains_a_daily_cycle_with_the_hour():
    days = 10
    hours = (np.arange(days * DAY) // 6) % 24
    counts = rng.poisson(np.where((hours >= 9) & (hours < 18), 12.0, 1.0)).astype(float)
    forecaster = ThroughputForecaster(SubmissionSeries(0, counts), train_until=8 * DAY, quantile=0.5)
    assert term_importances(forecaster.model)["term"].iloc[0] in {"hour", "next_hour_yesterday"}
    assert forecaster.high(12 * 3600 + 8 * DAY * BIN) and not forecaster.high(2 * 3600 + 8 * DAY * BIN)


def test_explain_writes_importances_plots_and_figures(tmp_path):
    import matplotlib.image as mpimg

    result = CliRunner().invoke(app, ["explain", "--out", str(tmp_path), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    for name in ("packing", "workload", "throughput"):
        part = report[name]
        assert (tmp_path / f"{name}_importances.csv").is_file()
        assert part["plots"], name
        for plot in part["plots"]:
            image = mpimg.imread(tmp_path / plot)
            assert image.shape[:2] == (400, 640) and image.std() > 0
    assert 0 <= report["packing"]["accuracy"] <= 1
    assert report["workload"]["ebm"]["mae"] > 0 and report["throughput"]["mae"] >= 0
    assert json.loads((tmp_path / "explain.json").read_text())["trace"] == report["trace"]


def test_explain_on_a_missing_trace_fails_cleanly(tmp_path):
    result = CliRunner().invoke(app, ["explain", "--trace", str(tmp_path / "nope"), "--out", str(tmp_path / "o")])
    assert result.exit_code == 2 and "nope" in result.output
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("bad", ["time,submit_gpu_job\n2020-04-01 00:00:00,x\n", "when,n\n1,2\n"])
def test_a_bad_throughput_log_names_the_row_and_field(tmp_path, bad):
    from simcluster.models.throughput import read_throughput_log
    from simcluster.traces import TraceError

    path = tmp_path / "log.csv"
    path.write_text(bad)
    with pytest.raises(TraceError, match="submit_gpu_job|time"):
        read_throughput_log(path, "2020-04-01")


@pytest.mark.parametrize("labels", [3, 2])
def test_the_packing_scores_read_from_the_tables_are_the_classifiers_own(labels):
    from simcluster.job import Workload
    from simcluster.models.packing import FEATURES as PROFILE

    tables = synthetic_tables()
    if labels == 2:  # only "shares well" and "shares badly": a binary classifier, one logit
        tables.pair[["speed1", "speed2"]] = np.where(tables.pair[["speed1", "speed2"]] < 0.85, 0.7, 0.99)
    model = PackingModel(tables)
    assert len(model.classes) == labels
    for name, batch in zip(tables.single["model"], tables.single["batchsize"]):
        workload = Workload(name, "d", int(batch), 0)
        row = pd.DataFrame([model.profile(workload, 1)], columns=PROFILE)
        assert model.score(workload, 1) == model.model.predict(row)[0]


@settings(max_examples=40, deadline=None)
@given(first=st.integers(-5, 5), counts=st.lists(st.integers(0, 30), min_size=0, max_size=DAY * 8),
       beyond=st.integers(-10, 10))
def test_the_throughput_training_frame_holds_what_each_bin_knew(first, counts, beyond):
    series = SubmissionSeries(first, np.array(counts, dtype=float))
    upto = first + len(counts) + beyond
    rows, targets = series.training_frame(upto)
    bins = [b for b in range(first + 6, upto - 6 + 1) if not np.isnan(series.next_hour(b))]
    expected = pd.DataFrame([series.features(b) for b in bins], columns=rows.columns)
    pd.testing.assert_frame_equal(rows, expected, check_dtype=False, check_exact=True)
    np.testing.assert_array_equal(targets, [series.next_hour(b) for b in bins])


@pytest.mark.parametrize("growth, trained_on_days", [(0.0, [2, 3, 4, 5, 6, 7, 8, 9, 10, 11]), (0.5, [2, 3, 5, 8])])
def test_the_live_forecaster_retrains_daily_only_when_its_bins_grew_enough(growth, trained_on_days):
    counts = rng.poisson(5.0, 12 * DAY).astype(float)
    series = SubmissionSeries(0)
    forecaster = ThroughputForecaster(series, retrain_growth=growth)
    trained_at = []
    for b, n in enumerate(counts):
        series.record(b * BIN, n)
        forecaster.forecast(b * BIN)
        if len(trained_at) < forecaster.trainings:
            trained_at.append(b)
    assert trained_at == [day * DAY for day in trained_on_days]


def test_explain_refuses_an_unknown_boosting_naming_the_choices(tmp_path):
    result = CliRunner().invoke(app, ["explain", "--out", str(tmp_path), "--boosting", "slow"])
    assert result.exit_code == 2
    assert "boosting" in result.output and "fast, interpret" in result.output
    assert not (tmp_path / "explain.json").exists()



def test_a_jobs_memory_reaches_its_packing_score_not_the_first_jobs_of_its_workload():
    """The score is cached per workload, GPUs *and* memory: the memory is a feature of the profile classified, so a
    second job of the same workload with other memory gets its own answer (before, the first job's)."""
    from simcluster.job import Workload
    from simcluster.models.packing import FEATURES as PROFILE

    class ByMemory:  # a classifier that reads only the profile's memory, as a model trained on it may
        def classify(self, features):
            return 2 if features[PROFILE.index("gmem")] > 20_000 else 0

    model = PackingModel(synthetic_tables())
    model._predict = ByMemory()
    workload = Workload(synthetic_tables().single["model"].iloc[0], "d", 32, 0)
    assert [model.score(workload, 1, m) for m in (8_000.0, 40_000.0, 8_000.0)] == [0, 2, 0]
