"""Checkpoints as Hugging Face directories in the blob store.

A checkpoint is a manifest blob (kind "hf-checkpoint") naming the blobs of its files:
  {"format": "durable-rl/hf-checkpoint/1", "step": N,
   "files": {"config.json": ref, "model.safetensors": ref, "tokenizer.json": ref, ...},
   "adapter": {"adapter_config.json": ref, "adapter_model.safetensors": ref} | absent,   (LoRA: files are the frozen base)
   "optimizer": {"moments": ref, "step": n, "lr", "beta1", ...} | absent}                (AdamW: moments as safetensors)
Content addressing stores the unchanged base of a LoRA run once, however many steps it has. The tfjs
trainer's checkpoints (kind "checkpoint", src/model/checkpoint.ts) are read too, so a torch run can
start from a tfjs run and the two trainers are compared on the same weights.
"""
from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors.torch import load as load_safetensors
from safetensors.torch import save as save_safetensors

from .blob_store import BlobRef, BlobStore, get_json, put_json
from .contracts import CheckpointInfo, TrainerConfig
from .models import Placement, hf_config, load_pretrained, model_tokenizer_files, use_gradient_checkpointing
from .ts_checkpoint import GptConfig, decode_checkpoint, to_hf_state

FORMAT = "durable-rl/hf-checkpoint/1"
MANIFEST_KIND = "hf-checkpoint"
TS_KIND = "checkpoint"
# src/model/adam.ts DEFAULT_ADAM: the tfjs trainer's AdamW, so both backends take the same steps.
ADAM_DEFAULTS = {"lr": 1e-3, "beta1": 0.9, "beta2": 0.99, "eps": 1e-8, "weightDecay": 0.0}


@dataclass
class Policy:
    """A checkpoint in memory: the model (a PeftModel under LoRA) and what the next update continues with."""

    model: torch.nn.Module
    step: int
    # Adam's moments by parameter name and its step count; None: a fresh optimiser.
    adam: dict[str, Any] | None
    # LoRA: the frozen base's files, kept by reference in every later checkpoint.
    base_files: dict[str, BlobRef] | None = None
    source_sha: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def is_lora(self) -> bool:
        return self.base_files is not None


def _materialize(store: BlobStore, files: dict[str, BlobRef], into: Path) -> Path:
    into.mkdir(parents=True, exist_ok=True)
    for fname, ref in files.items():
        (into / fname).write_bytes(store.get(ref))
    return into


def _parse_files(v: dict[str, Any]) -> dict[str, BlobRef]:
    return {k: BlobRef.from_json(r) for k, r in v.items()}


def read_manifest(store: BlobStore, ref: BlobRef) -> dict[str, Any]:
    m = get_json(store, ref)
    if m.get("format") != FORMAT:
        raise ValueError(f"checkpoint {ref.sha256[:12]} is not a {FORMAT} manifest (format {m.get('format')!r})")
    return m


def write_dir(store: BlobStore, ref: BlobRef, directory: Path, merged: bool = True) -> Path:
    """A checkpoint as a Hugging Face directory (LoRA merged into the base unless merged is False: then base and adapter/)."""
    m = read_manifest(store, ref)
    files = _parse_files(m["files"])
    if not m.get("adapter"):
        return _materialize(store, files, directory)
    if not merged:
        _materialize(store, files, directory)
        _materialize(store, _parse_files(m["adapter"]), directory / "adapter")
        return directory
    with tempfile.TemporaryDirectory() as tmp:
        base = _materialize(store, files, Path(tmp) / "base")
        adapter = _materialize(store, _parse_files(m["adapter"]), Path(tmp) / "adapter")
        from peft import PeftModel

        model = PeftModel.from_pretrained(load_pretrained(base, Placement(torch.device("cpu"), torch.float32)), str(adapter)).merge_and_unload()
        return _save_full_dir(model, directory)


def model_class_name(model: torch.nn.Module) -> str:
    """The model's own class name (FSDP's fully_shard swaps a sharded model's class for a subclass of it)."""
    from torch.distributed.fsdp import FSDPModule

    return next(c for c in type(model).__mro__ if not issubclass(c, FSDPModule)).__name__


