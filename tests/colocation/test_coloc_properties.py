"""Properties of ColocationModel.pair_speeds for arbitrary jobs: finite, bounded, symmetric."""

from __future__ import annotations

import math
from functools import cache

from coloc_tables import pair_row, pairs, single_row, singles
from hypothesis import given, settings
from hypothesis import strategies as st

from simcluster.colocation.analytic import analytic_model
from simcluster.colocation.calibrated import calibrated_model
from simcluster.colocation.model import FLOOR, ColocationModel
from simcluster.job import Workload

KINDS = [
    ("ResNet18", "CIFAR-10"),
    ("VGG", "CIFAR-10"),
    ("LSTM", "Wikitext2"),
    ("BERT", "SQuAD"),
    ("ResNet18", "ImageNet"),  # a known model on another data set
    ("Unknown", "nothing"),
]


@cache
def mixed_model() -> ColocationModel:
    """Measured speeds above 1 and near 0, failed rows, several GPU counts, gaps everywhere."""
    r18, vgg, lstm = KINDS[0], KINDS[1], KINDS[2]
    rows = [
        pair_row((*r18, 32, 0, 1), (*vgg, 32, 0, 1), 1.4, 0.02),
        pair_row((*r18, 128, 0, 1), (*vgg, 64, 0, 1), 0.7, 0.9),
        pair_row((*r18, 128, 1, 2), (*vgg, 128, 1, 2), 0.5, 1.2),
        pair_row((*r18, 64, 0, 1), (*r18, 64, 0, 1), 0.8, 0.75),
        pair_row((*lstm, 64, 1, 1), (*lstm, 128, 1, 1), 0.6, 0.55),
        pair_row((*lstm, 64, 0, 1), (*vgg, 64, 0, 1), 0.9, 0.9, status="failed"),
    ]
    single = [single_row((*r18, 32, 0, 1), gmem=2000, util=60)]
    return ColocationModel(singles(single), pairs(rows), source="mixed")


@cache
def default_analytic() -> ColocationModel:
    return analytic_model()


@cache
def calibrated() -> ColocationModel:
    return calibrated_model()


jobs = st.tuples(
    st.sampled_from(KINDS),
    st.one_of(st.sampled_from([16, 32, 64, 128, 256]), st.integers(min_value=1, max_value=1 << 20)),
    st.sampled_from([0, 1]),
    st.one_of(st.sampled_from([1, 2, 8]), st.integers(min_value=1, max_value=1024)),
)


@settings(max_examples=300, deadline=None)
@given(a=jobs, b=jobs, which=st.sampled_from(["mixed", "analytic", "calibrated"]))
def test_pair_speeds_finite_bounded_symmetric(a: tuple, b: tuple, which: str) -> None:
    model = {"mixed": mixed_model, "analytic": default_analytic, "calibrated": calibrated}[which]()
    (kind_a, bs_a, amp_a, gpus_a), (kind_b, bs_b, amp_b, gpus_b) = a, b
    wa, wb = Workload(*kind_a, bs_a, amp_a), Workload(*kind_b, bs_b, amp_b)
    s1, s2 = model.pair_speeds(wa, gpus_a, wb, gpus_b)
    for speed in (s1, s2):
        assert math.isfinite(speed) and FLOOR <= speed <= 1.0
    assert model.pair_speeds(wb, gpus_b, wa, gpus_a) == (s2, s1)
    if (wa, gpus_a) == (wb, gpus_b):
        assert s1 == s2
    for value in (model.memory_mib(wa, gpus_a), model.solo_util(wa, gpus_a)):
        assert math.isfinite(value) and value >= 0
