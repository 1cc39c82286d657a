"""Supervised fine-tuning chunks (src/sft/sft.ts): batches drawn from (seed, step) alone with the tfjs
trainer's generator, so a retried chunk replays the same updates and both trainers see the same rows."""
from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence

from .contracts import SftConfig
from .distributed import World
from .models import Placement
from .pg_batch import PgBatch
from .rng import mix_seed, mulberry32
from .trainer import SFT_PASS_TOKENS, AdamW, train_step


def learning_rate_at(step: int, total_steps: int, base_lr: float, warmup_steps: int) -> float:
    """src/sft/schedule.ts: linear warm-up, then cosine decay to 10% of the base rate."""
    if warmup_steps > 0 and step <= warmup_steps:
        return base_lr * step / warmup_steps
    span = max(1, total_steps - warmup_steps)
    progress = min(1.0, max(0.0, (step - warmup_steps) / span))
    return base_lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress)))


def sample_sft_batch(examples: Sequence[dict[str, Any]], batch_size: int, seed: int, step: int) -> PgBatch:
    if not examples:
        raise ValueError("the SFT dataset is empty")
    rand = mulberry32(mix_seed(seed, step))
    picks = [examples[math.floor(rand() * len(examples))] for _ in range(batch_size)]
    return PgBatch(tokens=[list(e["tokens"]) for e in picks], loss_mask=[list(e["lossMask"]) for e in picks])


def trained_tokens_of(batch: PgBatch) -> int:
    return sum(1 for row in batch.loss_mask for m in row[1:] if m > 0)


def cap_trained_tokens(batch: PgBatch, limit: int) -> PgBatch:
    """The loss mask cut to the first `limit` trained tokens in row order (src/sft/sft.ts capTrainedTokens)."""
    left = max(0, limit)
    masks = []
    for row in batch.loss_mask:
        out = []
        for i, m in enumerate(row):
            if i == 0 or m <= 0:
                out.append(m)
            elif left <= 0:
                out.append(0)
            else:
                left -= 1
                out.append(m)
        masks.append(out)
    return PgBatch(tokens=batch.tokens, loss_mask=masks)


@dataclass
class SftChunk:
    last_step: int
    losses: list[dict[str, float]]
    tokens_per_sec: float
    trained_tokens: int


def run_sft_chunk(
    model: Any,
    optim: AdamW,
    start_step: int,
    examples: Sequence[dict[str, Any]],
    to_step: int,
    sft: SftConfig,
    seed: int,
    max_seq: int,
    where: Placement,
    on_step: Callable[[int, float], None] = lambda s, l: None,
    max_trained_tokens: Optional[int] = None,
    world: Optional[World] = None,
) -> SftChunk:
    limit = math.inf if max_trained_tokens is None else max_trained_tokens
    losses: list[dict[str, float]] = []
    tokens = trained = 0
    last = start_step
    started = time.perf_counter()
    step = start_step + 1
    while step <= to_step and trained < limit:
        sampled = sample_sft_batch(examples, sft.batchSize, seed, step)
        whole = trained_tokens_of(sampled)
        take = int(min(whole, limit - trained))
        batch = cap_trained_tokens(sampled, take) if take < whole else sampled
        # A step cut at the budget weighs its few tokens as a whole step's mean: its rate shrinks instead.
        kept = take / whole if take < whole else 1.0
        lr = kept * learning_rate_at(step, sft.steps, sft.learningRate, sft.warmupSteps)
        r = train_step(model, batch, optim, lr, max_seq=max_seq, where=where, pass_tokens=SFT_PASS_TOKENS, by_length=True, world=world)
        if not math.isfinite(r.loss):
            raise RuntimeError(f"SFT loss is {r.loss} at step {step}")
        losses.append({"step": step, "loss": r.loss})
        tokens += sum(len(row) for row in batch.tokens)
        trained += take
        last = step
        on_step(step, r.loss)
        step += 1
    seconds = time.perf_counter() - started
    return SftChunk(last, losses, tokens / seconds if seconds > 0 else 0.0, trained)
