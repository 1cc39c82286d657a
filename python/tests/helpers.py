"""Small policies and rollouts for the torch trainer's tests."""
import random
from typing import Any

import torch

from durable_rl_torch.contracts import ModelConfig
from durable_rl_torch.models import Placement, hf_config, new_model

CPU = Placement(torch.device("cpu"), torch.float32)


def tiny_model(arch: str = "gpt2", seed: int = 0) -> torch.nn.Module:
    shape = ModelConfig(dModel=32, nLayers=2, nHeads=2, dFf=64, maxSeq=64, arch=arch)  # type: ignore[arg-type]
    return new_model(hf_config(shape), seed)


def rollout(groups: int = 2, size: int = 3, seed: int = 0, vocab: int = 200) -> list[dict[str, Any]]:
    """GRPO groups of episodes with varied lengths, masks with tool text (0) inside, rewards 0/1."""
    rnd = random.Random(seed)
    out = []
    for g in range(groups):
        for e in range(size):
            n = rnd.randint(4, 14)
            mask = [0 if 3 <= t < 5 else 1 for t in range(n)]
            out.append({
                "promptTokens": [rnd.randrange(3, vocab) for _ in range(rnd.randint(3, 8))],
                "responseTokens": [rnd.randrange(3, vocab) for _ in range(n)],
                "logprobs": [-rnd.random() * 4 if m else 0.0 for m in mask],
                "lossMask": mask,
                "reward": float(rnd.random() < 0.5),
                "metadata": {"role": "actor" if e % 2 else "planner", "episodeId": f"g{g}e{e}", "turn": 0, "weightVersion": 0, "groupId": f"g{g}"},
            })
    return out
