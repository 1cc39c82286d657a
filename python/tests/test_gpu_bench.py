"""bench/gpu/grpo_mfu.py, the prepared GPU check: its FLOP count is prime-rl's, and its tiny mode runs here
(the documented command, on the CPU), so the script cannot rot between the sessions lent a GPU."""
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "bench" / "gpu" / "grpo_mfu.py"


def bench_module():
    spec = importlib.util.spec_from_file_location("grpo_mfu", SCRIPT)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["grpo_mfu"] = mod  # dataclasses look their module up while it loads
    spec.loader.exec_module(mod)
    return mod


def test_the_flop_count_gives_prime_rls_published_mfu():
    """prime-rl's BENCHMARKS.md, Qwen3-0.6B on one H100 at 16k: 11.90k tokens/s is 11.1% MFU (full) and
    13.34k tokens/s 10.9% (LoRA r=16) against 989 TFLOP/s; the same count here gives the same MFU."""
    from transformers import Qwen3Config

    m = bench_module()
    cfg = Qwen3Config(**m.QWEN3_06B)
    assert m.active_mm_params(cfg) == 595_984_384
    assert m.lora_param_count(cfg, 16) == 10_092_544
    peak = m.peak_flops("NVIDIA H100 80GB HBM3")
    assert peak == 989e12
    for row in m.PRIME_RL_H100:
        lora = m.lora_param_count(cfg, 16) if row["mode"] == "lora" else 0
        mfu = m.flops_per_token(cfg, row["seq_len"], lora) * row["tokens_per_s"] / peak
        assert mfu == pytest.approx(row["mfu"], abs=0.0006), row


def test_the_tiny_mode_runs_the_workers_update_and_writes_its_report(tmp_path: Path):
    env = {**os.environ, "PYTHONPATH": str(REPO / "python"), "OUT": str(tmp_path)}
    proc = subprocess.run([sys.executable, str(SCRIPT), "--tiny"], cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    report = json.loads((tmp_path / "grpo_mfu.json").read_text())
    table = (tmp_path / "grpo_mfu.md").read_text()
    assert proc.stdout.rstrip().endswith(table.rstrip())  # the table is printed last
    results = report["results"]
    assert [(r["mode"], r["seq_len"]) for r in results] == [("full", 32), ("lora", 32), ("full", 64), ("lora", 64)]
    m = bench_module()
    from transformers import Qwen3Config

    tiny = Qwen3Config(**m.TINY)
    for r in results:
        assert r["status"] == "ok"
        assert len(r["step_seconds"]) == 2  # the warm-up update is not timed
        assert len(r["grad_norms"]) == 3 and all(0 < g < float("inf") for g in r["grad_norms"])  # every update took a backward pass
        assert r["tokens_per_update"] == 256 and r["padded_tokens_per_update"] == r["rows"] * (r["seq_len"] - 1)  # no padding (a row of L tokens is L-1 predictions)
        assert r["tokens_per_s"] > 0 and r["flops_per_token"] > 0 and r["mfu"] is None  # no peak known for a CPU
        assert r["lora_params"] == (m.lora_param_count(tiny, 16) if r["mode"] == "lora" else 0)
        assert r["trainable_params"] == r["lora_params"] if r["mode"] == "lora" else r["trainable_params"] > 2 * m.lora_param_count(tiny, 16)
    assert "| LoRA r=16 | 32 |" in table and "11,900" in table


def test_a_configuration_out_of_memory_is_run_again_with_recomputation(monkeypatch: pytest.MonkeyPatch):
    import argparse

    import torch

    m = bench_module()
    tried: list[bool] = []

    def run_one(base, cfg, mode, seq_len, args, grad_ckpt):
        tried.append(grad_ckpt)
        if not grad_ckpt:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return m.Result(mode, seq_len, 4, 1, grad_ckpt)

    monkeypatch.setattr(m, "run_one", run_one)
    res = m.run_config(None, None, "full", 16384, argparse.Namespace(grad_ckpt="auto"))
    assert tried == [False, True] and res.status == "ok" and res.grad_ckpt
    tried.clear()
    res = m.run_config(None, None, "full", 16384, argparse.Namespace(grad_ckpt="off"))
    assert tried == [False] and res.status == "oom" and "out of memory" in (res.error or "")
