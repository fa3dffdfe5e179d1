"""Workloads for profiler tests, importable by the worker processes (module-level builders).

They train a real (small) model or fail the way real jobs fail; none fakes a throughput.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator

import torch
from torch import nn

from workloads import ModuleWrapper, TrainingStep, WorkloadConfig, WorkloadSpec, get_workload


class LinearRegressionStep:
    """A genuinely small training job: fast, steady steps."""

    def __init__(self, config: WorkloadConfig, wrap: ModuleWrapper) -> None:
        generator = torch.Generator().manual_seed(config.seed)
        self._model = nn.Linear(16, 1)
        self._trained = wrap(self._model)
        self._optimizer = torch.optim.SGD(self._trained.parameters(), lr=0.01)
        self._x = torch.randn(config.batch_size, 16, generator=generator)
        self._y = torch.randn(config.batch_size, 1, generator=generator)
        self.samples_per_step = config.batch_size

    def step(self) -> float:
        loss = nn.functional.mse_loss(self._trained(self._x), self._y)
        self._optimizer.zero_grad()
        loss.backward()
        self._optimizer.step()
        return float(loss.detach())

    def parameters(self) -> Iterator[nn.Parameter]:
        return self._model.parameters()


def build_linear(config: WorkloadConfig, wrap: ModuleWrapper) -> TrainingStep:
    return LinearRegressionStep(config, wrap)


class OutOfMemoryOnStep(LinearRegressionStep):
    def step(self) -> float:
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 20.00 GiB (injected by the test)")


def build_out_of_memory(config: WorkloadConfig, wrap: ModuleWrapper) -> TrainingStep:
    return OutOfMemoryOnStep(config, wrap)


class KilledOnStep(LinearRegressionStep):
    def step(self) -> float:
        os.kill(os.getpid(), signal.SIGKILL)
        return 0.0


def build_killed(config: WorkloadConfig, wrap: ModuleWrapper) -> TrainingStep:
    return KilledOnStep(config, wrap)


FAKES = {
    "Linear": WorkloadSpec("Linear", "Random", build_linear, "a linear regression (test)"),
    "OOM": WorkloadSpec("OOM", "Random", build_out_of_memory, "raises CUDA out-of-memory on its first step"),
    "Killed": WorkloadSpec("Killed", "Random", build_killed, "its process is killed on its first step"),
}


def resolve(model: str) -> WorkloadSpec:
    """The test workloads first, then the real registry."""
    return FAKES[model] if model in FAKES else get_workload(model)
