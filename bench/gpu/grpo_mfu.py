"""The prepared GPU check of the torch worker (issue 37): its GRPO update (durable_rl_torch.grpo.run_grpo_update,
the function the trainGrpo activity calls) on a Qwen3-0.6B-shaped policy, timed on synthetic batches, with
tokens/s and MFU by prime-rl's FLOP formula beside prime-rl's own numbers.

    PYTHONPATH=python python3 bench/gpu/grpo_mfu.py            # the GPU check (one CUDA device, < 8 minutes)
    PYTHONPATH=python python3 bench/gpu/grpo_mfu.py --tiny     # small shapes on the CPU, a few seconds

The policy is randomly initialised (no weights are downloaded) by the worker's own models.new_model from a
transformers Qwen3Config of Qwen3-0.6B's shape; LoRA through models.with_new_adapter, the optimiser the
worker's AdamW, the placement models.placement (bfloat16 autocast over float32 weights on CUDA). Each
configuration runs warm-up updates, then timed ones between torch.cuda.synchronize() calls; the whole
update is timed (batch building, forward and backward passes, optimiser step).

Results go to $OUT (or --out): grpo_mfu.json, grpo_mfu.md and the progress log grpo_mfu.log; the markdown
table is printed last.
"""
from __future__ import annotations

import argparse
import copy
import gc
import json
import os
import platform
import resource
import statistics
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Optional

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "python"))  # also without PYTHONPATH=python

import torch  # noqa: E402

from durable_rl_torch.contracts import LoraConfig, MicroBatchConfig, RlConfig, TrainerConfig  # noqa: E402
from durable_rl_torch.grpo import run_grpo_update  # noqa: E402
from durable_rl_torch.models import new_model, placement, use_gradient_checkpointing, with_new_adapter  # noqa: E402
from durable_rl_torch.trainer import AdamW  # noqa: E402

# Qwen3-0.6B's shape (its config.json on the Hugging Face hub): tied embeddings, GQA 16/8, head_dim 128.
QWEN3_06B = dict(
    hidden_size=1024, num_hidden_layers=28, num_attention_heads=16, num_key_value_heads=8, head_dim=128, intermediate_size=3072,
    vocab_size=151936, tie_word_embeddings=True, rope_theta=1_000_000.0, rms_norm_eps=1e-6,
)
TINY = dict(
    hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=16, intermediate_size=128,
    vocab_size=512, tie_word_embeddings=True, rope_theta=1_000_000.0, rms_norm_eps=1e-6,
)
SHAPE_KEYS = [k for k in QWEN3_06B if k != "rope_theta"] + ["rope_parameters", "max_position_embeddings"]

# prime-rl's published single-H100 numbers for Qwen3-0.6B (PrimeIntellect-ai/prime-rl,
# benchmarks/results/BENCHMARKS.md, commit 30bf494f, "Last Updated 2026-02-07"): activation
# recomputation, FlashAttention 3, MFU by src/prime_rl/trainer/perf.py against 989 TFLOP/s.
PRIME_RL_H100 = [
    {"mode": "full", "seq_len": 16384, "tokens_per_s": 11900, "mfu": 0.111, "peak_gib": 12.5},
    {"mode": "lora", "seq_len": 16384, "tokens_per_s": 13340, "mfu": 0.109, "peak_gib": 5.1},
    {"mode": "full", "seq_len": 65536, "tokens_per_s": 10150, "mfu": 0.268, "peak_gib": 19.6},
    {"mode": "lora", "seq_len": 65536, "tokens_per_s": 9970, "mfu": 0.252, "peak_gib": 11.5},
]
PRIME_RL_SOURCE = "PrimeIntellect-ai/prime-rl benchmarks/results/BENCHMARKS.md (commit 30bf494f), 1xH100 HBM3, Recompute, FA3"


# The prompt's share of each synthetic row: it is forwarded but not trained, so the LM head runs on the
# other 3/4 of the positions only (trainer.masked_logprobs), while the FLOP count below charges it for all.
PROMPT_FRACTION = 0.25
LOG: Optional[Path] = None


def say(msg: str) -> None:
    """Printed, and kept in grpo_mfu.log under the output folder (what a cut-off run printed comes back too)."""
    print(msg, flush=True)
    if LOG is not None:
        with LOG.open("a") as f:
            f.write(msg + "\n")


# ---- prime-rl's FLOP count (src/prime_rl/trainer/perf.py, PerfCounter) ----


