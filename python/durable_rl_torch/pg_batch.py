"""The policy-gradient batch of a rollout: GRPO advantages, KL in the reward, RFT's rejection, the
off-policy weights of stale samples and the mini-batch split, as src/rl/{advantages,grpo,off-policy}.ts
and policy-update.ts's miniBatchRows compute them, so both trainers train the same rows on the same
numbers. Samples are the sample files' JSON (src/domain/types.ts Sample)."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence

from .losses import kl_penalty

Sample = dict[str, Any]
LOG_RATIO_LIMIT = 20.0


def group_advantage(scores: Sequence[float], norm_by_std: bool, epsilon: float) -> list[float]:
    """verl compute_grpo_outcome_advantage for one group (src/rl/advantages.ts)."""
    n = len(scores)
    if n == 0:
        return []
    mean, std = 0.0, 1.0
    if n > 1:
        mean = sum(scores) / n
        std = math.sqrt(sum((s - mean) ** 2 for s in scores) / (n - 1))
    return [(s - mean) / (std + epsilon) if norm_by_std else s - mean for s in scores]


def group_key(group_id: Optional[str], episode_id: str) -> str:
    return f"group:{group_id}" if group_id is not None else f"episode:{episode_id}"


@dataclass
class GroupStats:
    advantages: dict[str, float]
    groups: int
    flat_groups: int
    singleton_groups: int
    mean_reward: float
    reward_kl_penalty: Optional[float] = None


@dataclass
class KlInReward:
    coef: float
    kind: str
    ref_logprobs: Sequence[Optional[Sequence[float]]]


def group_advantages(samples: Sequence[Sample], norm_by_std: bool, epsilon: float, kl: Optional[KlInReward]) -> GroupStats:
    # Episode scores: reward minus the KL penalty (src/rl/grpo.ts episodeScores).
    episodes: dict[str, dict[str, Any]] = {}
    rewards: list[float] = []
    kl_seq_mean_sum, kl_seqs = 0.0, 0
    for i, s in enumerate(samples):
        meta = s["metadata"]
        e = episodes.get(meta["episodeId"])
        if e is None:
            e = {"group": meta.get("groupId"), "score": float(s["reward"])}
            episodes[meta["episodeId"]] = e
            rewards.append(float(s["reward"]))
        if kl is None:
            continue
        ref = kl.ref_logprobs[i]
        if ref is None:
            if not any(m > 0 for m in s["lossMask"]):
                kl_seqs += 1
            continue
        total, n = 0.0, 0
        for t, m in enumerate(s["lossMask"]):
            if m > 0:
                total += kl_penalty(s["logprobs"][t], ref[t], kl.kind)
                n += 1
        e["score"] -= kl.coef * total
        if n > 0:
            kl_seq_mean_sum += total / n
        kl_seqs += 1
    # Group advantages (src/rl/advantages.ts episodeAdvantages).
    groups: dict[str, list[str]] = {}
    for eid, e in episodes.items():
        groups.setdefault(group_key(e["group"], eid), []).append(eid)
    adv: dict[str, float] = {}
    flat = singleton = 0
    for members in groups.values():
        scores = [episodes[m]["score"] for m in members]
        if len(members) == 1:
            singleton += 1
        elif all(s == scores[0] for s in scores):
            flat += 1
        for m, a in zip(members, group_advantage(scores, norm_by_std, epsilon)):
            adv[m] = a
    mean_reward = sum(rewards) / len(rewards) if rewards else 0.0
    return GroupStats(adv, len(groups), flat, singleton, mean_reward, (kl_seq_mean_sum / kl_seqs if kl_seqs else 0.0) if kl is not None else None)


def behaviour_weights(prox: Sequence[float], behaviour: Sequence[float], mode: str, cap: float) -> tuple[list[float], list[bool]]:
    """src/rl/off-policy.ts behaviourWeights: π_prox / π_behav, dropped (decoupled) or truncated (tis) past cap."""
    if len(prox) != len(behaviour):
        raise ValueError(f"{len(prox)} proximal logprobs for {len(behaviour)} behaviour logprobs")
    raw = [math.exp(max(-LOG_RATIO_LIMIT, min(LOG_RATIO_LIMIT, p - b))) for p, b in zip(prox, behaviour)]
    capped = [w > cap for w in raw]
    return [(cap if mode == "tis" else 0.0) if c else w for w, c in zip(raw, capped)], capped


def staleness_histogram(versions: Sequence[int], policy_version: int) -> dict[str, int]:
    out: dict[str, int] = {}
    for v in versions:
        k = str(policy_version - v)
        out[k] = out.get(k, 0) + 1
    return out


@dataclass
class PgBatch:
    """One row per trained sample, prompt then response; per-token lists aligned with `tokens`."""

    tokens: list[list[int]] = field(default_factory=list)
    loss_mask: list[list[float]] = field(default_factory=list)
    # One per row for the policy-gradient loss; None: an SFT batch.
    advantages: Optional[list[float]] = None
    # Behaviour-policy logprobs; None: on-policy (the current logprobs, detached: ratio exactly 1).
    old_logprobs: Optional[list[list[float]]] = None
    token_advantages: Optional[list[list[float]]] = None
    ref_logprobs: Optional[list[list[float]]] = None
    token_weights: Optional[list[list[float]]] = None

    def rows(self, idx: Sequence[int]) -> "PgBatch":
        pick: Callable[[Optional[list[Any]]], Optional[list[Any]]] = lambda xs: None if xs is None else [xs[i] for i in idx]
        return PgBatch(
            tokens=pick(self.tokens) or [], loss_mask=pick(self.loss_mask) or [], advantages=pick(self.advantages),
            old_logprobs=pick(self.old_logprobs), token_advantages=pick(self.token_advantages), ref_logprobs=pick(self.ref_logprobs),
            token_weights=pick(self.token_weights),
        )


@dataclass
class PgBatchResult:
    batch: PgBatch
    row_groups: list[str]
    response_lengths: list[int]
    skipped: int
    too_long: int
    rejected: Optional[int]
    stats: GroupStats
    per_sample: list[dict[str, Any]]
    off_policy: Optional[dict[str, float]] = None


def build_pg_batch(
    samples: Sequence[Sample],
    *,
    max_seq: int,
    norm_by_std: bool,
    epsilon: float,
    kl_in_reward: Optional[KlInReward] = None,
    ref_logprobs: Optional[Sequence[Optional[Sequence[float]]]] = None,
    off_policy: Optional[dict[str, Any]] = None,
    objective: str = "grpo",
    advantage_norm: str = "episode",
) -> PgBatchResult:
    """src/rl/grpo.ts buildPgBatch."""
    stats = group_advantages(samples, norm_by_std, epsilon, kl_in_reward)
    by_role: Optional[dict[str, dict[str, float]]] = None
    if advantage_norm == "role":
        by_role = {}
        for role in dict.fromkeys(s["metadata"]["role"] for s in samples):
            rows = [i for i, s in enumerate(samples) if s["metadata"]["role"] == role]
            kl = KlInReward(kl_in_reward.coef, kl_in_reward.kind, [kl_in_reward.ref_logprobs[i] for i in rows]) if kl_in_reward else None
            by_role[role] = group_advantages([samples[i] for i in rows], norm_by_std, epsilon, kl).advantages
    rft = objective == "rft"
    batch = PgBatch(advantages=[], old_logprobs=[])
    if ref_logprobs is not None:
        batch.ref_logprobs = []
    if not rft and any(s.get("tokenAdvantages") is not None for s in samples):
        batch.token_advantages = []
    if off_policy is not None:
        batch.token_weights = []
    weighed = {"capped": 0, "sum": 0.0, "tokens": 0}
    row_groups: list[str] = []
    lengths: list[int] = []
    skipped = too_long = rejected = 0
    per_sample: list[dict[str, Any]] = []
    for i, s in enumerate(samples):
        meta = s["metadata"]
        if rft:
            group_adv = 1.0 if s["reward"] > 0 else 0.0
        else:
            group_adv = (by_role[meta["role"]] if by_role is not None else stats.advantages)[meta["episodeId"]]

        def credit(status: str) -> None:
            per_sample.append({"advantage": group_adv, "status": status})

        if rft and not s["reward"] > 0:
            rejected += 1
            credit("rejected")
            continue
        prompt, response, mask = s["promptTokens"], s["responseTokens"], s["lossMask"]
        tokens = [*prompt, *response]
        if len(tokens) > max_seq:
            too_long += 1
            credit("too-long")
            continue
        if not any(m > 0 and len(prompt) + j >= 1 for j, m in enumerate(mask)):
            skipped += 1
            credit("no-trained-token")
            continue
        credit("trained")
        zeros = [0.0] * len(prompt)
        batch.tokens.append(tokens)
        batch.loss_mask.append([*zeros, *mask])
        if off_policy is not None:
            prox = off_policy["prox"][i]
            if prox is None:
                raise ValueError(f"sample {i} (episode {meta['episodeId']}) has no proximal logprobs")
            w, capped = behaviour_weights(prox, s["logprobs"], off_policy["mode"], off_policy["cap"])
            batch.old_logprobs.append([*zeros, *prox])  # type: ignore[union-attr]
            batch.token_weights.append([*zeros, *w])  # type: ignore[union-attr]
            for j, m in enumerate(mask):
                if m > 0:
                    weighed["tokens"] += 1
                    weighed["sum"] += w[j]
                    weighed["capped"] += 1 if capped[j] else 0
        else:
            batch.old_logprobs.append([*zeros, *s["logprobs"]])  # type: ignore[union-attr]
        if batch.token_advantages is not None:
            own = s.get("tokenAdvantages")
            if own is not None and len(own) != len(response):
                raise ValueError(f"sample {i} (episode {meta['episodeId']}) has {len(own)} token advantages for {len(response)} response tokens")
            per_token = own if own is not None else [group_adv] * len(response)
            batch.token_advantages.append([*zeros, *per_token])
            batch.advantages.append(1.0 if any(a != 0 and mask[j] > 0 for j, a in enumerate(per_token)) else 0.0)
        else:
            batch.advantages.append(group_adv)
        if batch.ref_logprobs is not None:
            ref = ref_logprobs[i] if ref_logprobs is not None else None
            if ref is None:
                raise ValueError(f"sample {i} (episode {meta['episodeId']}) has no reference logprobs")
            batch.ref_logprobs.append([*zeros, *ref])
        row_groups.append(group_key(meta.get("groupId"), meta["episodeId"]))
        lengths.append(len(response))
    return PgBatchResult(
        batch=batch, row_groups=row_groups, response_lengths=lengths, skipped=skipped, too_long=too_long,
        rejected=rejected if rft else None, stats=stats, per_sample=per_sample,
        off_policy={"capped": weighed["capped"], "meanWeight": weighed["sum"] / weighed["tokens"] if weighed["tokens"] else 1.0} if off_policy is not None else None,
    )


def mini_batch_rows(row_groups: Sequence[str], mini_batches: int, rand: Callable[[], float]) -> list[list[int]]:
    """src/rl/policy-update.ts miniBatchRows: whole groups per mini-batch, group order shuffled per epoch."""
    rows_of: dict[str, list[int]] = {}
    for r, g in enumerate(row_groups):
        rows_of.setdefault(g, []).append(r)
    keys = list(rows_of)
    for i in range(len(keys) - 1, 0, -1):
        j = math.floor(rand() * (i + 1))
        keys[i], keys[j] = keys[j], keys[i]
    parts = []
    for m in range(mini_batches):
        lo = (m * len(keys)) // mini_batches
        hi = ((m + 1) * len(keys)) // mini_batches
        rows = [r for k in keys[lo:hi] for r in rows_of[k]]
        if rows:
            parts.append(rows)
    return parts


def rows_by_length(rows: Sequence[Sequence[int]]) -> list[int]:
    """Indices shortest first, ties in order (src/rl/trainer.ts rowsByLength)."""
    return sorted(range(len(rows)), key=lambda i: (len(rows[i]), i))