def _save_full_dir(model: torch.nn.Module, directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    files = full_model_files(model)
    for fname, data in files.items():
        (directory / fname).write_bytes(data)
    return directory


def full_model_files(model: torch.nn.Module, state: dict[str, torch.Tensor] | None = None, tokenizer: dict[str, bytes] | None = None) -> dict[str, bytes]:
    """state: the model's state dict gathered from its shards (fsdp.gathered_state); default the model's own.
    tokenizer: the tokenizer files to ship; default the config's own (model_tokenizer_files: model.tokenizer's, else the project's)."""
    if state is None:
        state = {k: v.detach().to("cpu", torch.float32).contiguous() for k, v in model.state_dict().items()}
    # As save_pretrained writes it: servers (vLLM) pick the model class, and generation, from it.
    model.config.architectures = [model_class_name(model)]
    return {
        "config.json": model.config.to_json_string(use_diff=False).encode("utf8"),
        "model.safetensors": save_safetensors(state, metadata={"format": "pt"}),
        **(tokenizer if tokenizer is not None else model_tokenizer_files(model.config)),
    }


def load_policy(store: BlobStore, info: CheckpointInfo, where: Placement, trainer: TrainerConfig | None) -> Policy:
    """The checkpoint `info` (torch manifest or tfjs checkpoint) as a trainable model on `where`."""
    gc = bool(trainer and trainer.gradientCheckpointing)
    if info.ref.kind == TS_KIND:
        ts = decode_checkpoint(store.get(info.ref))
        model = _gpt2_from_ts(ts.config, ts.weights, where, gc)
        adam = None
        if ts.optimizer:
            m = to_hf_state(ts.config, ts.optimizer["m"])
            v = to_hf_state(ts.config, ts.optimizer["v"])
            adam = {"step": ts.optimizer["step"], "m": {k: torch.from_numpy(x) for k, x in m.items()}, "v": {k: torch.from_numpy(x) for k, x in v.items()}}
        return Policy(model, ts.step, adam, None, info.ref.sha256)
    m = read_manifest(store, info.ref)
    files = _parse_files(m["files"])
    with tempfile.TemporaryDirectory() as tmp:
        model = load_pretrained(_materialize(store, files, Path(tmp) / "model"), where, gc)
        base_files = None
        if m.get("adapter"):
            from peft import PeftModel

            adapter = _materialize(store, _parse_files(m["adapter"]), Path(tmp) / "adapter")
            model = PeftModel.from_pretrained(model, str(adapter), is_trainable=True)
            base_files = files
    adam = None
    if m.get("optimizer"):
        tensors = load_safetensors(store.get(BlobRef.from_json(m["optimizer"]["moments"])))
        adam = {
            "step": int(m["optimizer"]["step"]),
            "m": {k[len("m.") :]: t for k, t in tensors.items() if k.startswith("m.")},
            "v": {k[len("v.") :]: t for k, t in tensors.items() if k.startswith("v.")},
        }
    return Policy(model, int(m["step"]), adam, base_files, info.ref.sha256)


def _gpt2_from_ts(cfg: GptConfig, weights: dict[str, np.ndarray], where: Placement, gradient_checkpointing: bool) -> torch.nn.Module:
    from transformers import GPT2LMHeadModel

    from .contracts import ModelConfig

    model = GPT2LMHeadModel(hf_config(ModelConfig(dModel=cfg.dModel, nLayers=cfg.nLayers, nHeads=cfg.nHeads, dFf=cfg.dFf, maxSeq=cfg.maxSeq)))
    model.load_state_dict({k: torch.from_numpy(v) for k, v in to_hf_state(cfg, weights).items()}, strict=True)
    model.to(where.device)
    if gradient_checkpointing:
        use_gradient_checkpointing(model)
    return model


def _adapter_files(model: torch.nn.Module, state: dict[str, torch.Tensor] | None = None) -> dict[str, bytes]:
    """state: the adapter's parameters gathered from their shards; default the model's own."""
    with tempfile.TemporaryDirectory() as tmp:
        # Sorted, so an adapter's files are the same bytes each time it is saved (peft keeps a set).
        for cfg in model.peft_config.values():
            if isinstance(cfg.target_modules, (set, frozenset)):
                cfg.target_modules = sorted(cfg.target_modules)
        # The base is frozen and stored apart: only the adapter's own weights go into its files.
        model.save_pretrained(tmp, save_embedding_layers=False, **({"state_dict": state} if state is not None else {}))
        return {p.name: p.read_bytes() for p in Path(tmp).iterdir() if p.is_file() and p.name != "README.md"}


def store_policy(store: BlobStore, policy: Policy, with_optimizer: bool = True, state: dict[str, torch.Tensor] | None = None) -> BlobRef:
    """Stores the policy's files and manifest (content-addressed, unnamed): the activities name it as a
    run's checkpoint through named_results, keyed by what it was made from. state: the model's weights
    gathered from its shards (the adapter's alone under LoRA), for a sharded model."""
    manifest: dict[str, Any] = {"format": FORMAT, "step": policy.step}
    if policy.base_files is not None:
        manifest["files"] = {k: r.to_json() for k, r in policy.base_files.items()}
        manifest["adapter"] = {k: store.put(data, "hf-file").to_json() for k, data in sorted(_adapter_files(policy.model, state).items())}
    else:
        manifest["files"] = {k: store.put(data, "hf-file").to_json() for k, data in sorted(full_model_files(policy.model, state).items())}
    if with_optimizer and policy.adam is not None:
        tensors = {f"m.{k}": t.detach().to("cpu", torch.float32).contiguous() for k, t in policy.adam["m"].items()}
        tensors.update({f"v.{k}": t.detach().to("cpu", torch.float32).contiguous() for k, t in policy.adam["v"].items()})
        moments = store.put(save_safetensors(tensors, metadata={"format": "pt"}), "adam-state")
        manifest["optimizer"] = {"moments": moments.to_json(), "step": policy.adam["step"], **ADAM_DEFAULTS}
    return put_json(store, manifest, MANIFEST_KIND)


def weights_manifest(store: BlobStore, info: CheckpointInfo) -> dict[str, Any]:
    """What a server loads of a checkpoint: its manifest without Adam's moments. A tfjs checkpoint (a run
    started from one with init.fromRun) is written as the Hugging Face directory of its GPT-2 first."""
    if info.ref.kind == TS_KIND:
        policy = load_policy(store, info, Placement(torch.device("cpu"), torch.float32), None)
        files = {k: store.put(data, "hf-file").to_json() for k, data in sorted(full_model_files(policy.model).items())}
        return {"format": FORMAT, "step": policy.step, "files": files}
    return {k: v for k, v in read_manifest(store, info.ref).items() if k != "optimizer"}
