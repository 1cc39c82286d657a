"""Checkpoints in the blob store: what is saved is what is loaded, LoRA stores its frozen base once."""
import torch

from durable_rl_torch.blob_store import FsBlobStore, get_json
from durable_rl_torch.checkpoints import Policy, load_policy, store_policy, write_dir
from durable_rl_torch.contracts import CheckpointInfo
from durable_rl_torch.contracts import LoraConfig
from durable_rl_torch.models import load_pretrained, with_new_adapter
from durable_rl_torch.trainer import AdamW, train_step
from durable_rl_torch.pg_batch import PgBatch

from helpers import CPU, tiny_model


def same_weights(a: torch.nn.Module, b: torch.nn.Module) -> bool:
    sa, sb = a.state_dict(), b.state_dict()
    return sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa)


def save(store, policy: Policy) -> CheckpointInfo:
    return CheckpointInfo(name=f"ckpt-{policy.step}", ref=store_policy(store, policy), step=policy.step)


def one_step(model: torch.nn.Module) -> AdamW:
    opt = AdamW(model, 1e-2, 1.0)
    train_step(model, PgBatch(tokens=[[3, 4, 5, 6]], loss_mask=[[0, 1, 1, 1]]), opt, 1e-2, max_seq=64, where=CPU)
    return opt


def test_a_full_checkpoint_round_trips_with_its_optimizer(tmp_path):
    store = FsBlobStore(tmp_path)
    model = tiny_model("qwen3")
    opt = one_step(model)
    info = save(store, Policy(model, 7, opt.state()))
    assert info.ref.kind == "hf-checkpoint"
    again = load_policy(store, info, CPU, None)
    assert again.step == 7 and same_weights(again.model, model)
    assert again.adam["step"] == 1 and all(torch.equal(again.adam["m"][k], v) for k, v in opt.state()["m"].items())
    # The same policy stores the same manifest (content-addressed: a retry writes no new bytes).
    assert store_policy(store, Policy(model, 7, opt.state())) == info.ref
    # The directory loads in transformers as it is.
    assert same_weights(load_pretrained(write_dir(store, info.ref, tmp_path / "dir"), CPU), model)


def test_a_lora_checkpoint_keeps_its_base_by_reference_and_merges_for_export(tmp_path):
    store = FsBlobStore(tmp_path)
    base = tiny_model("qwen3")
    base_info = save(store, Policy(base, 0, None))
    manifest = get_json(store, base_info.ref)
    from durable_rl_torch.blob_store import BlobRef

    files = {k: BlobRef.from_json(r) for k, r in manifest["files"].items()}
    peft_model = with_new_adapter(load_policy(store, base_info, CPU, None).model, LoraConfig(rank=4, alpha=8), seed=1)
    opt = one_step(peft_model)
    info = save(store, Policy(peft_model, 1, opt.state(), files))
    m = get_json(store, info.ref)
    assert m["files"] == manifest["files"] and sorted(m["adapter"]) == ["adapter_config.json", "adapter_model.safetensors"]
    assert all(k.endswith(("lora_A.default.weight", "lora_B.default.weight")) for k in opt.state()["m"])
    again = load_policy(store, info, CPU, None)
    assert again.is_lora and again.base_files == files
    x = torch.tensor([[3, 4, 5, 6, 7]])
    with torch.no_grad():
        want = peft_model(input_ids=x).logits
        assert torch.allclose(again.model(input_ids=x).logits, want, atol=1e-6)
        merged = load_pretrained(write_dir(store, info.ref, tmp_path / "merged"), CPU)
        assert torch.allclose(merged(input_ids=x).logits, want, atol=1e-5)


def ts_checkpoint_bytes(cfg, weights, step: int) -> bytes:
    """src/model/checkpoint.ts encodeCheckpoint (no optimizer), for tests."""
    import json as _json
    import struct

    import numpy as np

    from durable_rl_torch.ts_checkpoint import weight_shapes

    arrays = [weights[name].astype("<f4").ravel() for name, _ in weight_shapes(cfg)]
    header = _json.dumps({"format": 2, "config": cfg.to_json(), "step": step, "optimizer": None, "sizes": [int(a.size) for a in arrays]}).encode()
    start = (8 + 4 + len(header) + 3) & ~3
    out = bytearray(b"DRLCKPT1" + struct.pack("<I", len(header)) + header)
    out += b"\0" * (start - len(out))
    return bytes(out) + np.concatenate(arrays).tobytes()


def test_publishing_a_tfjs_checkpoint_writes_its_gpt2_directory(tmp_path):
    from durable_rl_torch.activities import TrainingActivities
    from durable_rl_torch.models import special_ids
    from durable_rl_torch.ts_checkpoint import GptConfig, init_weights

    store = FsBlobStore(tmp_path / "store")
    cfg = GptConfig(special_ids()[0], 64, 32, 2, 2, 64)
    ref = store.put(ts_checkpoint_bytes(cfg, init_weights(cfg, 5), 12), "checkpoint")
    store.set_name("runs/src/ckpt/step-000012", ref)
    acts = TrainingActivities(store)
    info = acts.checkpoint_from_run({"runId": "dst", "fromRun": "src", "model": {"dModel": 32, "nLayers": 2, "nHeads": 2, "dFf": 64, "maxSeq": 64}, "trainer": {"backend": "torch"}})
    weights = acts.publish_weights({"runId": "dst", "checkpoint": info, "version": 0})
    assert weights["step"] == 12 and weights["hf"]["kind"] == "hf-checkpoint"
    from durable_rl_torch.blob_store import BlobRef as Ref
    from durable_rl_torch.checkpoints import _gpt2_from_ts
    from durable_rl_torch.ts_checkpoint import decode_checkpoint

    served = load_pretrained(write_dir(store, Ref.from_json(weights["hf"]), tmp_path / "served"), CPU)
    ts = decode_checkpoint(store.get(ref))
    assert same_weights(served, _gpt2_from_ts(ts.config, ts.weights, CPU, False))
