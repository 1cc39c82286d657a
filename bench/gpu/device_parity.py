"""The torch worker's training code on CUDA against the CPU (run through the device tool on a lent GPU):
the same SFT chunk and GRPO updates (full weights, then a LoRA adapter with a KL-loss reference) from the
same Qwen3-architecture policy, in float32 on both devices, must give the same losses and weights
(within 1e-4); bfloat16 on CUDA must train (finite losses, close to float32's); a checkpoint saved
from the GPU must load on the CPU as the same weights.

    PYTHONUNBUFFERED=1 PYTHONPATH=python python3 bench/gpu/device_parity.py      (needs one CUDA device)
"""
import json
import random
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))

from durable_rl_torch.blob_store import FsBlobStore  # noqa: E402
from durable_rl_torch.checkpoints import Policy, load_policy, store_policy  # noqa: E402
from durable_rl_torch.contracts import CheckpointInfo, LoraConfig, MicroBatchConfig, ModelConfig, RlConfig, SftConfig, TrainerConfig  # noqa: E402
from durable_rl_torch.grpo import run_grpo_update  # noqa: E402
from durable_rl_torch.models import hf_config, new_model, placement, with_new_adapter  # noqa: E402
from durable_rl_torch.sft import run_sft_chunk  # noqa: E402
from durable_rl_torch.trainer import AdamW  # noqa: E402

MODEL = ModelConfig(arch="qwen3", dModel=256, nLayers=4, nHeads=8, nKvHeads=2, dFf=768, maxSeq=256)


def rollout(vocab: int, seed: int = 0) -> list[dict]:
    rnd = random.Random(seed)
    out = []
    for g in range(4):
        for e in range(4):
            n = rnd.randint(8, 40)
            mask = [0 if 5 <= t < 9 else 1 for t in range(n)]
            out.append({
                "promptTokens": [rnd.randrange(3, vocab) for _ in range(rnd.randint(10, 60))],
                "responseTokens": [rnd.randrange(3, vocab) for _ in range(n)],
                "logprobs": [-rnd.random() * 5 if m else 0.0 for m in mask],
                "lossMask": mask,
                "reward": float(rnd.random() < 0.5),
                "metadata": {"role": "actor", "episodeId": f"g{g}e{e}", "turn": 0, "weightVersion": 0, "groupId": f"g{g}"},
            })
    return out


def train(device: str, dtype: str) -> dict:
    where = placement(TrainerConfig(backend="torch", device=device, dtype=dtype))  # type: ignore[arg-type]
    model = new_model(hf_config(MODEL), 3).to(where.device)
    vocab = model.config.vocab_size
    samples = rollout(vocab)
    examples = [{"role": "actor", "tokens": s["promptTokens"] + s["responseTokens"], "lossMask": [0] * len(s["promptTokens"]) + s["lossMask"]} for s in samples]
    t0 = time.perf_counter()
    sft = SftConfig(steps=20, batchSize=8, learningRate=3e-3, warmupSteps=2, gradClip=1, stepsPerActivity=5)
    optim = AdamW(model, sft.learningRate, sft.gradClip)
    chunk = run_sft_chunk(model, optim, 0, examples, 5, sft, 1, MODEL.maxSeq, where)
    rl = RlConfig(learningRate=1e-3, ppoEpochs=2, miniBatches=2, promptsPerStep=4, groupSize=4, microBatch=MicroBatchConfig(rows=4, byLength=True))
    full = run_grpo_update(model, AdamW(model, rl.learningRate, rl.gradClip), samples, rl, max_seq=MODEL.maxSeq, where=where, seed=1).numbers
    store = FsBlobStore(tempfile.mkdtemp())
    saved = store_policy(store, Policy(model, 6, None))
    reloaded = load_policy(store, CheckpointInfo("c", saved, 6), placement(TrainerConfig(backend="torch", device="cpu")), None)
    same = all(torch.equal(a.cpu(), b) for a, b in zip(model.state_dict().values(), reloaded.model.state_dict().values()))
    lora_rl = RlConfig(learningRate=1e-3, ppoEpochs=1, miniBatches=2, promptsPerStep=4, groupSize=4, useKlLoss=True, microBatch=MicroBatchConfig(rows=4, byLength=True))
    peft_model = with_new_adapter(model, LoraConfig(rank=8, alpha=16), 7)

    class Off:
        def __enter__(self):
            self.ctx = peft_model.disable_adapter()
            self.ctx.__enter__()
            return peft_model

        def __exit__(self, *a):
            return self.ctx.__exit__(*a)

    lora = run_grpo_update(peft_model, AdamW(peft_model, lora_rl.learningRate, 1.0), samples, lora_rl, max_seq=MODEL.maxSeq, where=where, seed=2, reference=Off).numbers
    seconds = time.perf_counter() - t0
    weights = {k: v.detach().float().cpu() for k, v in peft_model.state_dict().items()}
    return {"sft": [l["loss"] for l in chunk.losses], "full": full, "lora": lora, "saved_loads_same": same, "seconds": seconds, "weights": weights}


def main() -> None:
    assert torch.cuda.is_available(), "needs a CUDA device"
    cpu, gpu, bf16 = train("cpu", "float32"), train("cuda", "float32"), train("cuda", "bfloat16")
    keys = ["loss", "pgLoss", "approxKl", "entropy", "gradNorm", "klLoss"]
    diff = {
        "sft_loss": max(abs(a - b) for a, b in zip(cpu["sft"], gpu["sft"])),
        **{f"full.{k}": abs(cpu["full"][k] - gpu["full"][k]) for k in keys if k in cpu["full"]},
        **{f"lora.{k}": abs(cpu["lora"][k] - gpu["lora"][k]) for k in keys if k in cpu["lora"]},
    }
    # Reported, not judged: Adam's first steps move a weight by about ±lr whatever its gradient's size,
    # so where a gradient is near ε the two devices' roundings can differ by up to the learning rate.
    weight_diff = max(float((cpu["weights"][k] - gpu["weights"][k]).abs().max()) for k in cpu["weights"])
    report = {
        "device": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "float32 cpu vs cuda (max abs diff)": diff,
        "within 1e-4": all(v < 1e-4 for v in diff.values()),
        "weights max abs diff (reported)": weight_diff,
        "checkpoint saved on cuda loads on cpu unchanged": gpu["saved_loads_same"],
        "bf16 sft losses": bf16["sft"],
        "fp32 sft losses": gpu["sft"],
        "bf16 finite": all(v == v for v in bf16["sft"]) and bf16["full"]["loss"] == bf16["full"]["loss"],
        "seconds": {"cpu": cpu["seconds"], "cuda fp32": gpu["seconds"], "cuda bf16": bf16["seconds"]},
    }
    print(json.dumps(report, indent=2))
    sys.exit(0 if report["within 1e-4"] and report["checkpoint saved on cuda loads on cpu unchanged"] and report["bf16 finite"] else 1)


if __name__ == "__main__":
    main()
