"""The common shape of a training workload: a config in, an object with ``step()`` out.

The profiler only ever sees :class:`TrainingStep`: it calls ``step()`` in a loop and
counts.  Everything model-specific -- the network, the optimizer, the synthetic data
of the real shapes -- lives in one small module per workload.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Generic, Literal, Protocol, TypeVar

import torch
from torch import nn

Size = Literal["tiny", "full"]
SIZES: tuple[Size, ...] = ("tiny", "full")

ModuleWrapper = Callable[[nn.Module], nn.Module]
"""Wraps a trainable module before its optimizer is made (DistributedDataParallel, or nothing)."""


def no_wrap(module: nn.Module) -> nn.Module:
    """The wrapper of a single-device job: the module itself."""
    return module


@dataclass(frozen=True, slots=True)
class WorkloadConfig:
    """How to build one training job."""

    batch_size: int = field(default=32, metadata={"help": "samples per training step on each device"})
    amp: bool = field(
        default=False,
        metadata={
            "help": "automatic mixed precision: float16 + GradScaler on CUDA, bfloat16 autocast on CPU"
        },
    )
    device: str = field(default="cpu", metadata={"help": "torch device, e.g. 'cuda:0' or 'cpu'"})
    size: Size = field(
        default="full",
        metadata={
            "help": "'full': the real shapes; 'tiny': small images, sequences and widths for CPU tests"
        },
    )
    seed: int = field(default=0, metadata={"help": "seed of the weights and the synthetic data"})

    def __post_init__(self) -> None:
        if self.batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {self.batch_size}")
        if self.size not in SIZES:
            raise ValueError(f"size must be one of {', '.join(SIZES)}, got {self.size!r}")

    @property
    def tiny(self) -> bool:
        return self.size == "tiny"

    @property
    def torch_device(self) -> torch.device:
        return torch.device(self.device)


class TrainingStep(Protocol):
    """One training job, ready to run: each ``step()`` is a real iteration."""

    samples_per_step: int
    """Samples consumed by one ``step()`` on this device (the batch size)."""

    def step(self) -> float:
        """Run forward, backward and the optimizer step(s) once; return the loss."""
        ...

    def parameters(self) -> Iterator[nn.Parameter]:
        """Every trainable parameter, unwrapped (for checks that training moves them)."""
        ...


Builder = Callable[[WorkloadConfig, ModuleWrapper], TrainingStep]


@dataclass(frozen=True, slots=True)
class WorkloadSpec:
    """A registered workload: the trace's model and dataset names and how to build it.

    Picklable (the builder is a module-level function), so a profiler worker
    process can receive it and build the job on its own device.
    """

    model: str
    dataset: str
    builder: Builder
    summary: str

    def build(self, config: WorkloadConfig, wrap: ModuleWrapper = no_wrap) -> TrainingStep:
        return self.builder(config, wrap)


@contextlib.contextmanager
def seeded(seed: int) -> Iterator[None]:
    """Run a block with torch's global generator seeded, leaving it as it was afterwards."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        yield


class MixedPrecision:
    """Autocast and gradient scaling as the device allows.

    CUDA gets float16 autocast with a GradScaler per optimizer; a CPU has no float16
    kernels worth using, so it gets bfloat16 autocast and no scaler (bfloat16 has
    float32's range, so gradients need no scaling).
    """

    def __init__(self, enabled: bool, device: torch.device) -> None:
        self.enabled = enabled
        self.device_type = device.type
        self.dtype = torch.float16 if device.type == "cuda" else torch.bfloat16
        self._scaled = enabled and device.type == "cuda"
        self._scalers: dict[int, torch.amp.GradScaler] = {}

    def autocast(self) -> torch.autocast:
        return torch.autocast(device_type=self.device_type, dtype=self.dtype, enabled=self.enabled)

    def minimize(
        self,
        loss: torch.Tensor,
        optimizer: torch.optim.Optimizer,
        clip_norm: float | None = None,
    ) -> None:
        """Zero the gradients, back-propagate ``loss`` and take one optimizer step."""
        optimizer.zero_grad(set_to_none=True)
        params = [p for group in optimizer.param_groups for p in group["params"]]
        if not self._scaled:
            loss.backward()
            if clip_norm is not None:
                nn.utils.clip_grad_norm_(params, clip_norm)
            optimizer.step()
            return
        scaler = self._scalers.setdefault(id(optimizer), torch.amp.GradScaler(self.device_type))
        scaler.scale(loss).backward()
        if clip_norm is not None:
            scaler.unscale_(optimizer)
            nn.utils.clip_grad_norm_(params, clip_norm)
        scaler.step(optimizer)
        scaler.update()


