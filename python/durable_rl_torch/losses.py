"""The objectives, as src/rl/{agg-loss,policy-loss,kl,loss}.ts compute them, in torch: SFT's
cross-entropy and verl's actor loss (clipped policy gradient with asymmetric and dual clip, entropy
bonus, KL loss against a reference), every aggregation mode with the mini-batch's shared denominators,
so micro-batch gradients sum exactly to the mini-batch's. Checked against verl's core_algos
(python/tests/test_verl_parity.py) and the tfjs trainer (test/torch/tfjs-parity.test.ts)."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

import torch
from torch.utils.checkpoint import checkpoint

LOG_RATIO_LIMIT = 20.0
K3_VALUE_LIMIT = 10.0
ROW_EPS = 1e-8


@dataclass(frozen=True)
class LossNorm:
    """Denominators of one mini-batch: trained tokens, rows with a trained token, seq-mean-token-sum-norm's divisor."""

    tokens: int
    seqs: int
    scale_factor: float


def loss_norm_of(mask_rows: list[list[float]], scale_factor: float) -> LossNorm:
    tokens = seqs = 0
    for row in mask_rows:
        n = sum(1 for m in row if m > 0)
        tokens += n
        seqs += 1 if n > 0 else 0
    return LossNorm(tokens, seqs, scale_factor)


def agg_loss(loss_mat: torch.Tensor, mask: torch.Tensor, mode: str, norm: LossNorm) -> torch.Tensor:
    """verl agg_loss with global-batch denominators (src/rl/agg-loss.ts)."""
    masked = loss_mat * mask
    if mode == "token-mean":
        return masked.sum() / max(norm.tokens, 1)
    if mode == "seq-mean-token-sum":
        return masked.sum() / max(norm.seqs, 1)
    if mode == "seq-mean-token-mean":
        per_row = masked.sum(-1) / (mask.sum(-1) + ROW_EPS)
        return per_row.sum() / max(norm.seqs, 1)
    if mode == "seq-mean-token-sum-norm":
        return masked.sum() / (max(norm.seqs, 1) * norm.scale_factor)
    raise ValueError(f"unknown loss aggregation mode {mode!r}")


@dataclass
class ClipOptions:
    clip_low: float
    clip_high: float
    dual_clip_c: float


@dataclass
class PolicyLossOutput:
    loss: torch.Tensor
    clip_frac: torch.Tensor
    clip_frac_lower: torch.Tensor
    ppo_kl: torch.Tensor


def policy_loss(logprob: torch.Tensor, old: torch.Tensor, adv: torch.Tensor, mask: torch.Tensor, clip: ClipOptions, mode: str, norm: LossNorm, weights: Optional[torch.Tensor] = None) -> PolicyLossOutput:
    """verl compute_policy_loss_vanilla (src/rl/policy-loss.ts); adv is [rows, len] or [rows, 1]."""
    if not clip.dual_clip_c > 1:
        raise ValueError(f"dualClipC must be > 1 (verl clip_ratio_c), got {clip.dual_clip_c}")
    log_ratio = torch.clamp(logprob - old, -LOG_RATIO_LIMIT, LOG_RATIO_LIMIT)
    ratio = torch.exp(log_ratio)
    pg1 = -adv * ratio
    pg2 = -adv * torch.clamp(ratio, 1 - clip.clip_low, 1 + clip.clip_high)
    clip1 = torch.maximum(pg1, pg2)
    pg3 = -adv * clip.dual_clip_c
    negative = (adv < 0).expand_as(clip1)
    clipped = torch.where(negative, torch.minimum(pg3, clip1), clip1)
    per_token = clipped * weights if weights is not None else clipped
    tokens = torch.clamp(mask.sum(), min=1)

    def masked_mean(t: torch.Tensor) -> torch.Tensor:
        return (t * mask).sum() / tokens

    return PolicyLossOutput(
        loss=agg_loss(per_token, mask, mode, norm),
        clip_frac=masked_mean((pg2 > pg1).to(mask.dtype)).detach(),
        clip_frac_lower=masked_mean(((clip1 > pg3) & negative).to(mask.dtype)).detach(),
        ppo_kl=masked_mean(-log_ratio).detach(),
    )


def kl_penalty_tensor(logprob: torch.Tensor, ref: torch.Tensor, kind: str) -> torch.Tensor:
    """verl kl_penalty (src/rl/kl.ts); gradients flow through logprob."""
    if kind in ("kl", "k1"):
        return logprob - ref
    if kind == "abs":
        return (logprob - ref).abs()
    if kind in ("mse", "k2"):
        return 0.5 * (logprob - ref).square()
    if kind in ("low_var_kl", "k3"):
        d = torch.clamp(ref - logprob, -LOG_RATIO_LIMIT, LOG_RATIO_LIMIT)
        return torch.clamp(torch.exp(d) - d - 1, -K3_VALUE_LIMIT, K3_VALUE_LIMIT)
    raise ValueError(f"unknown KL estimator {kind!r}")


