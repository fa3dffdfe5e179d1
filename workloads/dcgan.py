"""DCGAN on LSUN (64x64 scenes): generator and discriminator both updated every step.

The architecture and optimizer of PyTorch's DCGAN example (latent 100, 64 feature
maps, Adam at 2e-4 with beta1 0.5).  The discriminator returns logits and the loss
is ``binary_cross_entropy_with_logits`` -- numerically the example's sigmoid + BCE,
but safe under autocast.  Real and generated images go through the discriminator in
one batch, so each network runs forward and backward once per update.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import torch
from torch import nn

from workloads.base import (
    BatchPool,
    MixedPrecision,
    ModuleWrapper,
    TrainingStep,
    WorkloadConfig,
    chain_parameters,
    seeded,
)
from workloads.registry import register_workload

IMAGE_SIZE = 64  # the example's architecture is built for 64x64 images


@dataclass(frozen=True, slots=True)
class GanShape:
    latent: int
    generator_features: int
    discriminator_features: int


EXAMPLE = GanShape(latent=100, generator_features=64, discriminator_features=64)
TINY = GanShape(latent=8, generator_features=4, discriminator_features=4)


def _init_weights(module: nn.Module) -> None:
    """The example's initialisation: N(0, 0.02) convolutions, N(1, 0.02) batch-norm scales."""
    if isinstance(module, (nn.Conv2d, nn.ConvTranspose2d)):
        nn.init.normal_(module.weight, 0.0, 0.02)
    elif isinstance(module, nn.BatchNorm2d):
        nn.init.normal_(module.weight, 1.0, 0.02)
        nn.init.zeros_(module.bias)


def generator(shape: GanShape) -> nn.Module:
    f = shape.generator_features
    model = nn.Sequential(
        nn.ConvTranspose2d(shape.latent, f * 8, 4, 1, 0, bias=False),
        nn.BatchNorm2d(f * 8),
        nn.ReLU(True),
        nn.ConvTranspose2d(f * 8, f * 4, 4, 2, 1, bias=False),
        nn.BatchNorm2d(f * 4),
        nn.ReLU(True),
        nn.ConvTranspose2d(f * 4, f * 2, 4, 2, 1, bias=False),
        nn.BatchNorm2d(f * 2),
        nn.ReLU(True),
        nn.ConvTranspose2d(f * 2, f, 4, 2, 1, bias=False),
        nn.BatchNorm2d(f),
        nn.ReLU(True),
        nn.ConvTranspose2d(f, 3, 4, 2, 1, bias=False),
        nn.Tanh(),
    )
    model.apply(_init_weights)
    return model


def discriminator(shape: GanShape) -> nn.Module:
    f = shape.discriminator_features
    model = nn.Sequential(
        nn.Conv2d(3, f, 4, 2, 1, bias=False),
        nn.LeakyReLU(0.2, inplace=True),
        nn.Conv2d(f, f * 2, 4, 2, 1, bias=False),
        nn.BatchNorm2d(f * 2),
        nn.LeakyReLU(0.2, inplace=True),
        nn.Conv2d(f * 2, f * 4, 4, 2, 1, bias=False),
        nn.BatchNorm2d(f * 4),
        nn.LeakyReLU(0.2, inplace=True),
        nn.Conv2d(f * 4, f * 8, 4, 2, 1, bias=False),
        nn.BatchNorm2d(f * 8),
        nn.LeakyReLU(0.2, inplace=True),
        nn.Conv2d(f * 8, 1, 4, 1, 0, bias=False),
        nn.Flatten(),
    )
    model.apply(_init_weights)
    return model


class AdversarialStep:
    """One DCGAN iteration: a discriminator update, then a generator update."""

    def __init__(self, config: WorkloadConfig, wrap: ModuleWrapper) -> None:
        self._shape = shape = TINY if config.tiny else EXAMPLE
        self._device = device = config.torch_device
        with seeded(config.seed):
            self._generator = generator(shape).to(device)
            self._discriminator = discriminator(shape).to(device)
        self._g = wrap(self._generator)
        self._d = wrap(self._discriminator)
        self._g_optimizer = torch.optim.Adam(self._g.parameters(), lr=2e-4, betas=(0.5, 0.999))
        self._d_optimizer = torch.optim.Adam(self._d.parameters(), lr=2e-4, betas=(0.5, 0.999))
        self._amp = MixedPrecision(config.amp, device)
        batch = config.batch_size
        self._images = BatchPool(
            lambda g: torch.rand(batch, 3, IMAGE_SIZE, IMAGE_SIZE, generator=g).mul(2).sub(1).to(device),
            seed=config.seed + 1,
        )
        self._noise = torch.Generator(device=device).manual_seed(config.seed + 2)
        labels = torch.cat([torch.ones(batch, 1), torch.zeros(batch, 1)]).to(device)
        self._real_then_fake = labels
        self._real = labels[:batch]
        self.samples_per_step = batch

    def step(self) -> float:
        real = next(self._images)
        noise = torch.randn(
            real.shape[0], self._shape.latent, 1, 1, device=self._device, generator=self._noise
        )
        with self._amp.autocast():
            fake = self._g(noise)
            logits = self._d(torch.cat([real, fake.detach()]))
            d_loss = nn.functional.binary_cross_entropy_with_logits(logits, self._real_then_fake) * 2
        self._amp.minimize(d_loss, self._d_optimizer)
        with self._amp.autocast():
            g_loss = nn.functional.binary_cross_entropy_with_logits(self._d(fake), self._real)
        self._amp.minimize(g_loss, self._g_optimizer)
        return float(d_loss.detach() + g_loss.detach())

    def parameters(self) -> Iterator[nn.Parameter]:
        return chain_parameters([self._generator, self._discriminator])


@register_workload("DCGAN", "LSUN", "DCGAN generator + discriminator, 64x64 images, latent 100, Adam")
def build(config: WorkloadConfig, wrap: ModuleWrapper) -> TrainingStep:
    return AdversarialStep(config, wrap)
