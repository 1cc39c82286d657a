"""Data-parallel updates under FSDP2: two CPU ranks on gloo give one process's SFT step and GRPO
updates (two epochs × two mini-batches, micro-batches by length; a reference model for the KL loss,
the decoupled off-policy correction, rows of advantage 0, LoRA), for a Qwen3 and a GPT-2 policy: the
same losses and metrics, and the same new weights and Adam moments, within 1e-5."""
import contextlib
import copy
import math
import random
from pathlib import Path
from typing import Any, Optional

import pytest
import torch

from durable_rl_torch.contracts import AsyncConfig, LoraConfig, MicroBatchConfig, RlConfig, SftConfig
from durable_rl_torch.grpo import run_grpo_update
from durable_rl_torch.models import with_new_adapter
from durable_rl_torch.sft import run_sft_chunk
from durable_rl_torch.trainer import AdamW

from fsdp_helpers import run_ranks
from helpers import CPU, rollout, tiny_model

TOLERANCE = 1e-5
# Numbers that differ by design: each rank pads its own rows; time.
NOT_COMPARED = {"paddedTokensRun", "updateSeconds"}


def adam_state(model: torch.nn.Module, seed: int, step: int) -> dict[str, Any]:
    """Moments as a checkpoint holds them (whole tensors by parameter name), drawn from a seed."""
    g = torch.Generator().manual_seed(seed)
    named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    return {
        "step": step,
        "m": {n: torch.randn(p.shape, generator=g) * 1e-3 for n, p in named},
        "v": {n: torch.rand(p.shape, generator=g) * 1e-5 for n, p in named},
    }


def sft_examples(seed: int) -> list[dict[str, Any]]:
    rnd = random.Random(seed)
    out = []
    for _ in range(10):
        n = rnd.randint(3, 30)
        out.append({"tokens": [rnd.randrange(3, 200) for _ in range(n)], "lossMask": [0 if t < 3 else 1 for t in range(n)]})
    return out


def grpo_samples(seed: int) -> list[dict[str, Any]]:
    samples = rollout(groups=3, size=4, seed=seed)
    for s in samples[:4]:
        s["reward"] = 1.0  # a flat group: its rows have advantage 0
    return samples


def weights_of(model: torch.nn.Module, world: Any) -> dict[str, torch.Tensor]:
    if world is None:
        return {k: v.detach().clone() for k, v in model.state_dict().items()}
    from durable_rl_torch.fsdp import gathered_state

    return gathered_state(model, world)


def placed(model: torch.nn.Module, world: Any) -> torch.nn.Module:
    if world is None:
        return model
    from durable_rl_torch.fsdp import shard

    return shard(model, world, CPU)


def scenario(world: Optional[Any]) -> dict[str, Any]:
    """The same updates in one process (world None) or on every rank of a world, for a Qwen3 and a GPT-2 policy."""
    return {arch: updates(world, arch) for arch in ("qwen3", "gpt2")}


