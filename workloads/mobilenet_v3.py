"""MobileNetV3-Large on ImageNet: torchvision's network, 224x224 images, 1000 classes."""

from __future__ import annotations

import torchvision

from workloads.base import ModuleWrapper, TrainingStep, WorkloadConfig, build_image_classifier
from workloads.registry import register_workload

CLASSES = 1000


@register_workload("MobileNetV3", "ImageNet", "torchvision MobileNetV3-Large, 224x224 images, 1000 classes")
def build(config: WorkloadConfig, wrap: ModuleWrapper) -> TrainingStep:
    return build_image_classifier(
        config,
        wrap,
        lambda: torchvision.models.mobilenet_v3_large(weights=None, num_classes=CLASSES),
        image_size=32 if config.tiny else 224,
        classes=CLASSES,
        weight_decay=1e-5,
    )