Batch = TypeVar("Batch")


class BatchPool(Generic[Batch]):
    """A few synthetic batches made once on the device and served in turn.

    Made up front so that a step measures training, not random-number generation;
    more than one so that the model does not see a single batch forever.
    """

    def __init__(self, make: Callable[[torch.Generator], Batch], seed: int, count: int = 2) -> None:
        generator = torch.Generator().manual_seed(seed)
        self._batches = [make(generator) for _ in range(count)]
        self._next = 0

    def __next__(self) -> Batch:
        batch = self._batches[self._next]
        self._next = (self._next + 1) % len(self._batches)
        return batch

    def __iter__(self) -> BatchPool[Batch]:
        return self


def chain_parameters(modules: Sequence[nn.Module]) -> Iterator[nn.Parameter]:
    for module in modules:
        yield from (p for p in module.parameters() if p.requires_grad)


class SupervisedStep:
    """A step of plain supervised training: one model, one optimizer, one loss.

    ``compute_loss(model, batch)`` runs the forward pass; this class adds autocast,
    backward and the optimizer step.  Most workloads are this.
    """

    def __init__(
        self,
        model: nn.Module,
        trained: nn.Module,
        optimizer: torch.optim.Optimizer,
        batches: Iterator[Batch],
        compute_loss: Callable[[nn.Module, Batch], torch.Tensor],
        amp: MixedPrecision,
        samples_per_step: int,
        clip_norm: float | None = None,
    ) -> None:
        self._model = model
        self._trained = trained
        self._optimizer = optimizer
        self._batches = batches
        self._compute_loss = compute_loss
        self._amp = amp
        self._clip_norm = clip_norm
        self.samples_per_step = samples_per_step

    def step(self) -> float:
        batch = next(self._batches)
        with self._amp.autocast():
            loss = self._compute_loss(self._trained, batch)
        self._amp.minimize(loss, self._optimizer, self._clip_norm)
        return float(loss.detach())

    def parameters(self) -> Iterator[nn.Parameter]:
        return chain_parameters([self._model])


def build_supervised(
    config: WorkloadConfig,
    wrap: ModuleWrapper,
    make_model: Callable[[], nn.Module],
    make_batch: Callable[[torch.Generator], Batch],
    compute_loss: Callable[[nn.Module, Batch], torch.Tensor],
    make_optimizer: Callable[[Iterator[nn.Parameter]], torch.optim.Optimizer],
    clip_norm: float | None = None,
) -> SupervisedStep:
    """Put a model and its synthetic data on the device and assemble a :class:`SupervisedStep`."""
    device = config.torch_device
    with seeded(config.seed):
        model = make_model().to(device)
    model.train()
    trained = wrap(model)
    optimizer = make_optimizer(trained.parameters())

    def on_device(generator: torch.Generator) -> Batch:
        return _to_device(make_batch(generator), device)

    return SupervisedStep(
        model=model,
        trained=trained,
        optimizer=optimizer,
        batches=BatchPool(on_device, seed=config.seed + 1),
        compute_loss=compute_loss,
        amp=MixedPrecision(config.amp, device),
        samples_per_step=config.batch_size,
        clip_norm=clip_norm,
    )


def _to_device(batch: Batch, device: torch.device) -> Batch:
    if isinstance(batch, torch.Tensor):
        return batch.to(device)  # type: ignore[return-value]
    if isinstance(batch, tuple):
        return tuple(_to_device(item, device) for item in batch)  # type: ignore[return-value]
    raise TypeError(f"a batch is a tensor or a tuple of tensors, got {type(batch).__name__}")


def build_image_classifier(
    config: WorkloadConfig,
    wrap: ModuleWrapper,
    make_model: Callable[[], nn.Module],
    image_size: int,
    classes: int,
    weight_decay: float,
) -> SupervisedStep:
    """An image classifier trained with SGD (lr 0.01, momentum 0.9) on random images of ``image_size``."""
    return build_supervised(
        config,
        wrap,
        make_model=make_model,
        make_batch=lambda g: random_images(g, config.batch_size, image_size, classes),
        compute_loss=cross_entropy_of,
        make_optimizer=lambda params: torch.optim.SGD(params, lr=0.01, momentum=0.9, weight_decay=weight_decay),
    )


def random_images(
    generator: torch.Generator, batch_size: int, image_size: int, classes: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Normalized-looking RGB images and class labels."""
    images = torch.randn(batch_size, 3, image_size, image_size, generator=generator)
    labels = torch.randint(0, classes, (batch_size,), generator=generator)
    return images, labels


def cross_entropy_of(model: nn.Module, batch: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    inputs, labels = batch
    return nn.functional.cross_entropy(model(inputs), labels)
