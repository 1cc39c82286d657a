"""The tfjs trainer's checkpoints and the embedded policy's layout (src/model/checkpoint.ts, arch.ts,
init.ts, hf-export.ts), so the torch worker continues a tfjs run, starts from the same weights as the
tfjs trainer for a seed, and writes the GPT2LMHeadModel names the embedded engine's import reads.

The embedded policy is GPT-2 with an untied head and matrices stored [in, out]: GPT-2's Conv1D layout,
so only the fused q|k|v projection and the head (lm_head is [V, d]) change shape on the way.
"""
from __future__ import annotations

import json
import math
import struct
from dataclasses import dataclass
from typing import Any

import numpy as np

from .rng import fill_normal

MAGIC = b"DRLCKPT1"
FORMAT_VERSION = 2
LAYER_NORM_EPS = 1e-5
INIT_STD = 0.02


@dataclass
class GptConfig:
    vocabSize: int
    maxSeq: int
    dModel: int
    nLayers: int
    nHeads: int
    dFf: int

    def to_json(self) -> dict[str, int]:
        # src/model/checkpoint.ts canonicalConfig's key order.
        return {"vocabSize": self.vocabSize, "maxSeq": self.maxSeq, "dModel": self.dModel, "nLayers": self.nLayers, "nHeads": self.nHeads, "dFf": self.dFf}


def weight_shapes(c: GptConfig) -> list[tuple[str, tuple[int, ...]]]:
    d = c.dModel
    out: list[tuple[str, tuple[int, ...]]] = [("wte", (c.vocabSize, d)), ("wpe", (c.maxSeq, d))]
    for i in range(c.nLayers):
        p = f"h.{i}."
        out += [
            (f"{p}ln1.g", (d,)), (f"{p}ln1.b", (d,)),
            (f"{p}attn.wq", (d, d)), (f"{p}attn.bq", (d,)),
            (f"{p}attn.wk", (d, d)), (f"{p}attn.bk", (d,)),
            (f"{p}attn.wv", (d, d)), (f"{p}attn.bv", (d,)),
            (f"{p}attn.wo", (d, d)), (f"{p}attn.bo", (d,)),
            (f"{p}ln2.g", (d,)), (f"{p}ln2.b", (d,)),
            (f"{p}mlp.w1", (d, c.dFf)), (f"{p}mlp.b1", (c.dFf,)),
            (f"{p}mlp.w2", (c.dFf, d)), (f"{p}mlp.b2", (d,)),
        ]
    out += [("lnf.g", (d,)), ("lnf.b", (d,)), ("head", (d, c.vocabSize))]
    return out


def init_weights(c: GptConfig, seed: int) -> dict[str, np.ndarray]:
    """src/model/init.ts initWeights: the same floats for the same seed."""
    draw = 0
    residual_std = INIT_STD / math.sqrt(2 * c.nLayers)
    out: dict[str, np.ndarray] = {}
    for name, shape in weight_shapes(c):
        size = int(np.prod(shape))
        if len(shape) >= 2:
            residual = name.endswith("attn.wo") or name.endswith("mlp.w2")
            w, draw = fill_normal(size, residual_std if residual else INIT_STD, seed, draw)
        elif name.endswith(".g"):
            w = np.ones(size, dtype=np.float32)
        else:
            w = np.zeros(size, dtype=np.float32)
        out[name] = w.reshape(shape)
    return out


@dataclass
class TsCheckpoint:
    config: GptConfig
    weights: dict[str, np.ndarray]
    step: int
    # {"config": AdamConfig, "step": int, "m": weights, "v": weights} or None
    optimizer: dict[str, Any] | None


def decode_checkpoint(data: bytes) -> TsCheckpoint:
    """src/model/checkpoint.ts decodeCheckpoint."""
    if data[: len(MAGIC)] != MAGIC:
        raise ValueError("not a durable-rl checkpoint")
    (json_len,) = struct.unpack_from("<I", data, len(MAGIC))
    header = json.loads(data[len(MAGIC) + 4 : len(MAGIC) + 4 + json_len])
    if header["format"] != FORMAT_VERSION:
        raise ValueError(f"unsupported checkpoint format {header['format']}")
    start = (len(MAGIC) + 4 + json_len + 3) & ~3
    total = sum(header["sizes"])
    if len(data) != start + total * 4:
        raise ValueError("checkpoint is truncated or has trailing bytes")
    floats = np.frombuffer(data, dtype="<f4", count=total, offset=start)
    cfg = GptConfig(**header["config"])
    shapes = weight_shapes(cfg)
    sizes = iter(header["sizes"])
    offset = 0

    def take() -> dict[str, np.ndarray]:
        nonlocal offset
        out = {}
        for name, shape in shapes:
            n = next(sizes)
            out[name] = floats[offset : offset + n].reshape(shape).copy()
            offset += n
        return out

    weights = take()
    opt = None
    if header["optimizer"]:
        m = take()
        v = take()
        opt = {**header["optimizer"], "m": m, "v": v}
    return TsCheckpoint(cfg, weights, header["step"], opt)


