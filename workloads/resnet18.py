"""ResNet-18 on CIFAR-10: torchvision's network with the usual CIFAR stem.

CIFAR images are 32x32, so the ImageNet stem (7x7 stride-2 conv and max-pool) is
replaced by a 3x3 stride-1 conv, as in the common CIFAR training scripts.
"""

from __future__ import annotations

import torchvision
from torch import nn

from workloads.base import ModuleWrapper, TrainingStep, WorkloadConfig, build_image_classifier
from workloads.registry import register_workload

CLASSES = 10


def cifar_resnet18() -> nn.Module:
    model = torchvision.models.resnet18(weights=None, num_classes=CLASSES)
    model.conv1 = nn.Conv2d(3, 64, kernel_size=3, stride=1, padding=1, bias=False)
    model.maxpool = nn.Identity()
    return model


@register_workload("ResNet18", "CIFAR-10", "torchvision ResNet-18, CIFAR stem, 32x32 images, 10 classes, SGD")
def build(config: WorkloadConfig, wrap: ModuleWrapper) -> TrainingStep:
    return build_image_classifier(
        config, wrap, cifar_resnet18, image_size=8 if config.tiny else 32, classes=CLASSES, weight_decay=5e-4
    )