def active_mm_params(cfg: Any) -> int:
    """perf.py get_active_mm_params for a dense GQA model: q, k, v, o, the MLP's three matrices and the LM head
    (counted once whether or not it is tied to the embedding)."""
    h, layers, heads, kv = cfg.hidden_size, cfg.num_hidden_layers, cfg.num_attention_heads, cfg.num_key_value_heads
    head_dim = getattr(cfg, "head_dim", None) or h // heads
    q = o = layers * h * heads * head_dim
    k_v = 2 * layers * h * kv * head_dim
    mlp = layers * 3 * cfg.intermediate_size * h
    return q + k_v + o + mlp + cfg.vocab_size * h


def lora_param_count(cfg: Any, rank: int) -> int:
    """Adapter parameters of LoRA on every linear layer of the decoder (peft's "all-linear": q, k, v, o, gate,
    up, down; not the LM head): rank · (fan-in + fan-out) each."""
    h, heads, kv, ff = cfg.hidden_size, cfg.num_attention_heads, cfg.num_key_value_heads, cfg.intermediate_size
    head_dim = getattr(cfg, "head_dim", None) or h // heads
    shapes = [(h, heads * head_dim), (h, kv * head_dim), (h, kv * head_dim), (heads * head_dim, h), (h, ff), (h, ff), (ff, h)]
    return cfg.num_hidden_layers * rank * sum(a + b for a, b in shapes)


def attention_flops_per_token(cfg: Any, seq_len: int, head_dim: Optional[int] = None) -> int:
    """perf.py: 12 · layers · heads · q · seq_len per token (2 matmuls forward, 4 backward, 2 FLOPs each; causal
    sparsity not discounted). prime-rl takes q = hidden_size // heads (64 for Qwen3-0.6B, whose heads are 128
    wide), so by default this is prime-rl's count; head_dim= gives the count at the heads' true width."""
    q = head_dim if head_dim is not None else cfg.hidden_size // cfg.num_attention_heads
    return 12 * cfg.num_hidden_layers * cfg.num_attention_heads * q * seq_len


def flops_per_token(cfg: Any, seq_len: int, lora_params: int = 0, head_dim: Optional[int] = None) -> int:
    """perf.py _get_num_flop_per_token: 6·N (+ attention) for full fine-tuning; with LoRA the frozen matmuls
    cost 4·N (forward and the input gradient) and the adapters 6 per parameter."""
    n = active_mm_params(cfg)
    dense = 4 * n + 6 * lora_params if lora_params else 6 * n
    return dense + attention_flops_per_token(cfg, seq_len, head_dim)


def peak_flops(device_name: str) -> Optional[float]:
    """perf.py _get_peak_flops (dense bf16): H100/H200 SXM 989 TFLOP/s, NVL 835, PCIe 756; A100 312."""
    if any(k in device_name for k in ("H100", "H200", "GH100", "GH200")):
        return 835e12 if "NVL" in device_name else 756e12 if "PCIe" in device_name else 989e12
    if "A100" in device_name:
        return 312e12
    return None


# ---- synthetic rollouts ----


def synthetic_samples(seq_len: int, rows: int, group_size: int, vocab: int, seed: int) -> list[dict[str, Any]]:
    """`rows` samples of exactly seq_len tokens (a PROMPT_FRACTION prompt, the rest a trained response), in GRPO
    groups whose rewards alternate 0/1, so every row has a non-zero advantage and takes the backward pass."""
    g = torch.Generator().manual_seed(seed)
    prompt_len = int(seq_len * PROMPT_FRACTION)
    out = []
    for i in range(rows):
        tokens = torch.randint(3, vocab, (seq_len,), generator=g).tolist()
        response = tokens[prompt_len:]
        out.append({
            "promptTokens": tokens[:prompt_len],
            "responseTokens": response,
            "logprobs": [-1.0] * len(response),
            "lossMask": [1] * len(response),
            "reward": float(i % 2),
            "metadata": {"role": "actor", "episodeId": f"e{i}", "turn": 0, "weightVersion": 0, "groupId": f"g{i // group_size}"},
        })
    return out


# ---- one configuration ----


