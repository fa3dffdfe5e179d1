"""PointNet classification on ShapeNet (16 object categories, 2,500 points per shape).

The network of Qi et al. (CVPR'17): an input T-Net aligning the xyz points, shared
per-point MLPs (64, 128, 1024) as 1-D convolutions with a feature T-Net after the
first, max-pooling into a global feature and a 512-256 classifier with dropout.
The loss adds the paper's orthogonality regulariser on the 64x64 feature transform.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import torch
from torch import nn

from workloads.base import ModuleWrapper, TrainingStep, WorkloadConfig, build_supervised
from workloads.registry import register_workload

CLASSES = 16
REGULARISER_WEIGHT = 0.001


@dataclass(frozen=True, slots=True)
class PointNetShape:
    points: int
    width: int  # the paper's widths divided by 64 / width: 64, 128, 1024 at width 64

    def scaled(self, paper_width: int) -> int:
        return max(1, paper_width * self.width // 64)


PAPER = PointNetShape(points=2500, width=64)
TINY = PointNetShape(points=32, width=4)


def _pointwise(sizes: list[int]) -> nn.Sequential:
    layers: list[nn.Module] = []
    for inputs, outputs in itertools.pairwise(sizes):
        layers += [nn.Conv1d(inputs, outputs, 1), nn.BatchNorm1d(outputs), nn.ReLU()]
    return nn.Sequential(*layers)


def _dense(sizes: list[int]) -> nn.Sequential:
    layers: list[nn.Module] = []
    for inputs, outputs in itertools.pairwise(sizes):
        layers += [nn.Linear(inputs, outputs), nn.BatchNorm1d(outputs), nn.ReLU()]
    return nn.Sequential(*layers)


class TNet(nn.Module):
    """Predicts a k x k transform of its input points, starting near the identity."""

    def __init__(self, k: int, shape: PointNetShape) -> None:
        super().__init__()
        self.k = k
        self.features = _pointwise([k, shape.scaled(64), shape.scaled(128), shape.scaled(1024)])
        self.head = _dense([shape.scaled(1024), shape.scaled(512), shape.scaled(256)])
        self.transform = nn.Linear(shape.scaled(256), k * k)
        nn.init.zeros_(self.transform.weight)
        nn.init.zeros_(self.transform.bias)

    def forward(self, points: torch.Tensor) -> torch.Tensor:
        pooled = self.features(points).amax(dim=2)
        matrix = self.transform(self.head(pooled)).view(-1, self.k, self.k)
        return matrix + torch.eye(self.k, device=points.device, dtype=matrix.dtype)


class PointNetClassifier(nn.Module):
    def __init__(self, shape: PointNetShape) -> None:
        super().__init__()
        feature_dim = shape.scaled(64)
        self.input_transform = TNet(3, shape)
        self.first = _pointwise([3, feature_dim, feature_dim])
        self.feature_transform = TNet(feature_dim, shape)
        self.second = _pointwise([feature_dim, shape.scaled(128), shape.scaled(1024)])
        self.classifier = nn.Sequential(
            nn.Linear(shape.scaled(1024), shape.scaled(512)),
            nn.BatchNorm1d(shape.scaled(512)),
            nn.ReLU(),
            nn.Linear(shape.scaled(512), shape.scaled(256)),
            nn.Dropout(0.3),
            nn.BatchNorm1d(shape.scaled(256)),
            nn.ReLU(),
            nn.Linear(shape.scaled(256), CLASSES),
        )

    def forward(self, points: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Class logits and the feature transform (for the regulariser); points are (B, 3, N)."""
        points = torch.bmm(self.input_transform(points), points)
        features = self.first(points)
        transform = self.feature_transform(features)
        features = torch.bmm(transform, features)
        pooled = self.second(features).amax(dim=2)
        return self.classifier(pooled), transform


Batch = tuple[torch.Tensor, torch.Tensor]


def shapes(generator: torch.Generator, batch_size: int, points: int) -> Batch:
    """Point clouds in the unit cube, (B, 3, N), with category labels."""
    clouds = torch.rand(batch_size, 3, points, generator=generator).mul(2).sub(1)
    return clouds, torch.randint(0, CLASSES, (batch_size,), generator=generator)


def regularised_loss(model: nn.Module, batch: Batch) -> torch.Tensor:
    clouds, labels = batch
    logits, transform = model(clouds)
    transform = transform.float()
    identity = torch.eye(transform.shape[1], device=transform.device)
    orthogonality = torch.linalg.matrix_norm(transform @ transform.transpose(1, 2) - identity).mean()
    return nn.functional.cross_entropy(logits, labels) + REGULARISER_WEIGHT * orthogonality


@register_workload(
    "PointNet", "ShapeNet", "PointNet classifier with input/feature T-Nets, 2,500 points, Adam"
)
def build(config: WorkloadConfig, wrap: ModuleWrapper) -> TrainingStep:
    shape = TINY if config.tiny else PAPER
    return build_supervised(
        config,
        wrap,
        make_model=lambda: PointNetClassifier(shape),
        make_batch=lambda g: shapes(g, config.batch_size, shape.points),
        compute_loss=regularised_loss,
        make_optimizer=lambda params: torch.optim.Adam(params, lr=1e-3, betas=(0.9, 0.999)),
    )
