"""The checkpoints `npm run bench:sync` (bench/sync.ts) puts on vLLM: a base policy of the given model.*
and, per version, a full-weight checkpoint (the base with every weight moved a little) and a LoRA
checkpoint (the base and an adapter of the given rank with a random B), stored as the torch worker
stores them. Reads {"store", "model", "seed", "versions", "rank"} on stdin; writes
{"full": [manifest refs], "lora": [manifest refs], "parameters", "adapterParameters"}."""
import json
import sys

import torch

from durable_rl_torch.blob_store import BlobRef, FsBlobStore, get_json
from durable_rl_torch.checkpoints import Policy, store_policy
from durable_rl_torch.contracts import LoraConfig, ModelConfig, parse
from durable_rl_torch.models import hf_config, new_model, with_new_adapter


def main() -> None:
    req = json.load(sys.stdin)
    store = FsBlobStore(req["store"])
    base = new_model(hf_config(parse(ModelConfig, req["model"])), req["seed"])
    base_ref = store_policy(store, Policy(base, 0, None))
    files = {k: BlobRef.from_json(r) for k, r in get_json(store, base_ref)["files"].items()}
    full, lora = [], []
    g = torch.Generator().manual_seed(req["seed"])
    for v in range(1, req["versions"] + 1):
        moved = new_model(hf_config(parse(ModelConfig, req["model"])), req["seed"])
        with torch.no_grad():
            for p in moved.parameters():
                p.add_(torch.randn(p.shape, generator=g) * 1e-3)
        full.append(store_policy(store, Policy(moved, v, None)).to_json())
        adapted = with_new_adapter(new_model(hf_config(parse(ModelConfig, req["model"])), req["seed"]), LoraConfig(rank=req["rank"], alpha=2 * req["rank"]), v)
        with torch.no_grad():
            for name, p in adapted.named_parameters():
                if "lora_B" in name:
                    p.copy_(torch.randn(p.shape, generator=g) * 0.02)
        lora.append(store_policy(store, Policy(adapted, v, None, files)).to_json())
    adapter_params = sum(p.numel() for n, p in adapted.named_parameters() if "lora_" in n)
    json.dump({"full": full, "lora": lora, "parameters": sum(p.numel() for p in base.parameters()), "adapterParameters": adapter_params}, sys.stdout)


if __name__ == "__main__":
    main()
