"""MobileNetV2 on CIFAR-10: torchvision's network with a 10-class head."""

from __future__ import annotations

import torch
import torchvision

from workloads.base import (
    ModuleWrapper,
    TrainingStep,
    WorkloadConfig,
    build_supervised,
    cross_entropy_of,
    random_images,
)
from workloads.registry import register_workload

CLASSES = 10


@register_workload("MobileNetV2", "CIFAR-10", "torchvision MobileNetV2, 32x32 images, 10 classes, SGD")
def build(config: WorkloadConfig, wrap: ModuleWrapper) -> TrainingStep:
    image_size = 8 if config.tiny else 32
    return build_supervised(
        config,
        wrap,
        make_model=lambda: torchvision.models.mobilenet_v2(weights=None, num_classes=CLASSES),
        make_batch=lambda g: random_images(g, config.batch_size, image_size, CLASSES),
        compute_loss=cross_entropy_of,
        make_optimizer=lambda params: torch.optim.SGD(params, lr=0.01, momentum=0.9, weight_decay=4e-5),
    )
