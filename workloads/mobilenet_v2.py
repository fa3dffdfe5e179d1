"""MobileNetV2 on CIFAR-10: torchvision's network with a 10-class head."""

from __future__ import annotations

import torchvision

from workloads.base import ModuleWrapper, TrainingStep, WorkloadConfig, build_image_classifier
from workloads.registry import register_workload

CLASSES = 10


@register_workload("MobileNetV2", "CIFAR-10", "torchvision MobileNetV2, 32x32 images, 10 classes, SGD")
def build(config: WorkloadConfig, wrap: ModuleWrapper) -> TrainingStep:
    return build_image_classifier(
        config,
        wrap,
        lambda: torchvision.models.mobilenet_v2(weights=None, num_classes=CLASSES),
        image_size=8 if config.tiny else 32,
        classes=CLASSES,
        weight_decay=4e-5,
    )
