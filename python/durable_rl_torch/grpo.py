"""One GRPO update of a policy on a rollout's samples (src/rl/policy-update.ts updatePolicy): ppoEpochs
passes, each cut into miniBatches optimiser steps over whole groups, each accumulated over micro-batches."""
from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence

import torch

from .contracts import RlConfig
from .distributed import World
from .losses import PgLossOptions
from .models import Placement
from .pg_batch import KlInReward, PgBatch, build_pg_batch, mini_batch_rows, rows_by_length, staleness_histogram
from .rng import mix_seed, mulberry32
from .trainer import AdamW, sequence_logprobs, train_step

REFERENCE_CHUNK_ROWS = 16
# src/config/recorded.ts RECORDED_MICRO_BATCH: what an input recorded before rl.microBatch meant.
RECORDED_MICRO_BATCH = {"rows": 16, "byLength": False}


def pg_loss_options(rl: RlConfig) -> PgLossOptions:
    """verl's loss from the run config (src/rl/policy-update.ts pgLossOptions)."""
    return PgLossOptions(
        clip_low=rl.clipEpsLow if rl.clipEpsLow is not None else rl.clipEps,
        clip_high=rl.clipEpsHigh if rl.clipEpsHigh is not None else rl.clipEps,
        dual_clip_c=rl.dualClipC,
        agg_mode=rl.lossAggMode,
        loss_scale_factor=rl.lossScaleFactor if rl.lossScaleFactor is not None else rl.maxNewTokens,
        temperature=rl.temperature if rl.temperature > 0 else 1.0,
        entropy_coeff=rl.entropyCoeff,
        kl_coef=rl.klLossCoef if rl.useKlLoss else None,
        kl_kind=rl.klLossType,
    )


def response_logprobs(model: Any, samples: Sequence[dict[str, Any]], max_seq: int, where: Placement, temperature: float, by_length: bool, progress: Callable[[int, int], None], world: Optional[World] = None) -> list[Optional[list[float]]]:
    """Logprobs of each sample's trained response tokens under `model` (0 elsewhere), response-aligned;
    None for a sample longer than maxSeq or without a trained token (it is not trained on). With a
    world, each chunk's rows are spread over the ranks."""
    scored = [i for i, s in enumerate(samples) if len(s["promptTokens"]) + len(s["responseTokens"]) <= max_seq and any(m > 0 for m in s["lossMask"])]
    if by_length:
        scored = [scored[k] for k in rows_by_length([samples[i]["promptTokens"] + samples[i]["responseTokens"] for i in scored])]
    out: list[Optional[list[float]]] = [None] * len(samples)
    model.eval()
    span = REFERENCE_CHUNK_ROWS * (world.size if world is not None else 1)
    for start in range(0, len(scored), span):
        part = scored[start : start + span]
        rows = [samples[i]["promptTokens"] + samples[i]["responseTokens"] for i in part]
        masks = [[0.0] * len(samples[i]["promptTokens"]) + list(samples[i]["lossMask"]) for i in part]
        lp = sequence_logprobs(model, rows, masks, max_seq, where, temperature, chunk=REFERENCE_CHUNK_ROWS, world=world)
        for i, row in zip(part, lp):
            out[i] = row[len(samples[i]["promptTokens"]) :]
        progress(start + len(part), len(scored))
    return out


@dataclass
class GrpoUpdate:
    numbers: dict[str, Any]
    per_sample: list[dict[str, Any]]


