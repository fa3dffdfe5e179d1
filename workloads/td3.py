"""TD3 on BipedalWalker: twin-critic and delayed actor updates on a replay buffer.

The algorithm and sizes of Fujimoto et al.'s reference implementation: 256-256
actor and twin critics, target networks with soft updates (tau 0.005), target
policy smoothing (noise 0.2 clipped at 0.5), the actor and targets updated every
second step, Adam at 3e-4, discount 0.99.  The replay buffer holds synthetic
transitions of BipedalWalker's shapes: 24-dimensional observations and 4
continuous actions in [-1, 1].
"""

from __future__ import annotations

import copy
from collections.abc import Iterator

import torch
from torch import nn

from workloads.base import (
    MixedPrecision,
    ModuleWrapper,
    TrainingStep,
    WorkloadConfig,
    chain_parameters,
    seeded,
)
from workloads.registry import register_workload

OBSERVATIONS = 24
ACTIONS = 4
MAX_ACTION = 1.0
DISCOUNT = 0.99
TAU = 0.005
POLICY_NOISE = 0.2
NOISE_CLIP = 0.5
POLICY_DELAY = 2


class Actor(nn.Module):
    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(OBSERVATIONS, hidden),
            nn.ReLU(),
            nn.Linear(hidden, hidden),
            nn.ReLU(),
            nn.Linear(hidden, ACTIONS),
            nn.Tanh(),
        )

    def forward(self, state: torch.Tensor) -> torch.Tensor:
        return MAX_ACTION * self.net(state)


def _q_network(hidden: int) -> nn.Sequential:
    return nn.Sequential(
        nn.Linear(OBSERVATIONS + ACTIONS, hidden),
        nn.ReLU(),
        nn.Linear(hidden, hidden),
        nn.ReLU(),
        nn.Linear(hidden, 1),
    )


class TwinCritic(nn.Module):
    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.q1_net = _q_network(hidden)
        self.q2_net = _q_network(hidden)

    def forward(self, state: torch.Tensor, action: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        joint = torch.cat([state, action], dim=1)
        return self.q1_net(joint), self.q2_net(joint)

    def q1(self, state: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        return self.q1_net(torch.cat([state, action], dim=1))


class ReplayBuffer:
    def __init__(self, size: int, generator: torch.Generator, device: torch.device) -> None:
        self.state = torch.randn(size, OBSERVATIONS, generator=generator).to(device)
        self.action = torch.rand(size, ACTIONS, generator=generator).mul(2).sub(1).to(device)
        self.next_state = torch.randn(size, OBSERVATIONS, generator=generator).to(device)
        self.reward = torch.randn(size, 1, generator=generator).to(device)
        self.not_done = (torch.rand(size, 1, generator=generator) > 0.01).float().to(device)
        self.size = size


class Td3UpdateStep:
    def __init__(self, config: WorkloadConfig, wrap: ModuleWrapper) -> None:
        device = config.torch_device
        hidden, buffer_size = (16, 256) if config.tiny else (256, 100_000)
        with seeded(config.seed):
            self._actor = Actor(hidden).to(device)
            self._critic = TwinCritic(hidden).to(device)
        self._actor_target = copy.deepcopy(self._actor).requires_grad_(False)
        self._critic_target = copy.deepcopy(self._critic).requires_grad_(False)
        self._actor_trained = wrap(self._actor)
        self._critic_trained = wrap(self._critic)
        self._actor_optimizer = torch.optim.Adam(self._actor_trained.parameters(), lr=3e-4)
        self._critic_optimizer = torch.optim.Adam(self._critic_trained.parameters(), lr=3e-4)
        self._amp = MixedPrecision(config.amp, device)
        self._buffer = ReplayBuffer(buffer_size, torch.Generator().manual_seed(config.seed + 1), device)
        self._sampler = torch.Generator(device=device).manual_seed(config.seed + 2)
        self._batch_size = config.batch_size
        self._iterations = 0
        self.samples_per_step = config.batch_size

    def step(self) -> float:
        b = self._buffer
        index = torch.randint(0, b.size, (self._batch_size,), device=b.state.device, generator=self._sampler)
        state, action = b.state[index], b.action[index]
        with torch.no_grad(), self._amp.autocast():
            noise = (torch.randn_like(action) * POLICY_NOISE).clamp(-NOISE_CLIP, NOISE_CLIP)
            next_action = (self._actor_target(b.next_state[index]) + noise).clamp(-MAX_ACTION, MAX_ACTION)
            target_q1, target_q2 = self._critic_target(b.next_state[index], next_action)
            target_q = (
                b.reward[index] + b.not_done[index] * DISCOUNT * torch.min(target_q1, target_q2).float()
            )
        with self._amp.autocast():
            q1, q2 = self._critic_trained(state, action)
            critic_loss = nn.functional.mse_loss(q1.float(), target_q) + nn.functional.mse_loss(
                q2.float(), target_q
            )
        self._amp.minimize(critic_loss, self._critic_optimizer)

        self._iterations += 1
        if self._iterations % POLICY_DELAY == 0:
            # The actor is judged by the first critic alone; calling it unwrapped keeps
            # DistributedDataParallel from waiting for the second critic's gradients.
            with self._amp.autocast():
                actor_loss = -self._critic.q1(state, self._actor_trained(state)).float().mean()
            self._amp.minimize(actor_loss, self._actor_optimizer)
            self._soft_update(self._actor, self._actor_target)
            self._soft_update(self._critic, self._critic_target)
        return float(critic_loss.detach())

    @staticmethod
    @torch.no_grad()
    def _soft_update(source: nn.Module, target: nn.Module) -> None:
        for param, target_param in zip(source.parameters(), target.parameters(), strict=True):
            target_param.lerp_(param, TAU)

    def parameters(self) -> Iterator[nn.Parameter]:
        return chain_parameters([self._actor, self._critic])


@register_workload("TD3", "BipedalWalker", "TD3 twin critics + delayed actor (256-256), obs 24, 4 actions")
def build(config: WorkloadConfig, wrap: ModuleWrapper) -> TrainingStep:
    return Td3UpdateStep(config, wrap)
