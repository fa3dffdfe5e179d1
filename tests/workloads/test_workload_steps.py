"""Every workload builds and trains for real on the CPU at tiny size."""

from __future__ import annotations

import math

import pytest
import torch

import workloads
from workloads import WorkloadConfig, get_workload, workload_names

TRACE_WORKLOADS = {
    "ResNet18": "CIFAR-10",
    "MobileNetV2": "CIFAR-10",
    "EfficientNet": "CIFAR-10",
    "VGG": "CIFAR-10",
    "ResNet50": "ImageNet",
    "MobileNetV3": "ImageNet",
    "BERT": "SQuAD",
    "Transformer": "Multi30k",
    "LSTM": "Wikitext2",
    "DCGAN": "LSUN",
    "PointNet": "ShapeNet",
    "NeuMF": "MovieLens",
    "PPO": "LunarLander",
    "TD3": "BipedalWalker",
}


def test_the_registry_holds_the_14_trace_workloads_by_their_trace_names() -> None:
    assert {s.model: s.dataset for s in workloads.all_workloads()} == TRACE_WORKLOADS


def test_an_unknown_name_is_refused_with_the_valid_names() -> None:
    with pytest.raises(workloads.UnknownWorkloadError) as caught:
        get_workload("ResNet-18")
    message = str(caught.value)
    assert "'ResNet-18'" in message
    assert all(name in message for name in TRACE_WORKLOADS)


def test_a_config_refuses_a_batch_size_below_one_and_unknown_sizes() -> None:
    with pytest.raises(ValueError, match="batch_size"):
        WorkloadConfig(batch_size=0)
    with pytest.raises(ValueError, match="size"):
        WorkloadConfig(size="huge")  # type: ignore[arg-type]


@pytest.mark.parametrize("amp", [False, True], ids=["fp32", "amp"])
@pytest.mark.parametrize("model", workload_names())
def test_one_training_step_gives_a_finite_loss_and_moves_the_parameters(model: str, amp: bool) -> None:
    job = get_workload(model).build(WorkloadConfig(batch_size=2, amp=amp, device="cpu", size="tiny", seed=3))
    before = [p.detach().clone() for p in job.parameters()]
    assert before, "a workload must have trainable parameters"

    loss = job.step()

    assert isinstance(loss, float) and math.isfinite(loss)
    after = list(job.parameters())
    assert any(not torch.equal(old, new) for old, new in zip(before, after, strict=True))
    assert job.samples_per_step == 2


def test_the_same_seed_builds_the_same_weights() -> None:
    config = WorkloadConfig(batch_size=2, device="cpu", size="tiny", seed=7)
    first = [p.detach() for p in get_workload("PointNet").build(config).parameters()]
    second = [p.detach() for p in get_workload("PointNet").build(config).parameters()]
    assert all(torch.equal(a, b) for a, b in zip(first, second, strict=True))