def updates(world: Optional[Any], arch: str) -> dict[str, Any]:
    keep = world is None or world.leader
    out: dict[str, Any] = {}
    # One SFT step, continuing from Adam moments (sharded from a checkpoint's whole tensors).
    model = tiny_model(arch, seed=1)
    state = adam_state(model, seed=2, step=3)
    model = placed(model, world)
    optim = AdamW(model, 1e-3, 1.0, state)
    sft = SftConfig(steps=10, batchSize=6, learningRate=1e-3, warmupSteps=0, gradClip=1.0, stepsPerActivity=5)
    chunk = run_sft_chunk(model, optim, 3, sft_examples(0), 4, sft, seed=5, max_seq=64, where=CPU, world=world)
    out["sft"] = {"losses": chunk.losses, "weights": weights_of(model, world), "adam": optim.state(keep)}

    # GRPO with a reference model (KL loss), an entropy bonus and the decoupled correction (proximal logprobs).
    model = placed(tiny_model(arch, seed=3), world)
    reference = placed(tiny_model(arch, seed=4), world)
    rl = RlConfig(
        ppoEpochs=2, miniBatches=2, learningRate=1e-3, clipEpsHigh=0.28, useKlLoss=True, klLossCoef=0.1, entropyCoeff=0.01,
        microBatch=MicroBatchConfig(rows=2, byLength=True), async_=AsyncConfig(maxStaleness=1, correction="decoupled"),
    )
    optim = AdamW(model, rl.learningRate, rl.gradClip)
    samples = grpo_samples(6)
    for s in samples[::3]:
        s["metadata"]["weightVersion"] = 1

    update = run_grpo_update(
        model, optim, copy.deepcopy(samples), rl, max_seq=64, where=CPU, seed=7, reference=lambda: contextlib.nullcontext(reference), policy_version=2, world=world
    )
    out["grpo"] = {"numbers": update.numbers, "per_sample": update.per_sample, "weights": weights_of(model, world), "adam": optim.state(keep)}

    # GRPO where rows of advantage 0 skip the backward pass (their metrics from a forward pass), seq-mean-token-mean.
    model = placed(tiny_model(arch, seed=8), world)
    rl = RlConfig(ppoEpochs=2, miniBatches=2, learningRate=1e-3, lossAggMode="seq-mean-token-mean", microBatch=MicroBatchConfig(rows=1, byLength=True))
    optim = AdamW(model, rl.learningRate, rl.gradClip)
    update = run_grpo_update(model, optim, grpo_samples(9), rl, max_seq=64, where=CPU, seed=10, world=world)
    out["grpo-skip"] = {"numbers": update.numbers, "weights": weights_of(model, world), "adam": optim.state(keep)}

    # LoRA: the adapter trains, the reference is the base with the adapter disabled.
    model = placed(with_new_adapter(tiny_model(arch, seed=11), LoraConfig(rank=4, alpha=8), seed=12), world)
    rl = RlConfig(ppoEpochs=2, miniBatches=2, learningRate=1e-2, useKlLoss=True, microBatch=MicroBatchConfig(rows=2, byLength=False))
    optim = AdamW(model, rl.learningRate, rl.gradClip)

    @contextlib.contextmanager
    def disabled() -> Any:
        with model.disable_adapter():
            yield model

    update = run_grpo_update(model, optim, grpo_samples(13), rl, max_seq=64, where=CPU, seed=14, reference=disabled, world=world)
    out["grpo-lora"] = {"numbers": update.numbers, "weights": weights_of(model, world), "adam": optim.state(keep)}
    return out


def max_diff(a: Any, b: Any, path: str = "") -> list[tuple[str, float]]:
    """(where, |a - b|) for every number and tensor of two results."""
    if isinstance(a, torch.Tensor):
        assert a.shape == b.shape, path
        return [(path, float((a - b).abs().max()) if a.numel() else 0.0)]
    if isinstance(a, dict):
        assert set(a) == set(b), f"{path}: {sorted(set(a) ^ set(b))}"
        return [d for k in a if k not in NOT_COMPARED for d in max_diff(a[k], b[k], f"{path}.{k}")]
    if isinstance(a, (list, tuple)):
        assert len(a) == len(b), path
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in max_diff(x, y, f"{path}[{i}]")]
    if isinstance(a, float) or isinstance(b, float):
        return [(path, 0.0 if a == b or (math.isnan(a) and math.isnan(b)) else abs(a - b))]
    assert a == b, f"{path}: {a!r} != {b!r}"
    return []


def test_two_ranks_update_as_one_process(tmp_path: Path):
    ranks = run_ranks(scenario, tmp_path)
    torch.set_num_threads(2)
    one = scenario(None)
    diffs = max_diff(ranks[0], one)
    worst = max(diffs, key=lambda d: d[1])
    print(f"largest difference: {worst[1]:.3g} at {worst[0]}")
    assert worst[1] < TOLERANCE, worst
    # Every part moved: the updates changed the weights, so agreeing on them means something.
    for arch in one:
        for key in ("sft", "grpo", "grpo-skip", "grpo-lora"):
            assert one[arch][key]["adam"]["step"] > 0
        assert one[arch]["grpo"]["numbers"]["optimizerSteps"] == 4 and one[arch]["grpo-skip"]["numbers"]["flatGroups"] == 1
        # The other rank's numbers are rank 0's: every rank returns the same update.
        assert max(d for _, d in max_diff(ranks[1][arch]["grpo"]["numbers"], one[arch]["grpo"]["numbers"])) < TOLERANCE
