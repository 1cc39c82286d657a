"""FSDP2 on a GPU over NCCL (run through the device tool on a lent GPU): the FSDP test's scenario
(python/tests/test_fsdp.py: an SFT step from Adam moments, GRPO with a KL reference and the decoupled
correction, GRPO skipping advantage-0 rows, LoRA; Qwen3 and GPT-2 policies) on CUDA, as one process
and as a torchrun-style world of one rank whose process group is `cpu:gloo,cuda:nccl` (what
`init_world` picks on a CUDA machine), sharded with `fully_shard`. The two must agree within 1e-5.
One GPU holds one NCCL rank (NCCL refuses two ranks on one device), so this checks the NCCL and
CUDA path of the sharded code, not communication between GPUs: that needs a machine with several.

    PYTHONUNBUFFERED=1 python3 bench/gpu/fsdp_nccl.py [--device cpu]      (cuda by default)
"""
import argparse
import functools
import sys
import tempfile
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "python"), str(ROOT / "python" / "tests")]

try:
    import pytest  # noqa: F401  (test_fsdp imports it; the GPU image may not ship it)
except ImportError:
    import types

    sys.modules["pytest"] = types.ModuleType("pytest")
import fsdp_helpers  # noqa: E402
import test_fsdp  # noqa: E402
from durable_rl_torch.models import Placement  # noqa: E402

TOLERANCE = 1e-5


def on(device: str) -> None:
    """Points the test's scenario at `device`: its placement, and its models made there."""
    test_fsdp.CPU = Placement(torch.device(device), torch.float32)
    make = test_fsdp.tiny_model
    test_fsdp.tiny_model = lambda arch="gpt2", seed=0: make(arch, seed).to(device)


def scenario_on(device: str, world):
    """The scenario in a spawned rank (module-level, so spawn can pickle it)."""
    on(device)
    return test_fsdp.scenario(world)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda")
    device = parser.parse_args().device
    if device == "cuda":
        assert torch.cuda.is_available(), "no CUDA device"
        print(f"{torch.cuda.get_device_name(0)}, torch {torch.__version__}, NCCL {torch.cuda.nccl.version()}")
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    on(device)
    t0 = time.time()
    one = test_fsdp.scenario(None)
    t1 = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        ranks = fsdp_helpers.run_ranks(functools.partial(scenario_on, device), Path(tmp), size=1, wait_s=400)
    t2 = time.time()
    sharded = ranks[0]
    to_cpu = lambda x: x.cpu() if isinstance(x, torch.Tensor) else {k: to_cpu(v) for k, v in x.items()} if isinstance(x, dict) else [to_cpu(v) for v in x] if isinstance(x, list) else x  # noqa: E731
    diffs = test_fsdp.max_diff(to_cpu(sharded), to_cpu(one))
    worst = max(diffs, key=lambda d: d[1])
    print(f"one process on {device}: {t1 - t0:.1f} s; one FSDP2 rank ({'nccl' if device == 'cuda' else 'gloo'}): {t2 - t1:.1f} s")
    print(f"compared {len(diffs)} numbers and tensors; largest difference {worst[1]:.3g} at {worst[0]}")
    for arch in one:
        for key in ("sft", "grpo", "grpo-skip", "grpo-lora"):
            assert one[arch][key]["adam"]["step"] > 0, (arch, key)
    print("PASS" if worst[1] < TOLERANCE else f"FAIL: over {TOLERANCE}")
    sys.exit(0 if worst[1] < TOLERANCE else 1)


if __name__ == "__main__":
    main()
