"""The torch trainer's losses against verl's own code (verl 0.9.1's verl/trainer/ppo/core_algos.py, in the
project's environment): compute_policy_loss_vanilla in every aggregation mode with asymmetric and dual
clip, agg_loss, kl_penalty with every estimator, compute_grpo_outcome_advantage; float64 inputs."""
import numpy as np
import pytest
import torch
from omegaconf import OmegaConf
from verl.trainer.ppo import core_algos

from durable_rl_torch.losses import ClipOptions, LossNorm, agg_loss, kl_penalty, kl_penalty_tensor, policy_loss
from durable_rl_torch.pg_batch import group_advantage

MODES = ["token-mean", "seq-mean-token-sum", "seq-mean-token-mean", "seq-mean-token-sum-norm"]
KINDS = ["kl", "k1", "abs", "mse", "k2", "low_var_kl", "k3"]


def case(seed: int, rows: int = 6, cols: int = 9):
    g = torch.Generator().manual_seed(seed)
    old = -torch.rand(rows, cols, generator=g, dtype=torch.float64).abs() * 2 - 0.05
    logp = old + 0.6 * torch.randn(rows, cols, generator=g, dtype=torch.float64)
    adv = torch.randn(rows, 1, generator=g, dtype=torch.float64).expand(rows, cols).clone()
    mask = torch.tensor([[float(r != rows - 1 and c < 3 + (r * 2) % 7) for c in range(cols)] for r in range(rows)], dtype=torch.float64)
    return old, logp, adv, mask


def norm_of(mask: torch.Tensor, scale: float) -> LossNorm:
    tokens = int(mask.sum())
    seqs = int((mask.sum(-1) > 0).sum())
    return LossNorm(tokens, seqs, scale)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("seed", [0, 1])
def test_policy_loss_matches_verl(mode: str, seed: int) -> None:
    old, logp, adv, mask = case(seed)
    batch_info = {"loss_scale_factor": 16} if mode == "seq-mean-token-sum-norm" else {}
    config = OmegaConf.create({"clip_ratio": 0.2, "clip_ratio_low": 0.2, "clip_ratio_high": 0.28, "clip_ratio_c": 3.0, "global_batch_info": batch_info})
    want, metrics = core_algos.compute_policy_loss_vanilla(old, logp, adv, mask, loss_agg_mode=mode, config=config)
    got = policy_loss(logp, old, adv[:, :1], mask, ClipOptions(0.2, 0.28, 3.0), mode, norm_of(mask, 16))
    assert got.loss.item() == pytest.approx(want.item(), abs=1e-12)
    # verl's masked_mean divides by mask.sum() + 1e-8, the trainers by the token count.
    assert got.clip_frac.item() == pytest.approx(metrics["actor/pg_clipfrac"], abs=1e-8)
    assert got.clip_frac_lower.item() == pytest.approx(metrics["actor/pg_clipfrac_lower"], abs=1e-8)
    assert got.ppo_kl.item() == pytest.approx(metrics["actor/ppo_kl"], abs=1e-8)


@pytest.mark.parametrize("mode", MODES)
def test_agg_loss_matches_verl(mode: str) -> None:
    _, logp, _, mask = case(5)
    want = core_algos.agg_loss(loss_mat=logp, loss_mask=mask, loss_agg_mode=mode, loss_scale_factor=16)
    assert agg_loss(logp, mask, mode, norm_of(mask, 16)).item() == pytest.approx(want.item(), abs=1e-12)


@pytest.mark.parametrize("kind", KINDS)
def test_kl_penalty_matches_verl(kind: str) -> None:
    g = torch.Generator().manual_seed(3)
    logp = -(3 * torch.randn(40, generator=g, dtype=torch.float64)).abs()
    ref = logp + torch.randn(40, generator=g, dtype=torch.float64)
    ref[::10] = logp[::10] - 15  # far apart: the k3 clamp
    want = core_algos.kl_penalty(logp, ref, kind)
    assert torch.allclose(kl_penalty_tensor(logp, ref, kind), want, atol=1e-12)
    assert [kl_penalty(a, b, kind) for a, b in zip(logp.tolist(), ref.tolist())] == pytest.approx(want.tolist(), abs=1e-9)


@pytest.mark.parametrize("norm", [True, False])
def test_grpo_advantages_match_verl(norm: bool) -> None:
    rng = np.random.default_rng(7)
    index = [f"g{min(4, i // 3)}" for i in range(12)]
    scores = [1.0 if g == "g1" else float(rng.integers(0, 2)) if rng.random() < 0.5 else round(rng.random() * 4) / 4 for g in index]
    rewards = torch.tensor(scores, dtype=torch.float64).unsqueeze(-1)
    want, _ = core_algos.compute_grpo_outcome_advantage(rewards, torch.ones_like(rewards), np.array(index, dtype=object), epsilon=1e-6, norm_adv_by_std_in_grpo=norm)
    got: dict[int, float] = {}
    for g in sorted(set(index)):
        members = [i for i, x in enumerate(index) if x == g]
        for i, a in zip(members, group_advantage([scores[i] for i in members], norm, 1e-6)):
            got[i] = a
    assert [got[i] for i in range(12)] == pytest.approx(want[:, 0].tolist(), abs=1e-9)
