"""2-layer LSTM language model on Wikitext-2, trained with truncated back-propagation.

Sized like PyTorch's word-language-model example: vocabulary 33,278 (Wikitext-2),
embeddings and hidden states of 200, two layers, dropout 0.2, 35-token segments,
SGD at learning rate 20 with gradients clipped to 0.25.  The hidden state is
carried from one segment to the next and detached, as truncated BPTT does.
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

VOCAB = 33278
LAYERS = 2


@dataclass(frozen=True, slots=True)
class LanguageModelShape:
    width: int
    bptt: int


EXAMPLE = LanguageModelShape(width=200, bptt=35)
TINY = LanguageModelShape(width=16, bptt=8)

Hidden = tuple[torch.Tensor, torch.Tensor]


class LSTMLanguageModel(nn.Module):
    def __init__(self, width: int, dropout: float = 0.2) -> None:
        super().__init__()
        self.embedding = nn.Embedding(VOCAB, width)
        self.dropout = nn.Dropout(dropout)
        self.lstm = nn.LSTM(width, width, num_layers=LAYERS, dropout=dropout, batch_first=True)
        self.decoder = nn.Linear(width, VOCAB)

    def forward(self, tokens: torch.Tensor, hidden: Hidden) -> tuple[torch.Tensor, Hidden]:
        output, hidden = self.lstm(self.dropout(self.embedding(tokens)), hidden)
        return self.decoder(self.dropout(output)), hidden


class TruncatedBpttStep:
    """One segment of truncated BPTT: predict each next token, carry the state on."""

    def __init__(self, config: WorkloadConfig, wrap: ModuleWrapper) -> None:
        shape = TINY if config.tiny else EXAMPLE
        device = config.torch_device
        with seeded(config.seed):
            self._model = LSTMLanguageModel(shape.width).to(device)
        self._model.train()
        self._trained = wrap(self._model)
        self._optimizer = torch.optim.SGD(self._trained.parameters(), lr=20.0)
        self._amp = MixedPrecision(config.amp, device)
        self._segments = BatchPool(
            lambda g: torch.randint(0, VOCAB, (config.batch_size, shape.bptt + 1), generator=g).to(device),
            seed=config.seed + 1,
        )
        zeros = torch.zeros(LAYERS, config.batch_size, shape.width, device=device)
        self._hidden: Hidden = (zeros, zeros.clone())
        self.samples_per_step = config.batch_size

    def step(self) -> float:
        segment = next(self._segments)
        hidden = (self._hidden[0].detach(), self._hidden[1].detach())
        with self._amp.autocast():
            logits, hidden = self._trained(segment[:, :-1], hidden)
            loss = nn.functional.cross_entropy(logits.reshape(-1, VOCAB), segment[:, 1:].reshape(-1))
        self._amp.minimize(loss, self._optimizer, clip_norm=0.25)
        self._hidden = (hidden[0].float(), hidden[1].float())
        return float(loss.detach())

    def parameters(self) -> Iterator[nn.Parameter]:
        return chain_parameters([self._model])


@register_workload("LSTM", "Wikitext2", "2-layer LSTM LM, width 200, 35-token BPTT, vocabulary 33,278, SGD")
def build(config: WorkloadConfig, wrap: ModuleWrapper) -> TrainingStep:
    return TruncatedBpttStep(config, wrap)
