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
from torch.distributed.tensor import DTensor

from .distributed import World, full_tensor, sharded_like
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


# The name under which a sharded model (fsdp.shard) carries `scores` as an FSDP forward method.
SCORES_METHOD = "durable_rl_scores"


def scores(model: torch.nn.Module, ids: torch.Tensor, sel: torch.Tensor, targets: torch.Tensor, where: Placement, temperature: float, want_entropy: bool, entropy_grad: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """log p(target) and entropy at the selected positions ([n], [n]): the decoder, then the output head on those positions alone."""
    # The head under autocast too: its matmul is a quarter of a Qwen3-0.6B update's FLOPs (logits are
    # taken to float32 before the softmax), and float32 matmuls run at a fraction of a GPU's bf16 rate.
    with where.autocast():
        hidden = hidden_states(model, ids)
        return target_logprobs(hidden[sel], head_weight(model), targets[sel], temperature, want_entropy, entropy_grad)


def masked_logprobs(model: torch.nn.Module, p: Packed, mask: torch.Tensor, where: Placement, temperature: float = 1.0, want_entropy: bool = False, entropy_grad: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """log p(target) and entropy at the positions where mask > 0 ([rows, len], zeros elsewhere)."""
    sel = mask > 0
    sharded = getattr(model, SCORES_METHOD, None)
    if sharded is not None:
        lp, ent = sharded(p.ids, sel, p.targets, where, temperature, want_entropy, entropy_grad)
    else:
        lp, ent = scores(model, p.ids, sel, p.targets, where, temperature, want_entropy, entropy_grad)
    logp = torch.zeros(mask.shape, dtype=torch.float32, device=mask.device).masked_scatter(sel, lp)
    entropy = torch.zeros(mask.shape, dtype=torch.float32, device=mask.device).masked_scatter(sel, ent) if want_entropy else logp.new_zeros(mask.shape)
    return logp, entropy


@torch.no_grad()
def sequence_logprobs(model: torch.nn.Module, tokens: Sequence[Sequence[int]], masks: Sequence[Sequence[float]], max_seq: int, where: Placement, temperature: float = 1.0, chunk: int = 16, world: Optional[World] = None) -> list[list[float]]:
    """Per row: log p(tokens[t] | tokens[<t]) where masks[r][t] > 0, else 0 (entry 0 is always 0).
    With a world, each chunk's rows are spread over the ranks (`chunk` rows a rank) and gathered back."""
    if world is None:
        out: list[list[float]] = []
        for start in range(0, len(tokens), chunk):
            out += _chunk_logprobs(model, tokens[start : start + chunk], masks[start : start + chunk], max_seq, where, temperature)
        return out
    out = []
    span = chunk * world.size
    for start in range(0, len(tokens), span):
        part, part_masks = tokens[start : start + span], masks[start : start + span]
        mine = range(world.rank, len(part), world.size)
        lists = _chunk_logprobs(model, [part[i] for i in mine], [part_masks[i] for i in mine], max_seq, where, temperature, every_rank=True)
        merged: list[list[float]] = [[] for _ in part]
        for rank, got in enumerate(world.gather(lists)):
            for k, row in enumerate(got):
                merged[rank + k * world.size] = row
        out += merged
    return out


def _chunk_logprobs(model: torch.nn.Module, part: Sequence[Sequence[int]], part_masks: Sequence[Sequence[float]], max_seq: int, where: Placement, temperature: float, every_rank: bool = False) -> list[list[float]]:
    """One pass of sequence_logprobs. every_rank: this rank runs the pass even with nothing to score
    (a row that scores nothing), since every rank of a sharded model joins each of its passes."""
    if not part or max(len(r) for r in part) < 2:
        if every_rank:
            masked_logprobs(model, pack([[0, 0]], max_seq, where.device), torch.zeros((1, 1), device=where.device), where, temperature)
        return [[0.0] * len(r) for r in part]
    p = pack(part, max_seq, where.device)
    mask = shifted(part_masks, p.rows, p.len, where.device)
    logp, _ = masked_logprobs(model, p, mask, where, temperature)
    lp = logp.cpu()
    out: list[list[float]] = []
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
    State by parameter name, so checkpoints carry it across processes and formats. Under FSDP the
    parameters, gradients and moments are shards (DTensors): the gradient norm is the whole model's, and
    state() gathers the moments whole, so a checkpoint is the same whatever the number of ranks."""

    def __init__(self, model: torch.nn.Module, lr: float, clip_norm: float, state: Optional[dict[str, Any]] = None):
        self.named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
        self.params = [p for _, p in self.named]
        self.clip_norm = clip_norm
        # One fused kernel per step where the parameters are plain tensors: on a CPU, foreach spent 0.44 s
        # a step on a 39M-parameter Qwen3 (151k-row embedding and head) against fused's 0.07 s, as long as
        # the forward and backward passes together. Sharded (DTensor) parameters keep foreach.
        self.fused = not any(isinstance(p, DTensor) for p in self.params)
        self.opt = torch.optim.AdamW(self.params, lr=lr, betas=(0.9, 0.99), eps=1e-8, weight_decay=0.0, **({"fused": True} if self.fused else {"foreach": True}))
        self.step_count = 0
        if state is not None:
            self.step_count = int(state["step"])
            for name, p in self.named:
                if name not in state["m"] or name not in state["v"]:
                    raise ValueError(f"the optimizer state lacks {name}")
                self.opt.state[p] = {
                    # fused kernels read the step from the parameter's device
                    "step": torch.tensor(float(self.step_count), device=p.device if self.fused else None),
                    "exp_avg": sharded_like(state["m"][name], p),
                    "exp_avg_sq": sharded_like(state["v"][name], p),
                }

    def apply(self, lr: float) -> float:
        grads = [p.grad for p in self.params if p.grad is not None]
        if not grads:
            return 0.0
        if isinstance(grads[0], DTensor):
            norm = float(full_tensor(torch.nn.utils.get_total_norm(grads, foreach=True)))
        else:
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

    def state(self, keep: bool = True) -> dict[str, Any]:
        """The moments whole, on the CPU. Sharded, every rank gathers them (a collective) and only those
        with `keep` hold them (rank 0, which writes the checkpoint)."""
        m, v = {}, {}
        for name, p in self.named:
            st = self.opt.state.get(p)
            for out, key in ((m, "exp_avg"), (v, "exp_avg_sq")):
                whole = full_tensor(st[key].detach()) if st else None
                if keep:
                    out[name] = whole.cpu() if whole is not None else torch.zeros(tuple(p.shape), dtype=p.dtype)
        return {"step": self.step_count, "m": m, "v": v}

    def live_state(self) -> dict[str, Any]:
        """The moments as they are (this rank's shards), for the next update of a model kept sharded in memory."""
        m = {name: self.opt.state[p]["exp_avg"] for name, p in self.named if p in self.opt.state}
        v = {name: self.opt.state[p]["exp_avg_sq"] for name, p in self.named if p in self.opt.state}
        if len(m) < len(self.named):
            return self.state()
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

    FIELDS = ("pg_loss", "kl_loss", "clipped", "clipped_lower", "approx_kl", "entropy")

    def add(self, o: "PgSums") -> None:
        for f in self.FIELDS:
            setattr(self, f, getattr(self, f) + getattr(o, f))


def batch_norm(batch: PgBatch, scale_factor: Optional[float]) -> LossNorm:
    scale = scale_factor if scale_factor is not None else max(1, max(len(r) for r in batch.tokens) - 1)
    return loss_norm_of([r[1:] for r in batch.loss_mask], scale)


def trained_positions(batch: PgBatch) -> int:
    """The positions a loss reads: entry t > 0 of a row's mask (entry 0 predicts nothing)."""
    return sum(1 for row in batch.loss_mask for m in row[1:] if m > 0)


def _rank_rows(batch: PgBatch, world: Optional[World]) -> PgBatch:
    """This rank's rows of a micro-batch (every world.size-th), or, with none, one row that trains
    nothing: every rank joins every forward and backward pass of a sharded model."""
    if world is None:
        return batch
    mine = list(range(world.rank, len(batch.tokens), world.size))
    if mine and max(len(batch.tokens[i]) for i in mine) >= 2:
        return batch.rows(mine)
    zeros = lambda xs: None if xs is None else [[0.0, 0.0]]
    return PgBatch(
        tokens=[[0, 0]], loss_mask=[[0.0, 0.0]], advantages=None if batch.advantages is None else [0.0], old_logprobs=zeros(batch.old_logprobs),
        token_advantages=zeros(batch.token_advantages), ref_logprobs=zeros(batch.ref_logprobs), token_weights=zeros(batch.token_weights),
    )


def _gradients(model: torch.nn.Module, batch: PgBatch, norm: LossNorm, pg: Optional[PgLossOptions], max_seq: int, where: Placement, world: Optional[World] = None) -> tuple[float, int, Optional[PgSums]]:
    """Loss share and summed gradients (into .grad) of one micro-batch; returns (loss, padded positions, sums).
    With a world, of this rank's rows of it (its sums are this rank's shares)."""
    dev = where.device
    if trained_positions(batch) == 0:
        return 0.0, 0, None
    batch = _rank_rows(batch, world)
    p = pack(batch.tokens, max_seq, dev)
    mask = shifted(batch.loss_mask, p.rows, p.len, dev)
    count = int((mask > 0).sum())
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
def _metric_sums(model: torch.nn.Module, batch: PgBatch, pg: PgLossOptions, norm: LossNorm, max_seq: int, where: Placement, world: Optional[World] = None) -> PgSums:
    """KL and entropy sums of rows left out of the gradient passes (advantage 0), from a forward pass alone."""
    dev = where.device
    if trained_positions(batch) == 0:
        return PgSums()
    batch = _rank_rows(batch, world)
    p = pack(batch.tokens, max_seq, dev)
    mask = shifted(batch.loss_mask, p.rows, p.len, dev)
    count = int((mask > 0).sum())
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


def resharded(model: torch.nn.Module) -> None:
    """Frees every gathered parameter of a sharded model. The root stays gathered after a forward pass
    (for its backward); after a pass without one (metrics) it would otherwise keep the values from
    before the optimiser step into the next forward."""
    from torch.distributed.fsdp import FSDPModule

    for module in model.modules():
        if isinstance(module, FSDPModule):
            module.reshard()


def _summed_over_ranks(world: World, loss: float, padded: int, sums: Optional[PgSums]) -> tuple[float, int, Optional[PgSums]]:
    """The ranks' shares added up (whether sums is None is the same on every rank: it follows the whole batch)."""
    got = world.sum([loss, float(padded), *(getattr(sums, f) if sums is not None else 0.0 for f in PgSums.FIELDS)])
    total = PgSums(*got[2:]) if sums is not None else None
    return got[0], int(got[1]), total


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
    world: Optional[World] = None,
) -> StepResult:
    """One optimiser update: SFT's cross-entropy (pg None) or the policy-gradient loss.

    With a world (a sharded model), every rank runs this on the whole batch: the same micro-batches,
    each one's rows spread over the ranks (micro_batch_rows and pass_tokens are a rank's), the losses
    divided by the whole mini-batch's denominators, so the ranks' gradients sum to one process's."""
    norm = batch_norm(batch, pg.loss_scale_factor if pg else None)
    if norm.tokens == 0:
        return StepResult(0.0, 0, 0.0)
    ranks = 1 if world is None else world.size
    if world is not None:
        # Checked on the whole batch here, not on a rank's rows: every rank raises it or none does.
        longest = max(len(r) for r in batch.tokens)
        if longest > max_seq:
            raise ValueError(f"sequence of {longest} tokens exceeds maxSeq {max_seq}")
    # With no entropy or KL term, a row of advantage 0 adds nothing to the gradient: it counts in the
    # denominators but skips the backward pass; its KL and entropy metrics come from a forward pass.
    work, skipped = _split_zero_advantage(batch) if pg is not None and pg.entropy_coeff == 0 and not pg.kl_loss else (batch, None)
    if by_length:
        work = work.rows(rows_by_length(work.tokens))
        skipped = skipped.rows(rows_by_length(skipped.tokens)) if skipped is not None else None
    size = max(1, min((micro_batch_rows or len(work.tokens)) * ranks, len(work.tokens)))
    parts = _cut(work, size, pass_tokens * ranks if pass_tokens is not None else None)
    metric_parts = _cut(skipped, size, pass_tokens) if skipped is not None else []
    total = len(parts) + len(metric_parts)
    loss, padded = 0.0, 0
    sums: Optional[PgSums] = None
    optim.zero_grad()
    model.train()
    for i, part in enumerate(parts):
        l, pad, s = _gradients(model, part, norm, pg, max_seq, where, world)
        loss += l
        padded += pad
        if s is not None:
            sums = _added(sums, s)
        on_micro_batch(i + 1, total)
    for i, part in enumerate(metric_parts):
        sums = _added(sums, _metric_sums(model, part, pg, norm, max_seq, where, world))  # type: ignore[arg-type]
        on_micro_batch(len(parts) + i + 1, total)
    if world is not None:
        loss, padded, sums = _summed_over_ranks(world, loss, padded, sums)
        resharded(model)
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