def to_hf_state(c: GptConfig, w: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """src/model/hf-export.ts hfTensors: the embedded layout in GPT2LMHeadModel's names (also for Adam moments)."""
    out = {"transformer.wte.weight": w["wte"], "transformer.wpe.weight": w["wpe"]}
    for i in range(c.nLayers):
        L, H = f"h.{i}.", f"transformer.h.{i}."
        out.update({
            f"{H}ln_1.weight": w[f"{L}ln1.g"], f"{H}ln_1.bias": w[f"{L}ln1.b"],
            f"{H}attn.c_attn.weight": np.concatenate([w[f"{L}attn.wq"], w[f"{L}attn.wk"], w[f"{L}attn.wv"]], axis=1),
            f"{H}attn.c_attn.bias": np.concatenate([w[f"{L}attn.bq"], w[f"{L}attn.bk"], w[f"{L}attn.bv"]]),
            f"{H}attn.c_proj.weight": w[f"{L}attn.wo"], f"{H}attn.c_proj.bias": w[f"{L}attn.bo"],
            f"{H}ln_2.weight": w[f"{L}ln2.g"], f"{H}ln_2.bias": w[f"{L}ln2.b"],
            f"{H}mlp.c_fc.weight": w[f"{L}mlp.w1"], f"{H}mlp.c_fc.bias": w[f"{L}mlp.b1"],
            f"{H}mlp.c_proj.weight": w[f"{L}mlp.w2"], f"{H}mlp.c_proj.bias": w[f"{L}mlp.b2"],
        })
    out.update({"transformer.ln_f.weight": w["lnf.g"], "transformer.ln_f.bias": w["lnf.b"], "lm_head.weight": np.ascontiguousarray(w["head"].T)})
    return {k: np.ascontiguousarray(v, dtype=np.float32) for k, v in out.items()}


def from_hf_state(c: GptConfig, s: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The inverse of to_hf_state (src/model/hf-export.ts importHf)."""
    d = c.dModel
    w = {"wte": s["transformer.wte.weight"], "wpe": s["transformer.wpe.weight"]}
    for i in range(c.nLayers):
        L, H = f"h.{i}.", f"transformer.h.{i}."
        qkv, bqkv = s[f"{H}attn.c_attn.weight"], s[f"{H}attn.c_attn.bias"]
        w.update({
            f"{L}ln1.g": s[f"{H}ln_1.weight"], f"{L}ln1.b": s[f"{H}ln_1.bias"],
            f"{L}attn.wq": qkv[:, :d], f"{L}attn.wk": qkv[:, d : 2 * d], f"{L}attn.wv": qkv[:, 2 * d :],
            f"{L}attn.bq": bqkv[:d], f"{L}attn.bk": bqkv[d : 2 * d], f"{L}attn.bv": bqkv[2 * d :],
            f"{L}attn.wo": s[f"{H}attn.c_proj.weight"], f"{L}attn.bo": s[f"{H}attn.c_proj.bias"],
            f"{L}ln2.g": s[f"{H}ln_2.weight"], f"{L}ln2.b": s[f"{H}ln_2.bias"],
            f"{L}mlp.w1": s[f"{H}mlp.c_fc.weight"], f"{L}mlp.b1": s[f"{H}mlp.c_fc.bias"],
            f"{L}mlp.w2": s[f"{H}mlp.c_proj.weight"], f"{L}mlp.b2": s[f"{H}mlp.c_proj.bias"],
        })
    w.update({"lnf.g": s["transformer.ln_f.weight"], "lnf.b": s["transformer.ln_f.bias"], "head": s["lm_head.weight"].T})
    return {k: np.ascontiguousarray(v, dtype=np.float32) for k, v in w.items()}