def run_grpo_update(
    model: Any,
    optim: AdamW,
    samples: Sequence[dict[str, Any]],
    rl: RlConfig,
    *,
    max_seq: int,
    where: Placement,
    seed: int,
    reference: Optional[Any] = None,
    policy_version: Optional[int] = None,
    objective: str = "grpo",
    progress: Callable[[dict[str, Any]], None] = lambda p: None,
    world: Optional[World] = None,
) -> GrpoUpdate:
    """reference: a model (or a context manager factory yielding one) scoring the frozen reference policy.
    world: the ranks of a sharded model, each running this same call (trainer.train_step)."""
    pg = pg_loss_options(rl)
    micro = rl.microBatch
    micro_rows = micro.rows if micro else RECORDED_MICRO_BATCH["rows"]
    by_length = micro.byLength if micro else bool(RECORDED_MICRO_BATCH["byLength"])
    needs_ref = rl.useKlLoss or rl.useKlInReward
    ref_lp = None
    if needs_ref:
        if reference is None:
            raise ValueError("rl.useKlLoss and rl.useKlInReward need the reference checkpoint (the policy RL started from)")
        with reference() as ref_model:
            ref_lp = response_logprobs(ref_model, samples, max_seq, where, pg.temperature, by_length, lambda d, t: progress({"phase": "reference", "done": d, "total": t}), world)
    correction = rl.async_.correction if rl.async_ is not None and rl.async_.maxStaleness > 0 and policy_version is not None else "none"
    prox = None
    if correction != "none":
        prox = response_logprobs(model, samples, max_seq, where, pg.temperature, by_length, lambda d, t: progress({"phase": "proximal", "done": d, "total": t}), world)
    built = build_pg_batch(
        samples,
        max_seq=max_seq,
        norm_by_std=rl.normAdvByStd,
        epsilon=rl.advEpsilon,
        kl_in_reward=KlInReward(rl.klRewardCoef, rl.klPenalty, ref_lp) if rl.useKlInReward and ref_lp is not None else None,
        ref_logprobs=ref_lp if rl.useKlLoss else None,
        off_policy={"prox": prox, "mode": correction, "cap": rl.async_.isCap} if prox is not None and rl.async_ is not None else None,
        objective=objective,
        advantage_norm=rl.advantageNorm,
    )
    batch = built.batch
    rows = len(batch.tokens)
    # verl's on-policy case (one epoch, one mini-batch): the ratio is taken against the current logprobs.
    on_policy = rl.ppoEpochs == 1 and rl.miniBatches == 1
    plan = [mini_batch_rows(built.row_groups, rl.miniBatches, mulberry32(mix_seed(seed, epoch))) for epoch in range(rl.ppoEpochs if rows > 0 else 0)]
    total = sum(len(p) for p in plan)
    acc = dict(tokens_run=0, padded=0, steps=0, loss=0.0, pg_loss=0.0, kl_loss=0.0, grad_norm=0.0, finite=0, grad_norm_last=0.0, non_finite=0, tokens=0, clipped=0.0, clipped_lower=0.0, approx_kl=0.0, entropy=0.0, entropy_weight=0.0)
    started = time.perf_counter()
    for epoch, parts in enumerate(plan):
        for part in parts:
            sub = batch.rows(part)
            if on_policy:
                sub.old_logprobs = None
            steps_done = acc["steps"]
            r = train_step(
                model, sub, optim, rl.learningRate, max_seq=max_seq, where=where, pg=pg, micro_batch_rows=micro_rows, by_length=by_length,
                on_micro_batch=lambda mb, mbs: progress({"phase": "update", "done": steps_done, "total": total, "microBatch": mb, "microBatches": mbs}),
                world=world,
            )
            if not math.isfinite(r.loss):
                raise RuntimeError(f"GRPO loss is {r.loss}")
            acc["steps"] += 1
            acc["tokens_run"] += r.tokens_run
            acc["padded"] += r.padded_tokens_run
            acc["loss"] += r.loss
            acc["pg_loss"] += r.pg_loss or 0.0
            acc["kl_loss"] += r.kl_loss or 0.0
            acc["grad_norm_last"] = r.grad_norm
            if math.isfinite(r.grad_norm):
                acc["grad_norm"] += r.grad_norm
                acc["finite"] += 1
            else:
                acc["non_finite"] += 1
            acc["tokens"] += r.tokens
            acc["clipped"] += (r.clip_fraction or 0.0) * r.tokens
            acc["clipped_lower"] += (r.clip_fraction_lower or 0.0) * r.tokens
            acc["approx_kl"] += r.approx_kl or 0.0
            if epoch == 0 and r.entropy is not None:
                weight = r.tokens if pg.agg_mode == "token-mean" else r.seqs
                acc["entropy"] += r.entropy * weight
                acc["entropy_weight"] += weight
    steps = acc["steps"]
    per_step = lambda x: 0.0 if steps == 0 else x / steps
    per_token = lambda x: 0.0 if acc["tokens"] == 0 else x / acc["tokens"]
    clip_frac = per_token(acc["clipped"])
    numbers: dict[str, Any] = {
        "loss": per_step(acc["loss"]),
        "pgLoss": per_step(acc["pg_loss"]),
        "pgClipFrac": clip_frac,
        "pgClipFracLower": per_token(acc["clipped_lower"]),
        "approxKl": per_step(acc["approx_kl"]),
        "entropy": 0.0 if acc["entropy_weight"] == 0 else acc["entropy"] / acc["entropy_weight"],
        "gradNorm": 0.0 if acc["finite"] == 0 else acc["grad_norm"] / acc["finite"],
        "gradNormLast": acc["grad_norm_last"],
    }
    if rl.useKlLoss:
        numbers["klLoss"] = per_step(acc["kl_loss"])
    if built.stats.reward_kl_penalty is not None:
        numbers["rewardKlPenalty"] = built.stats.reward_kl_penalty
    if policy_version is not None:
        numbers["staleness"] = staleness_histogram([s["metadata"]["weightVersion"] for s in samples], policy_version)
        numbers["partialSamples"] = sum(1 for s in samples if len(s["metadata"].get("weightVersions") or []) > 1)
    if built.off_policy is not None:
        numbers["offPolicyCapped"] = built.off_policy["capped"]
        numbers["offPolicyMeanWeight"] = built.off_policy["meanWeight"]
    numbers.update({
        "optimizerSteps": steps,
        "nonFiniteGradSteps": acc["non_finite"],
        "tokens": sum(1 for row in batch.loss_mask for m in row[1:] if m > 0),
        "rows": rows,
        "meanResponseLength": 0.0 if rows == 0 else sum(built.response_lengths) / rows,
        "tokensRun": acc["tokens_run"],
        "paddedTokensRun": acc["padded"],
        "updateSeconds": time.perf_counter() - started,
        "skipped": built.skipped,
        "tooLong": built.too_long,
        **({"rejected": built.rejected} if built.rejected is not None else {}),
        "meanReward": built.stats.mean_reward,
        "groups": built.stats.groups,
        "flatGroups": built.stats.flat_groups,
        "clipFraction": clip_frac,
    })
    return GrpoUpdate(numbers, built.per_sample)
