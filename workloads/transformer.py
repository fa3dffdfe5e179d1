"""Transformer translation on Multi30k (German -> English): ``nn.Transformer`` encoder-decoder.

Sized like PyTorch's Multi30k translation tutorial: embeddings of 512, 8 heads,
3 encoder and 3 decoder layers, feed-forward 512, the tutorial's vocabularies
(19,214 German and 10,837 English tokens), sentences padded to 32 tokens, and
teacher forcing with a causal target mask.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

from workloads.base import ModuleWrapper, TrainingStep, WorkloadConfig, build_supervised
from workloads.registry import register_workload

SOURCE_VOCAB = 19214
TARGET_VOCAB = 10837


@dataclass(frozen=True, slots=True)
class TranslationShape:
    d_model: int
    heads: int
    layers: int
    feedforward: int
    sequence: int


TUTORIAL = TranslationShape(d_model=512, heads=8, layers=3, feedforward=512, sequence=32)
TINY = TranslationShape(d_model=32, heads=2, layers=1, feedforward=64, sequence=8)


class PositionalEncoding(nn.Module):
    """Sinusoidal positions added to scaled token embeddings."""

    def __init__(self, d_model: int, max_len: int = 256) -> None:
        super().__init__()
        position = torch.arange(max_len).unsqueeze(1)
        frequency = torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
        table = torch.zeros(max_len, d_model)
        table[:, 0::2] = torch.sin(position * frequency)
        table[:, 1::2] = torch.cos(position * frequency)
        self.table: torch.Tensor
        self.register_buffer("table", table, persistent=False)

    def forward(self, embedded: torch.Tensor) -> torch.Tensor:
        return embedded + self.table[: embedded.shape[1]]


class Seq2SeqTransformer(nn.Module):
    def __init__(self, shape: TranslationShape, dropout: float = 0.1) -> None:
        super().__init__()
        self.scale = math.sqrt(shape.d_model)
        self.source_embedding = nn.Embedding(SOURCE_VOCAB, shape.d_model)
        self.target_embedding = nn.Embedding(TARGET_VOCAB, shape.d_model)
        self.positions = PositionalEncoding(shape.d_model)
        self.transformer = nn.Transformer(
            d_model=shape.d_model,
            nhead=shape.heads,
            num_encoder_layers=shape.layers,
            num_decoder_layers=shape.layers,
            dim_feedforward=shape.feedforward,
            dropout=dropout,
            batch_first=True,
        )
        self.generator = nn.Linear(shape.d_model, TARGET_VOCAB)

    def forward(self, source: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        mask = nn.Transformer.generate_square_subsequent_mask(target.shape[1], device=target.device)
        encoded = self.positions(self.source_embedding(source) * self.scale)
        decoded = self.positions(self.target_embedding(target) * self.scale)
        return self.generator(self.transformer(encoded, decoded, tgt_mask=mask, tgt_is_causal=True))


Batch = tuple[torch.Tensor, torch.Tensor]


def sentence_pairs(generator: torch.Generator, batch_size: int, sequence: int) -> Batch:
    source = torch.randint(0, SOURCE_VOCAB, (batch_size, sequence), generator=generator)
    target = torch.randint(0, TARGET_VOCAB, (batch_size, sequence + 1), generator=generator)
    return source, target


def teacher_forced_loss(model: nn.Module, batch: Batch) -> torch.Tensor:
    source, target = batch
    logits = model(source, target[:, :-1])
    return nn.functional.cross_entropy(logits.reshape(-1, TARGET_VOCAB), target[:, 1:].reshape(-1))


@register_workload("Transformer", "Multi30k", "nn.Transformer 3+3 layers, d=512, German->English, Adam")
def build(config: WorkloadConfig, wrap: ModuleWrapper) -> TrainingStep:
    shape = TINY if config.tiny else TUTORIAL
    return build_supervised(
        config,
        wrap,
        make_model=lambda: Seq2SeqTransformer(shape),
        make_batch=lambda g: sentence_pairs(g, config.batch_size, shape.sequence),
        compute_loss=teacher_forced_loss,
        make_optimizer=lambda params: torch.optim.Adam(params, lr=1e-4, betas=(0.9, 0.98), eps=1e-9),
    )
