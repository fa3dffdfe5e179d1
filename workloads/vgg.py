"""VGG-16 (with batch norm) on CIFAR-10: torchvision's convolutional layers, CIFAR head.

On 32x32 images the five max-pools leave a 1x1x512 map, so the 4096-wide ImageNet
classifier becomes the single 512->10 linear layer of the CIFAR VGG scripts.
"""

from __future__ import annotations

import torchvision
from torch import nn

from workloads.base import ModuleWrapper, TrainingStep, WorkloadConfig, build_image_classifier
from workloads.registry import register_workload

CLASSES = 10
SMALLEST_IMAGE = 32  # five 2x2 max-pools need at least 32 pixels a side


def cifar_vgg16() -> nn.Module:
    model = torchvision.models.vgg16_bn(weights=None)
    model.avgpool = nn.AdaptiveAvgPool2d(1)
    model.classifier = nn.Linear(512, CLASSES)
    return model


@register_workload("VGG", "CIFAR-10", "torchvision VGG-16-BN features, 512->10 head, 32x32 images, SGD")
def build(config: WorkloadConfig, wrap: ModuleWrapper) -> TrainingStep:
    return build_image_classifier(
        config, wrap, cifar_vgg16, image_size=SMALLEST_IMAGE, classes=CLASSES, weight_decay=5e-4
    )
