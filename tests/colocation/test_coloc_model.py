"""ColocationModel: exact lookups, every fallback step, symmetry, clamps, single-job lookups."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest
from coloc_tables import lucid_folder, pair_row, pairs, single_row, singles

from simcluster.colocation import TableError
from simcluster.colocation.model import (
    DEFAULT_MEMORY_MIB,
    DEFAULT_UTIL,
    FALLBACK_STEPS,
    FLOOR,
    NEUTRAL_SPEED,
    ColocationModel,
)
from simcluster.colocation.schema import SPEED_MAX
from simcluster.job import Workload

R18 = ("ResNet18", "CIFAR-10")
VGG = ("VGG", "CIFAR-10")
LSTM = ("LSTM", "Wikitext2")
BERT = ("BERT", "SQuAD")


def job(kind: tuple[str, str], batch: int, amp: int = 0, gpus: int = 1) -> tuple[str, str, int, int, int]:
    return (*kind, batch, amp, gpus)


def w(kind: tuple[str, str], batch: int, amp: int = 0) -> Workload:
    return Workload(*kind, batch, amp)


def grid_model(**kwargs: object) -> ColocationModel:
    """ResNet18 x VGG measured on a 2 x 2 grid of batch sizes (amp 0); LSTM with ResNet18 once."""
    rows = [
        pair_row(job(R18, 32), job(VGG, 32), 0.90, 0.80),
        pair_row(job(R18, 32), job(VGG, 128), 0.70, 0.85),
        pair_row(job(R18, 128), job(VGG, 32), 0.80, 0.60),
        pair_row(job(R18, 128), job(VGG, 128), 0.60, 0.65),
        pair_row(job(LSTM, 64), job(R18, 64), 0.50, 0.95),
    ]
    return ColocationModel(singles([]), pairs(rows), source="grid", **kwargs)  # type: ignore[arg-type]


# ----------------------------------------------------------------------------- exact + symmetry
def test_exact_lookup_in_both_orientations() -> None:
    model = grid_model()
    assert model.pair_speeds(w(R18, 32), 1, w(VGG, 128), 1) == (0.70, 0.85)
    assert model.pair_speeds(w(VGG, 128), 1, w(R18, 32), 1) == (0.85, 0.70)
    assert model.fallback_counts() == {
        "exact": 2,
        "interpolated": 0,
        "model_pair": 0,
        "model_average": 0,
        "default": 0,
    }


def test_both_orientations_measured_are_averaged() -> None:
    rows = [pair_row(job(R18, 32), job(VGG, 32), 0.9, 0.5), pair_row(job(VGG, 32), job(R18, 32), 0.7, 0.8)]
    model = ColocationModel(singles([]), pairs(rows))
    s1, s2 = model.pair_speeds(w(R18, 32), 1, w(VGG, 32), 1)
    assert s1 == pytest.approx(0.85) and s2 == pytest.approx(0.6)


def test_identical_jobs_get_identical_speeds() -> None:
    rows = [pair_row(job(R18, 32), job(R18, 32), 0.9, 0.7), pair_row(job(R18, 128), job(R18, 128), 0.6, 0.5)]
    model = ColocationModel(singles([]), pairs(rows))
    exact = model.pair_speeds(w(R18, 32), 1, w(R18, 32), 1)
    assert exact == pytest.approx((0.8, 0.8))
    interpolated = model.pair_speeds(w(R18, 64), 1, w(R18, 64), 1)
    assert interpolated[0] == interpolated[1]
    assert model.fallback_counts()["interpolated"] == 1


def test_failed_rows_are_ignored() -> None:
    rows = [
        pair_row(job(R18, 32), job(VGG, 32), 0.9, 0.8),
        pair_row(job(R18, 64), job(VGG, 64), 0, 0, "failed"),
    ]
    model = ColocationModel(singles([]), pairs(rows))
    model.pair_speeds(w(R18, 64), 1, w(VGG, 64), 1)
    assert model.fallback_counts()["exact"] == 0


# ----------------------------------------------------------------------------- fallback steps
def test_interpolated_between_measured_batch_sizes() -> None:
    model = grid_model()
    s1, s2 = model.pair_speeds(w(R18, 64), 1, w(VGG, 64), 1)
    assert model.fallback_counts()["interpolated"] == 1
    assert 0.6 <= s1 <= 0.9 and 0.6 <= s2 <= 0.85
    # a larger partner slows ResNet18 down: the grid's trend is followed, not averaged away
    small_partner, _ = model.pair_speeds(w(R18, 64), 1, w(VGG, 32), 1)
    big_partner, _ = model.pair_speeds(w(R18, 64), 1, w(VGG, 128), 1)
    assert big_partner < small_partner


def test_far_outside_the_measured_range_still_answers() -> None:
    model = grid_model()
    for a, na, b, nb in [
        (w(R18, 4096), 64, w(VGG, 1), 64),
        (w(R18, 1), 1, w(VGG, 100_000), 512),
        (w(R18, 7), 3, w(VGG, 3), 5),
    ]:
        s1, s2 = model.pair_speeds(a, na, b, nb)
        assert math.isfinite(s1) and math.isfinite(s2)
        assert FLOOR <= s1 <= 1.0 and FLOOR <= s2 <= 1.0
    assert model.fallback_counts()["interpolated"] == 3


def test_model_pair_when_only_other_settings_were_measured() -> None:
    model = grid_model()
    # AMP on was never measured for this model pair, nor ImageNet for ResNet18
    s1, s2 = model.pair_speeds(w(R18, 32, amp=1), 1, w(VGG, 32, amp=1), 1)
    model.pair_speeds(Workload("ResNet18", "ImageNet", 32, 0), 1, w(VGG, 32), 1)
    assert model.fallback_counts()["model_pair"] == 2
    assert 0.5 < s1 < 1.0 and 0.5 < s2 < 1.0


def test_model_average_when_the_models_never_met() -> None:
    model = grid_model()
    # VGG and LSTM were each measured with ResNet18, never together; BERT never at all
    vgg, lstm = model.pair_speeds(w(VGG, 64), 1, w(LSTM, 64), 1)
    model.pair_speeds(w(BERT, 32), 1, w(LSTM, 64), 1)
    assert model.fallback_counts()["model_average"] == 2
    assert lstm < vgg  # LSTM was slowed far more by its partner than VGG was


def test_default_for_unknown_models_is_the_mean_measured_speed() -> None:
    model = grid_model()
    speeds = model.pair_speeds(w(BERT, 32), 1, Workload("GPT", "web", 8, 1), 1)
    mean = np.mean([0.9, 0.8, 0.7, 0.85, 0.8, 0.6, 0.6, 0.65, 0.5, 0.95])
    assert speeds == pytest.approx((mean, mean))
    assert model.fallback_counts()["default"] == 1


def test_empty_pair_table_gives_the_neutral_default() -> None:
    model = ColocationModel(singles([]), pairs([]), source="empty")
    assert model.pair_speeds(w(R18, 32), 1, w(VGG, 64), 2) == (NEUTRAL_SPEED, NEUTRAL_SPEED)
    assert model.fallback_counts()["default"] == 1
    assert model.memory_mib(w(R18, 32), 1) == DEFAULT_MEMORY_MIB
    assert model.solo_util(w(R18, 32), 1) == DEFAULT_UTIL


def test_counts_every_call_even_when_cached() -> None:
    model = grid_model()
    for _ in range(3):
        model.pair_speeds(w(R18, 64), 1, w(VGG, 64), 1)
        model.pair_speeds(w(VGG, 64), 1, w(R18, 64), 1)
    counts = model.fallback_counts()
    assert set(counts) == set(FALLBACK_STEPS) and counts["interpolated"] == 6
    model.reset_counts()
    assert sum(model.fallback_counts().values()) == 0


# ----------------------------------------------------------------------------- clamps and errors
def test_measured_speeds_are_clamped_unless_the_ceiling_is_raised() -> None:
    rows = [pair_row(job(R18, 32), job(VGG, 32), 1.3, 0.01)]
    assert ColocationModel(singles([]), pairs(rows)).pair_speeds(w(R18, 32), 1, w(VGG, 32), 1) == (1.0, FLOOR)
    raised = ColocationModel(singles([]), pairs(rows), ceiling=SPEED_MAX, floor=0.001)
    assert raised.pair_speeds(w(R18, 32), 1, w(VGG, 32), 1) == (1.3, 0.01)


def test_deployed_answers_are_the_unbounded_ones_clipped() -> None:
    """Clamping is the last operation (the benchmark relies on it)."""
    rows = [pair_row(job(R18, b1), job(VGG, b2), s1, s2) for b1, b2, s1, s2 in
            [(32, 32, 1.2, 0.9), (32, 128, 1.1, 1.4), (128, 32, 0.9, 1.05), (128, 128, 0.7, 0.8)]]  # fmt: skip
    bounded = ColocationModel(singles([]), pairs(rows))
    unbounded = ColocationModel(singles([]), pairs(rows), ceiling=SPEED_MAX)
    for b1 in (16, 32, 64, 128, 512):
        for b2 in (16, 64, 128):
            raw = unbounded.pair_speeds(w(R18, b1), 1, w(VGG, b2), 1)
            assert bounded.pair_speeds(w(R18, b1), 1, w(VGG, b2), 1) == pytest.approx(
                np.clip(raw, FLOOR, 1.0)
            )


def test_bad_arguments_and_tables_are_refused() -> None:
    model = grid_model()
    with pytest.raises(ValueError, match="batch size"):
        model.pair_speeds(w(R18, 0), 1, w(VGG, 32), 1)
    with pytest.raises(ValueError, match="GPU count"):
        model.memory_mib(w(R18, 32), 0)
    with pytest.raises(ValueError, match="floor"):
        ColocationModel(singles([]), pairs([]), floor=0.5, ceiling=0.4)
    bad = pairs([pair_row(job(R18, 32), job(VGG, 32), 0.9, 3.0)])
    with pytest.raises(TableError, match="speed2"):
        ColocationModel(singles([]), bad, source="bad.csv")
    with pytest.raises(ValueError, match="quantity"):
        model.fallback_counts("speed")


# ----------------------------------------------------------------------------- single jobs
def single_model() -> ColocationModel:
    rows = [
        single_row(job(R18, 32), gmem=1000, util=40),
        single_row(job(R18, 128), gmem=2500, util=80),
        single_row(job(R18, 32, amp=1), gmem=800, util=30),
        single_row(job(BERT, 32), gmem=18000, util=99),
        single_row(job(BERT, 64), status="failed"),
        single_row(job(VGG, 32)),  # measured, but without NVML figures
    ]
    return ColocationModel(singles(rows), pairs([]), source="singles")


def test_memory_and_util_exact_and_interpolated() -> None:
    model = single_model()
    assert model.memory_mib(w(R18, 32), 1) == 1000
    assert model.solo_util(w(R18, 128), 1) == 80
    assert model.memory_mib(w(R18, 64), 1) == pytest.approx(1500)  # linear in batch size
    assert model.solo_util(w(R18, 64), 1) == pytest.approx(60)  # linear in log2(batch size)
    assert model.memory_mib(w(R18, 32), 4) == 1000  # per GPU: the GPU count does not matter
    counts = model.fallback_counts("memory")
    assert counts["exact"] == 1 and counts["interpolated"] == 2


def test_memory_and_util_outside_the_measured_batch_sizes() -> None:
    model = single_model()
    assert model.memory_mib(w(R18, 256), 1) == pytest.approx(4500)  # the edge slope continued
    assert model.memory_mib(w(R18, 1), 1) >= 500  # never below half the smallest measured
    assert model.solo_util(w(R18, 1024), 1) == pytest.approx(80)  # held at the edge
    assert model.solo_util(w(R18, 8), 1) == pytest.approx(40)
    # only AMP off measured at 128: AMP on uses its own single measurement
    assert model.memory_mib(w(R18, 128, amp=1), 1) == 800


def test_memory_and_util_model_average_and_default() -> None:
    model = single_model()
    assert model.memory_mib(Workload("ResNet18", "ImageNet", 32, 0), 1) == pytest.approx(
        (1000 + 2500 + 800) / 3
    )
    assert model.memory_mib(w(BERT, 64), 1) == 18000  # the failed row does not count
    assert model.memory_mib(Workload("GPT", "web", 8, 1), 1) == pytest.approx(
        np.median([1000, 2500, 800, 18000])
    )
    assert model.solo_util(w(VGG, 32), 1) == pytest.approx(np.median([40, 80, 30, 99]))
    assert model.fallback_counts("memory")["default"] == 1
    assert model.fallback_counts("util")["default"] == 1


def test_source_is_kept() -> None:
    assert grid_model().source == "grid"
    assert "grid" in repr(grid_model())


# ----------------------------------------------------------------------------- speed and real data
def test_lookups_are_fast_once_cached() -> None:
    model = grid_model()
    jobs = [(w(R18, b), 1) for b in (16, 32, 64, 128)] + [(w(VGG, b), 2) for b in (32, 64)]
    began = time.perf_counter()
    for _ in range(500):
        for a, na in jobs:
            for b, nb in jobs:
                model.pair_speeds(a, na, b, nb)
    per_call = (time.perf_counter() - began) / (500 * len(jobs) ** 2)
    assert per_call < 50e-6


def test_lucid_table_never_gives_nan_and_returns_measurements() -> None:
    from simcluster.colocation.importers import import_lucid

    single, pair = import_lucid(lucid_folder())
    model = ColocationModel(single, pair, source="Lucid RTX 3090")
    row = pair.iloc[0]
    a = Workload(row.model1, row.dataset1, int(row.batchsize1), int(row.amp1))
    b = Workload(row.model2, row.dataset2, int(row.batchsize2), int(row.amp2))
    assert model.pair_speeds(a, 1, b, 1) == pytest.approx((min(1.0, row.speed1), min(1.0, row.speed2)))
    configs = [Workload(m, d, int(bs), int(amp)) for m, d, bs, amp in
               single[["model", "dataset", "batchsize", "amp"]].itertuples(index=False)]  # fmt: skip
    for x in configs:
        for y in configs:
            s1, s2 = model.pair_speeds(x, 2, y, 2)
            assert FLOOR <= s1 <= 1.0 and FLOOR <= s2 <= 1.0
        assert math.isfinite(model.memory_mib(x, 1)) and 0 <= model.solo_util(x, 1) <= 100
