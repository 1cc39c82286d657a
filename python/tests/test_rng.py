"""The torch worker's generators match the TypeScript side's bit for bit: the values in
test/fixtures/rng-vectors.json were recorded from src/domain/rng.ts (test/domain/rng.test.ts checks
the TypeScript side against the same file)."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from durable_rl_torch.rng import fill_normal, mix_seed, mulberry32, mulberry32_block

VECTORS = json.loads((Path(__file__).resolve().parents[2] / "test" / "fixtures" / "rng-vectors.json").read_text())


def test_mix_seed_matches_the_typescript_side() -> None:
    assert [mix_seed(seed, stream) for seed, stream, _ in VECTORS["mixSeed"]] == [want for _, _, want in VECTORS["mixSeed"]]


def test_mulberry32_matches_draw_by_draw_and_in_blocks() -> None:
    for seed, want in VECTORS["mulberry32"]:
        rand = mulberry32(seed)
        assert [rand() for _ in want] == want
        assert mulberry32_block(seed, 0, len(want)).tolist() == want


def test_fill_normal_matches_the_typescript_side() -> None:
    for seed, std, want in VECTORS["fillNormal"]:
        values, _ = fill_normal(len(want), std, seed, 0)
        assert values.tolist() == np.asarray(want, dtype=np.float32).tolist()
