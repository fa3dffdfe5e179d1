"""ResNet-50 on ImageNet: torchvision's network, 224x224 images, 1000 classes."""

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

CLASSES = 1000


@register_workload("ResNet50", "ImageNet", "torchvision ResNet-50, 224x224 images, 1000 classes, SGD")
def build(config: WorkloadConfig, wrap: ModuleWrapper) -> TrainingStep:
    image_size = 32 if config.tiny else 224
    return build_supervised(
        config,
        wrap,
        make_model=lambda: torchvision.models.resnet50(weights=None, num_classes=CLASSES),
        make_batch=lambda g: random_images(g, config.batch_size, image_size, CLASSES),
        compute_loss=cross_entropy_of,
        make_optimizer=lambda params: torch.optim.SGD(params, lr=0.01, momentum=0.9, weight_decay=1e-4),
    )
