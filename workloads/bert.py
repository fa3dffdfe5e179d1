"""BERT-base fine-tuning for SQuAD span prediction: start and end logits per token.

A BERT-base-sized encoder (12 post-norm layers, hidden 768, 12 heads, GELU,
vocabulary 30522, sequences of 384 tokens, question/context segment ids) with the
usual QA head: a linear layer giving each token a start and an end logit.  Trained
from random weights -- throughput does not depend on the weights.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from workloads.base import ModuleWrapper, TrainingStep, WorkloadConfig, build_supervised
from workloads.registry import register_workload

VOCAB = 30522
SEGMENTS = 2
MAX_POSITIONS = 512


@dataclass(frozen=True, slots=True)
class BertShape:
    hidden: int
    layers: int
    heads: int
    intermediate: int
    sequence: int


BERT_BASE = BertShape(hidden=768, layers=12, heads=12, intermediate=3072, sequence=384)
BERT_TINY = BertShape(hidden=32, layers=2, heads=2, intermediate=64, sequence=16)


class BertForQuestionAnswering(nn.Module):
    def __init__(self, shape: BertShape, dropout: float = 0.1) -> None:
        super().__init__()
        self.words = nn.Embedding(VOCAB, shape.hidden)
        self.positions = nn.Embedding(MAX_POSITIONS, shape.hidden)
        self.segments = nn.Embedding(SEGMENTS, shape.hidden)
        self.embedding_norm = nn.LayerNorm(shape.hidden, eps=1e-12)
        self.dropout = nn.Dropout(dropout)
        layer = nn.TransformerEncoderLayer(
            d_model=shape.hidden,
            nhead=shape.heads,
            dim_feedforward=shape.intermediate,
            dropout=dropout,
            activation="gelu",
            layer_norm_eps=1e-12,
            batch_first=True,
            norm_first=False,
        )
        self.encoder = nn.TransformerEncoder(layer, num_layers=shape.layers, enable_nested_tensor=False)
        self.qa_outputs = nn.Linear(shape.hidden, 2)

    def forward(self, tokens: torch.Tensor, segments: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        positions = torch.arange(tokens.shape[1], device=tokens.device).unsqueeze(0)
        hidden = self.words(tokens) + self.positions(positions) + self.segments(segments)
        hidden = self.encoder(self.dropout(self.embedding_norm(hidden)))
        start, end = self.qa_outputs(hidden).unbind(dim=-1)
        return start, end


Batch = tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]


def squad_batch(generator: torch.Generator, batch_size: int, sequence: int) -> Batch:
    """Token ids, segment ids (question then context) and answer start/end positions."""
    tokens = torch.randint(0, VOCAB, (batch_size, sequence), generator=generator)
    question = sequence // 8
    segments = torch.zeros(batch_size, sequence, dtype=torch.long)
    segments[:, question:] = 1
    start = torch.randint(question, sequence - 1, (batch_size,), generator=generator)
    length = torch.randint(0, 8, (batch_size,), generator=generator)
    end = torch.clamp(start + length, max=sequence - 1)
    return tokens, segments, start, end


def span_loss(model: nn.Module, batch: Batch) -> torch.Tensor:
    tokens, segments, start, end = batch
    start_logits, end_logits = model(tokens, segments)
    loss = nn.functional.cross_entropy(start_logits, start) + nn.functional.cross_entropy(end_logits, end)
    return loss / 2


@register_workload("BERT", "SQuAD", "BERT-base encoder + span head, 384-token sequences, AdamW")
def build(config: WorkloadConfig, wrap: ModuleWrapper) -> TrainingStep:
    shape = BERT_TINY if config.tiny else BERT_BASE
    return build_supervised(
        config,
        wrap,
        make_model=lambda: BertForQuestionAnswering(shape),
        make_batch=lambda g: squad_batch(g, config.batch_size, shape.sequence),
        compute_loss=span_loss,
        make_optimizer=lambda params: torch.optim.AdamW(params, lr=3e-5, weight_decay=0.01),
    )