def kl_penalty(logprob: float, ref: float, kind: str) -> float:
    if kind in ("kl", "k1"):
        return logprob - ref
    if kind == "abs":
        return abs(logprob - ref)
    if kind in ("mse", "k2"):
        return 0.5 * (logprob - ref) ** 2
    if kind in ("low_var_kl", "k3"):
        d = min(LOG_RATIO_LIMIT, max(-LOG_RATIO_LIMIT, ref - logprob))
        return min(K3_VALUE_LIMIT, max(-K3_VALUE_LIMIT, math.exp(d) - d - 1))
    raise ValueError(f"unknown KL estimator {kind!r}")


@dataclass
class PgLossOptions:
    clip_low: float = 0.2
    clip_high: float = 0.2
    dual_clip_c: float = 3.0
    agg_mode: str = "token-mean"
    loss_scale_factor: Optional[float] = None
    temperature: float = 1.0
    entropy_coeff: float = 0.0
    kl_coef: Optional[float] = None
    kl_kind: str = "low_var_kl"

    @property
    def kl_loss(self) -> bool:
        return self.kl_coef is not None


@dataclass
class ActorLossTerms:
    total: torch.Tensor
    pg: PolicyLossOutput
    entropy: torch.Tensor
    kl_loss: Optional[torch.Tensor]


def actor_loss(logprob: torch.Tensor, old: torch.Tensor, adv: torch.Tensor, mask: torch.Tensor, entropy: torch.Tensor, opts: PgLossOptions, norm: LossNorm, ref: Optional[torch.Tensor] = None, weights: Optional[torch.Tensor] = None) -> ActorLossTerms:
    """verl's actor objective (src/rl/loss.ts actorLoss): pg - entropyCoeff·entropy + coef·KL."""
    pg = policy_loss(logprob, old, adv, mask, ClipOptions(opts.clip_low, opts.clip_high, opts.dual_clip_c), opts.agg_mode, norm, weights)
    total = pg.loss
    ent = agg_loss(entropy, mask, opts.agg_mode, norm)
    if opts.entropy_coeff != 0:
        total = total - ent * opts.entropy_coeff
    kl = None
    if opts.kl_loss:
        if ref is None:
            raise ValueError("the KL loss needs the reference policy's logprobs")
        kl = agg_loss(kl_penalty_tensor(logprob, ref, opts.kl_kind), mask, opts.agg_mode, norm)
        total = total + kl * float(opts.kl_coef)  # type: ignore[arg-type]
    return ActorLossTerms(total, pg, ent.detach(), kl.detach() if kl is not None else None)


def sft_loss(logprob: torch.Tensor, mask: torch.Tensor, norm: LossNorm) -> torch.Tensor:
    return -(logprob * mask).sum() / norm.tokens


# ---- log-probabilities without materialising [tokens, vocab] for the backward pass ----

# Positions per chunk of the output head: the logits of a chunk ([chunk, vocab], float32) are the
# largest tensor of an update; recomputed in the backward pass instead of kept (a fused linear
# cross-entropy in the manner of liger-kernel's, in plain torch).
HEAD_CHUNK = 1024


def _head_chunk(hidden: torch.Tensor, weight: torch.Tensor, targets: torch.Tensor, temperature: float, want_entropy: bool, entropy_grad: bool) -> tuple[torch.Tensor, torch.Tensor]:
    logits = torch.nn.functional.linear(hidden, weight).float()
    if temperature != 1:
        logits = logits / temperature
    lsm = torch.log_softmax(logits, dim=-1)
    lp = lsm.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    if not want_entropy:
        return lp, torch.zeros_like(lp)
    # verl entropy_from_logits: logsumexp - Σ softmax·logits, i.e. -Σ p log p of the tempered logits.
    # A metric unless the loss has an entropy bonus: then no graph is kept for it.
    with torch.set_grad_enabled(entropy_grad and torch.is_grad_enabled()):
        ent = -(torch.exp(lsm) * lsm).sum(-1)
    return lp, ent


def target_logprobs(hidden: torch.Tensor, weight: torch.Tensor, targets: torch.Tensor, temperature: float = 1.0, want_entropy: bool = False, entropy_grad: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """log p(target) under softmax(head(hidden) / temperature) and the entropy of that distribution, per
    position: hidden [n, d], targets [n] -> ([n], [n]). Chunked and checkpointed when gradients flow."""
    n = hidden.shape[0]
    if n <= HEAD_CHUNK or not torch.is_grad_enabled():
        # No position at all still goes through the head once: a rank of a sharded model with nothing
        # to score joins the pass, and the head's gradient (zero) is reduced with the other ranks'.
        parts = [_head_chunk(hidden[i : i + HEAD_CHUNK], weight, targets[i : i + HEAD_CHUNK], temperature, want_entropy, entropy_grad) for i in range(0, max(n, 1), HEAD_CHUNK)]
    else:
        parts = [
            checkpoint(_head_chunk, hidden[i : i + HEAD_CHUNK], weight, targets[i : i + HEAD_CHUNK], temperature, want_entropy, entropy_grad, use_reentrant=False)
            for i in range(0, n, HEAD_CHUNK)
        ]
    return torch.cat([p[0] for p in parts]), torch.cat([p[1] for p in parts])
