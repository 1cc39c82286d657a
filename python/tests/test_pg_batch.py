"""The policy-gradient batch: which samples become rows, with which advantages and weights."""
import math

import pytest

from durable_rl_torch.pg_batch import build_pg_batch, mini_batch_rows, behaviour_weights
from durable_rl_torch.rng import mulberry32

from helpers import rollout


def test_rows_advantages_and_statuses():
    samples = rollout(groups=2, size=3, seed=1)
    samples[1]["lossMask"] = [0] * len(samples[1]["lossMask"])  # nothing to train
    samples[2]["promptTokens"] = list(range(3, 60))  # longer than maxSeq
    r = build_pg_batch(samples, max_seq=64, norm_by_std=True, epsilon=1e-6)
    assert [c["status"] for c in r.per_sample] == ["trained", "no-trained-token", "too-long", "trained", "trained", "trained"]
    assert (r.skipped, r.too_long, len(r.batch.tokens)) == (1, 1, 4)
    # An episode's advantage is its group's z-score; its samples' rows share it.
    g1 = [s["reward"] for s in samples[3:]]
    mean = sum(g1) / 3
    std = math.sqrt(sum((x - mean) ** 2 for x in g1) / 2)
    want = [0.0 if std == 0 else (x - mean) / (std + 1e-6) for x in g1]
    assert r.batch.advantages[1:] == pytest.approx(want)
    assert r.row_groups == ["group:g0", "group:g1", "group:g1", "group:g1"]
    # Per-token lists follow the row: prompt zeros, then the response's.
    s0 = samples[0]
    assert r.batch.loss_mask[0] == [0.0] * len(s0["promptTokens"]) + s0["lossMask"]
    assert r.batch.old_logprobs[0] == [0.0] * len(s0["promptTokens"]) + s0["logprobs"]


def test_rft_fits_only_rewarded_episodes_with_advantage_one():
    samples = rollout(groups=2, size=3, seed=2)
    r = build_pg_batch(samples, max_seq=64, norm_by_std=True, epsilon=1e-6, objective="rft")
    rewarded = [s for s in samples if s["reward"] > 0]
    assert r.rejected == len(samples) - len(rewarded)
    assert r.batch.advantages == [1.0] * len(rewarded)


def test_role_normalisation_takes_each_roles_own_episodes():
    samples = rollout(groups=1, size=4, seed=3)
    for i, s in enumerate(samples):
        s["reward"] = float(i)
    r = build_pg_batch(samples, max_seq=64, norm_by_std=False, epsilon=1e-6, advantage_norm="role")
    # Roles alternate planner/actor: each role's advantages are centred on its own mean.
    planner = [a for a, s in zip(r.batch.advantages, samples) if s["metadata"]["role"] == "planner"]
    actor = [a for a, s in zip(r.batch.advantages, samples) if s["metadata"]["role"] == "actor"]
    assert sum(planner) == pytest.approx(0) and sum(actor) == pytest.approx(0)
    assert planner == pytest.approx([-1, 1]) and actor == pytest.approx([-1, 1])


def test_off_policy_weights_drop_or_truncate_past_the_cap():
    w, capped = behaviour_weights([0.0, -1.0, math.log(10)], [0.0, -2.0, 0.0], "decoupled", 5)
    assert w == pytest.approx([1, math.e, 0]) and capped == [False, False, True]
    w, _ = behaviour_weights([math.log(10)], [0.0], "tis", 5)
    assert w == [5]


def test_mini_batches_hold_whole_groups():
    groups = ["a", "a", "b", "b", "c", "d", "d", "d"]
    parts = mini_batch_rows(groups, 3, mulberry32(4))
    assert sorted(r for p in parts for r in p) == list(range(8))
    for p in parts:
        for g in {groups[r] for r in p}:
            assert {r for r, x in enumerate(groups) if x == g} <= set(p)
