"""PPO on LunarLander: clipped-objective actor-critic updates on a replayed rollout.

The rollout buffer holds synthetic transitions of LunarLander's shapes (8-dimensional
observations, 4 discrete actions) whose actions and log-probabilities come from the
initial policy, as a real rollout's would.  Each step is one PPO minibatch update with
Stable-Baselines3's defaults: separate 64-64 tanh policy and value networks, clip
range 0.2, value coefficient 0.5, entropy coefficient 0.01, gradient norm 0.5,
Adam at 3e-4, advantages normalized per minibatch.
"""

from __future__ import annotations

from collections.abc import Iterator

import torch
from torch import nn
from torch.distributions import Categorical

from workloads.base import (
    MixedPrecision,
    ModuleWrapper,
    TrainingStep,
    WorkloadConfig,
    chain_parameters,
    seeded,
)
from workloads.registry import register_workload

OBSERVATIONS = 8
ACTIONS = 4
CLIP_RANGE = 0.2
VALUE_COEF = 0.5
ENTROPY_COEF = 0.01
MAX_GRAD_NORM = 0.5


def _mlp(inputs: int, hidden: int, outputs: int) -> nn.Sequential:
    return nn.Sequential(
        nn.Linear(inputs, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh(), nn.Linear(hidden, outputs)
    )


class ActorCritic(nn.Module):
    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.policy = _mlp(OBSERVATIONS, hidden, ACTIONS)
        self.value = _mlp(OBSERVATIONS, hidden, 1)

    def forward(self, observations: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.policy(observations), self.value(observations).squeeze(-1)


class RolloutBuffer:
    """Synthetic transitions labelled by the initial policy, as one rollout of it."""

    def __init__(
        self, model: ActorCritic, size: int, generator: torch.Generator, device: torch.device
    ) -> None:
        self.observations = torch.randn(size, OBSERVATIONS, generator=generator).to(device)
        with torch.no_grad():
            logits, values = model(self.observations)
            distribution = Categorical(logits=logits)
            self.actions = distribution.sample()
            self.log_probs = distribution.log_prob(self.actions)
        self.advantages = torch.randn(size, generator=generator).to(device)
        self.returns = values + self.advantages
        self.size = size


class PpoUpdateStep:
    def __init__(self, config: WorkloadConfig, wrap: ModuleWrapper) -> None:
        device = config.torch_device
        hidden, buffer_size = (16, 64) if config.tiny else (64, 2048)
        with seeded(config.seed):
            self._model = ActorCritic(hidden).to(device)
        self._trained = wrap(self._model)
        self._optimizer = torch.optim.Adam(self._trained.parameters(), lr=3e-4, eps=1e-5)
        self._amp = MixedPrecision(config.amp, device)
        self._buffer = RolloutBuffer(
            self._model, buffer_size, torch.Generator().manual_seed(config.seed + 1), device
        )
        self._sampler = torch.Generator(device=device).manual_seed(config.seed + 2)
        self._batch_size = config.batch_size
        self.samples_per_step = config.batch_size

    def step(self) -> float:
        b = self._buffer
        index = torch.randint(
            0, b.size, (self._batch_size,), device=b.observations.device, generator=self._sampler
        )
        advantages = b.advantages[index]
        advantages = (advantages - advantages.mean()) / (advantages.std(correction=0) + 1e-8)
        with self._amp.autocast():
            logits, values = self._trained(b.observations[index])
            distribution = Categorical(logits=logits.float())
            ratio = torch.exp(distribution.log_prob(b.actions[index]) - b.log_probs[index])
            clipped = torch.clamp(ratio, 1 - CLIP_RANGE, 1 + CLIP_RANGE)
            policy_loss = -torch.min(ratio * advantages, clipped * advantages).mean()
            value_loss = nn.functional.mse_loss(values.float(), b.returns[index])
            loss = policy_loss + VALUE_COEF * value_loss - ENTROPY_COEF * distribution.entropy().mean()
        self._amp.minimize(loss, self._optimizer, clip_norm=MAX_GRAD_NORM)
        return float(loss.detach())

    def parameters(self) -> Iterator[nn.Parameter]:
        return chain_parameters([self._model])


@register_workload("PPO", "LunarLander", "PPO actor-critic (64-64 tanh) minibatch updates, obs 8, 4 actions")
def build(config: WorkloadConfig, wrap: ModuleWrapper) -> TrainingStep:
    return PpoUpdateStep(config, wrap)
