"""The update: token rows through the model, the loss from losses.py, micro-batches whose gradients sum
into one AdamW step (src/rl/trainer.ts's microBatchSteps). Only the positions a loss reads go through
the output head (loss-masked targets), and micro-batches cut from length-sorted rows keep padding low.

Per-token lists follow the tfjs trainer's alignment: entry t of a row concerns predicting tokens[t]
from tokens[<t], so entry 0 is never trained.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Optional, Sequence

import torch

from .losses import LossNorm, PgLossOptions, actor_loss, agg_loss, loss_norm_of, policy_loss, sft_loss, target_logprobs, ClipOptions
from .models import Placement
from .pg_batch import PgBatch, rows_by_length

# Rows · padded length per forward/backward pass of an SFT step (the tfjs trainer runs its SFT batch
# as one pass); gradients of the passes sum to the batch's, so only peak memory depends on it.
SFT_PASS_TOKENS = 16384


def hf_model(model: torch.nn.Module) -> Any:
    """The transformers model under a peft wrapper (or the model itself)."""
    get_base = getattr(model, "get_base_model", None)
    return get_base() if callable(get_base) else model


def hidden_states(model: torch.nn.Module, ids: torch.Tensor) -> torch.Tensor:
    """The decoder's last hidden states, [rows, len, d]. Rows are right-padded: under causal attention a
    position never sees the padding after it, so no attention mask is needed."""
    return hf_model(model).base_model(input_ids=ids, use_cache=False).last_hidden_state


def head_weight(model: torch.nn.Module) -> torch.Tensor:
    return hf_model(model).get_output_embeddings().weight


@dataclass
class Packed:
    ids: torch.Tensor  # [rows, len]: tokens[:, :-1]
    targets: torch.Tensor  # [rows, len]: tokens[:, 1:]
    rows: int
    len: int


def pack(tokens: Sequence[Sequence[int]], max_seq: int, device: torch.device) -> Packed:
    full = max(len(r) for r in tokens)
    if full > max_seq:
        raise ValueError(f"sequence of {full} tokens exceeds maxSeq {max_seq}")
    length = full - 1
    ids = torch.zeros((len(tokens), length), dtype=torch.long)
    targets = torch.zeros((len(tokens), length), dtype=torch.long)
    for r, row in enumerate(tokens):
        a, b = row[:length], row[1 : length + 1]
        if a:
            ids[r, : len(a)] = torch.tensor(a, dtype=torch.long)
        if b:
            targets[r, : len(b)] = torch.tensor(b, dtype=torch.long)
    return Packed(ids.to(device), targets.to(device), len(tokens), length)


def shifted(src: Optional[Sequence[Sequence[float]]], rows: int, length: int, device: torch.device) -> torch.Tensor:
    """Per-row values in target alignment: entry t of the result is about token t+1."""
    out = torch.zeros((rows, length), dtype=torch.float32)
    if src is not None:
        for r, row in enumerate(src):
            vals = row[1 : length + 1]
            if vals:
                out[r, : len(vals)] = torch.tensor(vals, dtype=torch.float32)
    return out.to(device)


def masked_logprobs(model: torch.nn.Module, p: Packed, mask: torch.Tensor, where: Placement, temperature: float = 1.0, want_entropy: bool = False, entropy_grad: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """log p(target) and entropy at the positions where mask > 0 ([rows, len], zeros elsewhere)."""
    sel = mask > 0
    # The head under autocast too: its matmul is a quarter of a Qwen3-0.6B update's FLOPs (logits are
    # taken to float32 before the softmax), and float32 matmuls run at a fraction of a GPU's bf16 rate.
    with where.autocast():
        hidden = hidden_states(model, p.ids)
        lp, ent = target_logprobs(hidden[sel], head_weight(model), p.targets[sel], temperature, want_entropy, entropy_grad)
    logp = torch.zeros(mask.shape, dtype=torch.float32, device=mask.device).masked_scatter(sel, lp)
    entropy = torch.zeros(mask.shape, dtype=torch.float32, device=mask.device).masked_scatter(sel, ent) if want_entropy else logp.new_zeros(mask.shape)
    return logp, entropy


@torch.no_grad()
def sequence_logprobs(model: torch.nn.Module, tokens: Sequence[Sequence[int]], masks: Sequence[Sequence[float]], max_seq: int, where: Placement, temperature: float = 1.0, chunk: int = 16) -> list[list[float]]:
    """Per row: log p(tokens[t] | tokens[<t]) where masks[r][t] > 0, else 0 (entry 0 is always 0)."""
    out: list[list[float]] = []
    for start in range(0, len(tokens), chunk):
        part, part_masks = tokens[start : start + chunk], masks[start : start + chunk]
        if max(len(r) for r in part) < 2:
            out += [[0.0] * len(r) for r in part]
            continue
        p = pack(part, max_seq, where.device)
        mask = shifted(part_masks, p.rows, p.len, where.device)
        logp, _ = masked_logprobs(model, p, mask, where, temperature)
        lp = logp.cpu()
        for r, row in enumerate(part):
            res = [0.0] * len(row)
            n = min(len(row) - 1, p.len)
            if n > 0:
                res[1 : n + 1] = lp[r, :n].tolist()
            out.append(res)
    return out


# ---- AdamW with the tfjs trainer's settings and state ----


class AdamW:
    """torch's AdamW with src/model/adam.ts's settings (β 0.9/0.99, ε 1e-8, no decay) and its global-norm
    clip; a non-finite gradient norm skips the update (moments and step untouched), as verl's actor does.
    State by parameter name, so checkpoints carry it across processes and formats."""

    def __init__(self, model: torch.nn.Module, lr: float, clip_norm: float, state: Optional[dict[str, Any]] = None):
        self.named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
        self.params = [p for _, p in self.named]
        self.clip_norm = clip_norm
        self.opt = torch.optim.AdamW(self.params, lr=lr, betas=(0.9, 0.99), eps=1e-8, weight_decay=0.0, foreach=True)
        self.step_count = 0
        if state is not None:
            self.step_count = int(state["step"])
            for name, p in self.named:
                if name not in state["m"] or name not in state["v"]:
                    raise ValueError(f"the optimizer state lacks {name}")
                self.opt.state[p] = {
                    "step": torch.tensor(float(self.step_count)),
                    "exp_avg": state["m"][name].to(p.device, torch.float32).clone(),
                    "exp_avg_sq": state["v"][name].to(p.device, torch.float32).clone(),
                }

    def apply(self, lr: float) -> float:
        grads = [p.grad for p in self.params if p.grad is not None]
        if not grads:
            return 0.0
        norm = float(torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g.float()) for g in grads])))
        if not math.isfinite(norm):
            self.zero_grad()
            return norm
        if self.clip_norm > 0 and norm > self.clip_norm:
            coef = self.clip_norm / (norm + 1e-6)
            for g in grads:
                g.mul_(coef)
        for group in self.opt.param_groups:
            group["lr"] = lr
        self.opt.step()
        self.step_count += 1
        self.zero_grad()
        return norm

    def zero_grad(self) -> None:
        self.opt.zero_grad(set_to_none=True)

    def state(self) -> dict[str, Any]:
        m, v = {}, {}
        for name, p in self.named:
            st = self.opt.state.get(p)
            m[name] = st["exp_avg"].detach().cpu() if st else torch.zeros_like(p, device="cpu")
            v[name] = st["exp_avg_sq"].detach().cpu() if st else torch.zeros_like(p, device="cpu")
        return {"step": self.step_count, "m": m, "v": v}


# ---- one optimiser step over micro-batches ----


@dataclass
class StepResult:
    loss: float
    tokens: int
    grad_norm: float
    tokens_run: int = 0
    padded_tokens_run: int = 0
    seqs: int = 0
    pg_loss: Optional[float] = None
    clip_fraction: Optional[float] = None
    clip_fraction_lower: Optional[float] = None
    approx_kl: Optional[float] = None
    entropy: Optional[float] = None
    kl_loss: Optional[float] = None


@dataclass
class PgSums:
    pg_loss: float = 0.0
    kl_loss: float = 0.0
    clipped: float = 0.0
    clipped_lower: float = 0.0
    approx_kl: float = 0.0
    entropy: float = 0.0

    def add(self, o: "PgSums") -> None:
        for f in ("pg_loss", "kl_loss", "clipped", "clipped_lower", "approx_kl", "entropy"):
            setattr(self, f, getattr(self, f) + getattr(o, f))


def batch_norm(batch: PgBatch, scale_factor: Optional[float]) -> LossNorm:
    scale = scale_factor if scale_factor is not None else max(1, max(len(r) for r in batch.tokens) - 1)
    return loss_norm_of([r[1:] for r in batch.loss_mask], scale)


def _gradients(model: torch.nn.Module, batch: PgBatch, norm: LossNorm, pg: Optional[PgLossOptions], max_seq: int, where: Placement) -> tuple[float, int, Optional[PgSums]]:
    """Loss share and summed gradients (into .grad) of one micro-batch; returns (loss, padded positions, sums)."""
    dev = where.device
    p = pack(batch.tokens, max_seq, dev)
    mask = shifted(batch.loss_mask, p.rows, p.len, dev)
    count = int((mask > 0).sum())
    if count == 0 or p.len == 0:
        return 0.0, 0, None
    if pg is None:
        logp, _ = masked_logprobs(model, p, mask, where)
        loss = sft_loss(logp, mask, norm)
        loss.backward()
        return float(loss.detach()), p.rows * p.len, None
    logp, entropy = masked_logprobs(model, p, mask, where, pg.temperature, want_entropy=True, entropy_grad=pg.entropy_coeff != 0)
    if batch.token_advantages is not None:
        adv = shifted(batch.token_advantages, p.rows, p.len, dev)
    else:
        adv = torch.tensor(batch.advantages or [], dtype=torch.float32, device=dev).unsqueeze(-1)
    # On-policy (no behaviour logprobs): the current ones, detached, so the ratio is exactly 1.
    old = shifted(batch.old_logprobs, p.rows, p.len, dev) if batch.old_logprobs is not None else logp.detach()
    ref = shifted(batch.ref_logprobs, p.rows, p.len, dev) if pg.kl_loss else None
    weights = shifted(batch.token_weights, p.rows, p.len, dev) if batch.token_weights is not None else None
    terms = actor_loss(logp, old, adv, mask, entropy, pg, norm, ref, weights)
    terms.total.backward()
    sums = PgSums(
        pg_loss=float(terms.pg.loss.detach()), kl_loss=float(terms.kl_loss) if terms.kl_loss is not None else 0.0,
        clipped=float(terms.pg.clip_frac) * count, clipped_lower=float(terms.pg.clip_frac_lower) * count,
        approx_kl=float(terms.pg.ppo_kl) * count, entropy=float(terms.entropy),
    )
    return float(terms.total.detach()), p.rows * p.len, sums


@torch.no_grad()
def _metric_sums(model: torch.nn.Module, batch: PgBatch, pg: PgLossOptions, norm: LossNorm, max_seq: int, where: Placement) -> PgSums:
    """KL and entropy sums of rows left out of the gradient passes (advantage 0), from a forward pass alone."""
    dev = where.device
    p = pack(batch.tokens, max_seq, dev)
    mask = shifted(batch.loss_mask, p.rows, p.len, dev)
    count = int((mask > 0).sum())
    if count == 0 or p.len == 0:
        return PgSums()
    logp, entropy = masked_logprobs(model, p, mask, where, pg.temperature, want_entropy=True)
    ent = float(agg_loss(entropy, mask, pg.agg_mode, norm))
    if batch.old_logprobs is None:
        return PgSums(entropy=ent)
    old = shifted(batch.old_logprobs, p.rows, p.len, dev)
    out = policy_loss(logp, old, torch.zeros((p.rows, 1), device=dev), mask, ClipOptions(pg.clip_low, pg.clip_high, pg.dual_clip_c), pg.agg_mode, norm)
    return PgSums(approx_kl=float(out.ppo_kl) * count, entropy=ent)


def _added(acc: Optional[PgSums], s: PgSums) -> PgSums:
    if acc is None:
        return s
    acc.add(s)
    return acc


def _split_zero_advantage(batch: PgBatch) -> tuple[PgBatch, Optional[PgBatch]]:
    adv = batch.advantages or []
    keep = [i for i, a in enumerate(adv) if a != 0]
    if len(keep) == len(batch.tokens) or not keep:
        return batch, None
    return batch.rows(keep), batch.rows([i for i, a in enumerate(adv) if a == 0])


def _cut(batch: PgBatch, rows: int, pass_tokens: Optional[int]) -> list[PgBatch]:
    """Micro-batches of at most `rows` rows (and, with pass_tokens, at most that many padded positions)."""
    out: list[list[int]] = []
    cur: list[int] = []
    longest = 0
    for i, row in enumerate(batch.tokens):
        nxt = max(longest, len(row))
        if cur and (len(cur) >= rows or (pass_tokens is not None and (len(cur) + 1) * nxt > pass_tokens)):
            out.append(cur)
            cur, nxt = [], len(row)
        cur.append(i)
        longest = nxt
    if cur:
        out.append(cur)
    return [batch.rows(ix) for ix in out]


def train_step(
    model: torch.nn.Module,
    batch: PgBatch,
    optim: AdamW,
    lr: float,
    *,
    max_seq: int,
    where: Placement,
    pg: Optional[PgLossOptions] = None,
    micro_batch_rows: Optional[int] = None,
    by_length: bool = False,
    pass_tokens: Optional[int] = None,
    on_micro_batch: Callable[[int, int], None] = lambda done, total: None,
) -> StepResult:
    """One optimiser update: SFT's cross-entropy (pg None) or the policy-gradient loss."""
    norm = batch_norm(batch, pg.loss_scale_factor if pg else None)
    if norm.tokens == 0:
        return StepResult(0.0, 0, 0.0)
    # With no entropy or KL term, a row of advantage 0 adds nothing to the gradient: it counts in the
    # denominators but skips the backward pass; its KL and entropy metrics come from a forward pass.
    work, skipped = _split_zero_advantage(batch) if pg is not None and pg.entropy_coeff == 0 and not pg.kl_loss else (batch, None)
    if by_length:
        work = work.rows(rows_by_length(work.tokens))
        skipped = skipped.rows(rows_by_length(skipped.tokens)) if skipped is not None else None
    size = max(1, min(micro_batch_rows or len(work.tokens), len(work.tokens)))
    parts = _cut(work, size, pass_tokens)
    metric_parts = _cut(skipped, size, pass_tokens) if skipped is not None else []
    total = len(parts) + len(metric_parts)
    loss, padded = 0.0, 0
    sums: Optional[PgSums] = None
    optim.zero_grad()
    model.train()
    for i, part in enumerate(parts):
        l, pad, s = _gradients(model, part, norm, pg, max_seq, where)
        loss += l
        padded += pad
        if s is not None:
            sums = _added(sums, s)
        on_micro_batch(i + 1, total)
    for i, part in enumerate(metric_parts):
        sums = _added(sums, _metric_sums(model, part, pg, norm, max_seq, where))  # type: ignore[arg-type]
        on_micro_batch(len(parts) + i + 1, total)
    grad_norm = optim.apply(lr)
    result = StepResult(loss, norm.tokens, grad_norm, tokens_run=sum(len(r) for r in work.tokens), padded_tokens_run=padded, seqs=norm.seqs)
    if sums is not None and pg is not None:
        result.pg_loss = sums.pg_loss
        result.clip_fraction = sums.clipped / norm.tokens
        result.clip_fraction_lower = sums.clipped_lower / norm.tokens
        result.approx_kl = sums.approx_kl / norm.tokens
        result.entropy = sums.entropy
        result.kl_loss = sums.kl_loss if pg.kl_loss else None
    return result
