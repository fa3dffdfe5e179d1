"""NeuMF (neural collaborative filtering) on MovieLens-1M: GMF and MLP branches fused.

He et al. (WWW'17): a generalized-matrix-factorization branch (element-wise product
of user and item embeddings) and an MLP branch (64-32-16-8 over concatenated
embeddings) joined by one linear layer predicting an interaction logit.  Batches are
implicit-feedback pairs, one observed interaction to four sampled negatives, as in
the paper; MovieLens-1M has 6,040 users and 3,706 items.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import torch
from torch import nn

from workloads.base import ModuleWrapper, TrainingStep, WorkloadConfig, build_supervised
from workloads.registry import register_workload

USERS = 6040
ITEMS = 3706
NEGATIVES_PER_POSITIVE = 4


@dataclass(frozen=True, slots=True)
class NeuMFShape:
    factors: int
    mlp: tuple[int, ...]


PAPER = NeuMFShape(factors=8, mlp=(64, 32, 16, 8))
TINY = NeuMFShape(factors=4, mlp=(16, 8, 4))


class NeuMF(nn.Module):
    def __init__(self, shape: NeuMFShape) -> None:
        super().__init__()
        half = shape.mlp[0] // 2
        self.gmf_user = nn.Embedding(USERS, shape.factors)
        self.gmf_item = nn.Embedding(ITEMS, shape.factors)
        self.mlp_user = nn.Embedding(USERS, half)
        self.mlp_item = nn.Embedding(ITEMS, half)
        layers: list[nn.Module] = []
        for inputs, outputs in itertools.pairwise(shape.mlp):
            layers += [nn.Linear(inputs, outputs), nn.ReLU()]
        self.mlp = nn.Sequential(*layers)
        self.predict = nn.Linear(shape.factors + shape.mlp[-1], 1)
        for embedding in (self.gmf_user, self.gmf_item, self.mlp_user, self.mlp_item):
            nn.init.normal_(embedding.weight, std=0.01)

    def forward(self, users: torch.Tensor, items: torch.Tensor) -> torch.Tensor:
        gmf = self.gmf_user(users) * self.gmf_item(items)
        mlp = self.mlp(torch.cat([self.mlp_user(users), self.mlp_item(items)], dim=-1))
        return self.predict(torch.cat([gmf, mlp], dim=-1)).squeeze(-1)


Batch = tuple[torch.Tensor, torch.Tensor, torch.Tensor]


def interactions(generator: torch.Generator, batch_size: int) -> Batch:
    users = torch.randint(0, USERS, (batch_size,), generator=generator)
    items = torch.randint(0, ITEMS, (batch_size,), generator=generator)
    positive = torch.arange(batch_size) % (NEGATIVES_PER_POSITIVE + 1) == 0
    return users, items, positive.float()


def implicit_feedback_loss(model: nn.Module, batch: Batch) -> torch.Tensor:
    users, items, labels = batch
    return nn.functional.binary_cross_entropy_with_logits(model(users, items).float(), labels)


@register_workload("NeuMF", "MovieLens", "NeuMF (GMF + 64-32-16-8 MLP), MovieLens-1M ids, 4 negatives, Adam")
def build(config: WorkloadConfig, wrap: ModuleWrapper) -> TrainingStep:
    shape = TINY if config.tiny else PAPER
    return build_supervised(
        config,
        wrap,
        make_model=lambda: NeuMF(shape),
        make_batch=lambda g: interactions(g, config.batch_size),
        compute_loss=implicit_feedback_loss,
        make_optimizer=lambda params: torch.optim.Adam(params, lr=1e-3),
    )