@dataclass
class Result:
    mode: str
    seq_len: int
    rows: int
    micro_batch_rows: int
    grad_ckpt: bool
    status: str = "ok"
    error: Optional[str] = None
    step_seconds: list[float] = field(default_factory=list)
    tokens_per_update: int = 0
    padded_tokens_per_update: int = 0
    tokens_per_s: Optional[float] = None
    flops_per_token: Optional[int] = None
    flops_per_token_true_head_dim: Optional[int] = None
    mfu: Optional[float] = None
    mfu_true_head_dim: Optional[float] = None
    achieved_tflops: Optional[float] = None
    peak_allocated_gib: Optional[float] = None
    peak_reserved_gib: Optional[float] = None
    trainable_params: int = 0
    lora_rank: Optional[int] = None
    lora_params: int = 0
    # Each update's gradient norm (its GRPO loss is 0 at ratio 1 on balanced groups): non-zero, finite.
    grad_norms: list[float] = field(default_factory=list)


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def run_one(base: torch.nn.Module, cfg: Any, mode: str, seq_len: int, args: argparse.Namespace, grad_ckpt: bool) -> Result:
    where = placement(TrainerConfig(backend="torch", device=args.device, dtype=args.dtype))
    rows = max(args.group_size, (args.tokens_per_update // seq_len) // args.group_size * args.group_size)
    micro = max(1, args.pass_tokens // seq_len)
    res = Result(mode, seq_len, rows, micro, grad_ckpt)
    model = copy.deepcopy(base).to(where.device)
    if grad_ckpt:
        use_gradient_checkpointing(model)
    if mode == "lora":
        model = with_new_adapter(model, LoraConfig(rank=args.lora_rank, alpha=2 * args.lora_rank), seed=1)
        res.lora_rank = args.lora_rank
        res.lora_params = sum(p.numel() for n, p in model.named_parameters() if "lora_" in n)
    res.trainable_params = sum(p.numel() for p in model.parameters() if p.requires_grad)
    rl = RlConfig(learningRate=1e-6, groupSize=args.group_size, maxNewTokens=seq_len, microBatch=MicroBatchConfig(rows=micro, byLength=True))
    optim = AdamW(model, rl.learningRate, rl.gradClip)
    samples = synthetic_samples(seq_len, rows, args.group_size, cfg.vocab_size, seed=seq_len)
    if where.device.type == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(where.device)
    for step in range(args.warmup + args.steps):
        sync(where.device)
        t0 = time.perf_counter()
        numbers = run_grpo_update(model, optim, samples, rl, max_seq=seq_len, where=where, seed=step).numbers
        sync(where.device)
        seconds = time.perf_counter() - t0
        res.grad_norms.append(numbers["gradNormLast"])
        if step >= args.warmup:
            res.step_seconds.append(seconds)
        res.tokens_per_update, res.padded_tokens_per_update = numbers["tokensRun"], numbers["paddedTokensRun"]
        say(f"  {mode} L={seq_len} step {step}{' (warm-up)' if step < args.warmup else ''}: {seconds:.3f} s, grad norm {numbers['gradNormLast']:.4g}")
    seconds = statistics.median(res.step_seconds)
    res.tokens_per_s = res.tokens_per_update / seconds
    res.flops_per_token = flops_per_token(cfg, seq_len, res.lora_params)
    res.flops_per_token_true_head_dim = flops_per_token(cfg, seq_len, res.lora_params, head_dim=cfg.head_dim)
    res.achieved_tflops = res.flops_per_token * res.tokens_per_s / 1e12
    peak = args.peak_flops
    if peak:
        res.mfu = res.flops_per_token * res.tokens_per_s / peak
        res.mfu_true_head_dim = res.flops_per_token_true_head_dim * res.tokens_per_s / peak
    if where.device.type == "cuda":
        res.peak_allocated_gib = torch.cuda.max_memory_allocated(where.device) / 2**30
        res.peak_reserved_gib = torch.cuda.max_memory_reserved(where.device) / 2**30
    del model, optim
    return res


def run_config(base: torch.nn.Module, cfg: Any, mode: str, seq_len: int, args: argparse.Namespace) -> Result:
    """With --grad-ckpt auto: without activation recomputation first, again with it if that runs out of memory."""
    tries = {"off": [False], "on": [True], "auto": [False, True]}[args.grad_ckpt]
    res: Optional[Result] = None
    for ckpt in tries:
        try:
            return run_one(base, cfg, mode, seq_len, args, ckpt)
        except torch.cuda.OutOfMemoryError as e:
            res = Result(mode, seq_len, 0, 0, ckpt, status="oom", error=str(e).splitlines()[0])
            say(f"  {mode} L={seq_len} grad_ckpt={ckpt}: out of memory")
        finally:
            gc.collect()
            if torch.cuda.is_available():
                torch.cuda.empty_cache()
    assert res is not None
    return res


# ---- environment, report ----


def flash_sdpa_usable(cfg: Any, device: torch.device) -> Optional[bool]:
    """Whether PyTorch's flash kernel takes this model's attention (bf16, causal, GQA), as the worker calls it."""
    if device.type != "cuda":
        return None
    from torch.nn.attention import SDPBackend, sdpa_kernel

    q = torch.randn(1, cfg.num_attention_heads, 256, cfg.head_dim, device=device, dtype=torch.bfloat16)
    kv = torch.randn(1, cfg.num_key_value_heads, 256, cfg.head_dim, device=device, dtype=torch.bfloat16)
    try:
        with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
            torch.nn.functional.scaled_dot_product_attention(q, kv, kv, is_causal=True, enable_gqa=True)
        return True
    except RuntimeError:
        return False


def environment(cfg: Any, device: torch.device, args: argparse.Namespace) -> dict[str, Any]:
    import peft
    import transformers

    env: dict[str, Any] = {
        "torch": torch.__version__, "transformers": transformers.__version__, "peft": peft.__version__, "python": platform.python_version(),
        "device": torch.cuda.get_device_name(device) if device.type == "cuda" else f"cpu ({torch.get_num_threads()} threads)",
        "cuda": torch.version.cuda, "peak_flops": args.peak_flops, "dtype": str(placement(TrainerConfig(backend="torch", device=args.device, dtype=args.dtype)).dtype).removeprefix("torch."), "flash_sdpa": flash_sdpa_usable(cfg, device),
    }
    if device.type == "cuda":
        env["gpu_memory_gib"] = torch.cuda.get_device_properties(device).total_memory / 2**30
    return env


def fmt(x: Optional[float], spec: str, unit: str = "") -> str:
    return "—" if x is None else format(x, spec) + unit


def label(r: Result) -> str:
    return f"LoRA r={r.lora_rank}" if r.mode == "lora" else r.mode


def markdown(results: list[Result], env: dict[str, Any], tiny: bool) -> str:
    lines = [
        f"### GRPO update, {'tiny shapes' if tiny else 'Qwen3-0.6B shape'}: {env['device']}, torch {env['torch']}, {env['dtype']}",
        "",
        "| Mode | SeqLen | Rows × len / update | Micro-batch rows | AC | Tokens/s | MFU (prime-rl formula) | TFLOP/s | Peak alloc GiB | Step s (median) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        if r.status != "ok":
            lines.append(f"| {label(r)} | {r.seq_len} | — | — | {'recompute' if r.grad_ckpt else 'none'} | {r.status} | — | — | — | — |")
            continue
        lines.append(
            f"| {label(r)} | {r.seq_len} | {r.rows} × {r.seq_len} | {r.micro_batch_rows} | {'recompute' if r.grad_ckpt else 'none'} "
            f"| {fmt(r.tokens_per_s, ',.0f')} | {fmt(r.mfu and 100 * r.mfu, '.1f', '%')} "
            f"| {fmt(r.achieved_tflops, '.3g')} | {fmt(r.peak_allocated_gib, '.1f')} | {fmt(statistics.median(r.step_seconds), '.3f')} |"
        )
    lines += ["", f"prime-rl, Qwen3-0.6B ({PRIME_RL_SOURCE}):", "", "| Mode | SeqLen | Tokens/s | MFU | Peak GiB |", "|---|---|---|---|---|"]
    for p in PRIME_RL_H100:
        lines.append(f"| {'LoRA r=16' if p['mode'] == 'lora' else 'full'} | {p['seq_len']} | {p['tokens_per_s']:,} | {100 * p['mfu']:.1f}% | {p['peak_gib']} |")
    return "\n".join(lines) + "\n"


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tiny", action="store_true", help="small shapes on the CPU (a few seconds): checks the script, measures nothing")
    ap.add_argument("--seq-lens", type=lambda s: [int(x) for x in s.split(",")], help="default 2048,8192,16384 (tiny: 32,64)")
    ap.add_argument("--modes", type=lambda s: s.split(","), default=["full", "lora"])
    ap.add_argument("--tokens-per-update", type=int, help="tokens in each update's batch (default 65536; tiny 256)")
    ap.add_argument("--pass-tokens", type=int, help="tokens per forward/backward pass: micro-batch rows = this // seq_len (default 16384; tiny 128)")
    ap.add_argument("--group-size", type=int, default=4)
    ap.add_argument("--lora-rank", type=int, default=16)
    ap.add_argument("--warmup", type=int, help="warm-up updates, not timed (default 2; tiny 1)")
    ap.add_argument("--steps", type=int, help="timed updates (default 3; tiny 2)")
    ap.add_argument("--grad-ckpt", choices=["auto", "on", "off"], default="auto", help="activation recomputation; auto: only after running out of memory")
    ap.add_argument("--device", choices=["auto", "cpu", "cuda"], help="trainer.device (default cuda; tiny cpu)")
    ap.add_argument("--dtype", choices=["auto", "bfloat16", "float32"], default="auto", help="trainer.dtype (auto: bfloat16 on CUDA, float32 on the CPU)")
    ap.add_argument("--peak-tflops", type=float, help="the device's dense bf16 peak (default: prime-rl's table by device name)")
    ap.add_argument("--budget-s", type=float, default=360.0, help="skip the configurations left once this many seconds have passed")
    ap.add_argument("--out", default=os.environ.get("OUT"), help="folder for grpo_mfu.json and grpo_mfu.md (default $OUT)")
    args = ap.parse_args(argv)
    tiny = args.tiny
    args.seq_lens = args.seq_lens or ([32, 64] if tiny else [2048, 8192, 16384])
    args.tokens_per_update = args.tokens_per_update or (256 if tiny else 65536)
    args.pass_tokens = args.pass_tokens or (128 if tiny else 16384)
    args.warmup = args.warmup if args.warmup is not None else (1 if tiny else 2)
    args.steps = args.steps or (2 if tiny else 3)
    args.device = args.device or ("cpu" if tiny else "cuda")
    started = time.perf_counter()

    from transformers import Qwen3Config

    where = placement(TrainerConfig(backend="torch", device=args.device, dtype=args.dtype))
    if tiny and where.device.type == "cpu":
        torch.set_num_threads(1)  # tiny matmuls gain nothing from threads, and on a shared machine their spinning costs seconds

    cfg = Qwen3Config(**(TINY if tiny else QWEN3_06B), max_position_embeddings=max(args.seq_lens))
    args.peak_flops = args.peak_tflops * 1e12 if args.peak_tflops else peak_flops(torch.cuda.get_device_name(where.device)) if where.device.type == "cuda" else None
    out = Path(args.out) if args.out else None
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        global LOG
        LOG = out / "grpo_mfu.log"
        LOG.write_text("")
    env = environment(cfg, where.device, args)
    say(json.dumps(env))
    base = new_model(cfg, seed=0)  # float32 on the CPU; each configuration trains a copy
    say(f"model: {sum(p.numel() for p in base.parameters()) / 1e6:.1f}M parameters, built in {time.perf_counter() - started:.1f} s")

    results: list[Result] = []

    def report() -> tuple[dict[str, Any], str]:
        """Written after each configuration, so a run cut off at its time limit still leaves what it measured."""
        rep = {
            "what": "durable_rl_torch.grpo.run_grpo_update on synthetic GRPO batches, Qwen3-0.6B shape" if not tiny else "tiny check of bench/gpu/grpo_mfu.py (measures nothing)",
            "environment": env,
            "model": {k: getattr(cfg, k) for k in SHAPE_KEYS},
            "settings": {**{k: getattr(args, k) for k in ("seq_lens", "modes", "tokens_per_update", "pass_tokens", "group_size", "lora_rank", "warmup", "steps", "grad_ckpt")}, "prompt_fraction": PROMPT_FRACTION},
            "flop_formula": "prime-rl src/prime_rl/trainer/perf.py: 6·N (LoRA: 4·N + 6·N_lora) + 12·layers·heads·(hidden/heads)·seq_len per token; N = q,k,v,o,MLP and LM-head matmul parameters",
            "results": [asdict(r) for r in results],
            "prime_rl": {"source": PRIME_RL_SOURCE, "rows": PRIME_RL_H100},
            "seconds": time.perf_counter() - started,
            "peak_rss_gib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
        }
        table = markdown(results, env, tiny)
        if out is not None:
            (out / "grpo_mfu.json").write_text(json.dumps(rep, indent=2) + "\n")
            (out / "grpo_mfu.md").write_text(table)
        return rep, table

    for seq_len in args.seq_lens:
        for mode in args.modes:
            if time.perf_counter() - started > args.budget_s:
                results.append(Result(mode, seq_len, 0, 0, False, status="skipped (time budget)"))
                continue
            say(f"{mode} L={seq_len}")
            results.append(run_config(base, cfg, mode, seq_len, args))
            report()
    rep, table = report()
    print(json.dumps(rep), flush=True)
    say(table)
    return 0 if all(r.status == "ok" for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
