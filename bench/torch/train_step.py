"""The torch side of `npm run bench:train` (bench/train.ts): the same SFT step and GRPO update the tfjs
trainer ran, on the same checkpoint and rollout, timed; and this machine's fp32 matmul ceiling in torch.

Reads {"checkpoint": path, "samples": [...], "sftRows": n, "rl": {...}, "sftLr": x, "repeat": n} on stdin, writes
{"sft": {"seconds", "tokens"}, "grpo": {"seconds", "tokensRun", "numbers"}, "matmulGflops", "threads"}.
"""
import json
import sys
import time
from pathlib import Path

import torch

from durable_rl_torch.checkpoints import _gpt2_from_ts
from durable_rl_torch.contracts import RlConfig, parse
from durable_rl_torch.grpo import run_grpo_update
from durable_rl_torch.models import Placement
from durable_rl_torch.pg_batch import PgBatch
from durable_rl_torch.trainer import AdamW, SFT_PASS_TOKENS, train_step
from durable_rl_torch.ts_checkpoint import decode_checkpoint

CPU = Placement(torch.device("cpu"), torch.float32)


def matmul_gflops(n: int = 2048, repeat: int = 5) -> float:
    a, b = torch.randn(n, n), torch.randn(n, n)
    a @ b
    best = min(_timed(lambda: a @ b) for _ in range(repeat))
    return 2 * n**3 / best / 1e9


def _timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def main() -> None:
    req = json.load(sys.stdin)
    ts = decode_checkpoint(Path(req["checkpoint"]).read_bytes())
    samples = req["samples"]
    rl = parse(RlConfig, req["rl"])
    sft_rows = samples[: req["sftRows"]]
    batch = PgBatch(tokens=[s["promptTokens"] + s["responseTokens"] for s in sft_rows], loss_mask=[[0.0] * len(s["promptTokens"]) + s["lossMask"] for s in sft_rows])
    sft, grpo = [], []
    numbers = {}
    for _ in range(req["repeat"]):
        model = _gpt2_from_ts(ts.config, ts.weights, CPU, False)
        opt = AdamW(model, req["sftLr"], 1.0)
        sft.append(_timed(lambda: train_step(model, batch, opt, req["sftLr"], max_seq=ts.config.maxSeq, where=CPU, pass_tokens=SFT_PASS_TOKENS, by_length=True)))
        model = _gpt2_from_ts(ts.config, ts.weights, CPU, False)
        t0 = time.perf_counter()
        numbers = run_grpo_update(model, AdamW(model, rl.learningRate, rl.gradClip), samples, rl, max_seq=ts.config.maxSeq, where=CPU, seed=1).numbers
        grpo.append(time.perf_counter() - t0)
    json.dump({"sft": {"seconds": sft}, "grpo": {"seconds": grpo, "numbers": numbers}, "matmulGflops": matmul_gflops(), "threads": torch.get_num_threads(), "torch": torch.__version__}, sys.stdout)


if __name__ == "__main__":
    main()
