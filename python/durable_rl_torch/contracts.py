"""The training activities' payloads, mirroring the TypeScript contract (activities/training.ts,
src/contracts/weights.ts, src/config/schema.ts). Field names are the JSON's own (camelCase).

The TypeScript types are the one source of truth: `parse` is strict, so a key this side does not know
fails the activity with a BadInputError naming it (no option is dropped silently), and
test/contracts/torch-contract.test.ts runs recorded inputs of every training activity through both
workers.
"""
from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass, field
from typing import Any, Literal, Optional, Union

from .blob_store import BlobRef

# ---- run config sections the trainer reads (src/config/schema.ts) ----


@dataclass
class ModelConfig:
    dModel: int = 128
    nLayers: int = 2
    nHeads: int = 4
    dFf: int = 512
    maxSeq: int = 384
    arch: Literal["gpt2", "qwen3", "llama"] = "gpt2"
    nKvHeads: Optional[int] = None
    # model.tokenizer (chat mode): a Hugging Face tokenizer directory, or an alias (models.TOKENIZER_ALIASES).
    tokenizer: Optional[str] = None


@dataclass
class SftConfig:
    steps: int
    batchSize: int
    learningRate: float
    warmupSteps: int
    gradClip: float
    stepsPerActivity: int


@dataclass
class MicroBatchConfig:
    rows: int = 16
    byLength: bool = False


@dataclass
class DynamicSamplingConfig:
    enabled: bool = False
    maxBatchesPerStep: int = 3


@dataclass
class AsyncConfig:
    maxStaleness: int = 1
    correction: Literal["decoupled", "tis", "none"] = "decoupled"
    isCap: float = 5


KlKind = Literal["kl", "k1", "abs", "mse", "k2", "low_var_kl", "k3"]
LossAggMode = Literal["token-mean", "seq-mean-token-sum", "seq-mean-token-mean", "seq-mean-token-sum-norm"]


@dataclass
class RlConfig:
    algorithm: Literal["grpo"] = "grpo"
    steps: int = 0
    promptsPerStep: int = 8
    groupSize: int = 4
    learningRate: float = 5e-4
    clipEps: float = 0.2
    temperature: float = 1
    topP: float = 1
    maxNewTokens: int = 48
    normAdvByStd: bool = True
    advantageNorm: Literal["episode", "role"] = "episode"
    advEpsilon: float = 1e-6
    clipEpsLow: Optional[float] = None
    clipEpsHigh: Optional[float] = None
    dualClipC: float = 3
    lossAggMode: LossAggMode = "token-mean"
    lossScaleFactor: Optional[float] = None
    ppoEpochs: int = 1
    miniBatches: int = 1
    # Absent in configs recorded before the key: 16 rows in batch order (src/config/recorded.ts).
    microBatch: Optional[MicroBatchConfig] = None
    gradClip: float = 1
    useKlLoss: bool = False
    klLossCoef: float = 0.001
    klLossType: KlKind = "low_var_kl"
    useKlInReward: bool = False
    klRewardCoef: float = 0.001
    klPenalty: KlKind = "kl"
    entropyCoeff: float = 0
    dynamicSampling: Optional[DynamicSamplingConfig] = None
    # typing's name: `async` is a keyword in Python.
    async_: Optional[AsyncConfig] = field(default=None, metadata={"json": "async"})


@dataclass
class LoraConfig:
    rank: int = 16
    alpha: float = 32
    dropout: float = 0
    targetModules: list[str] = field(default_factory=lambda: ["all-linear"])


@dataclass
class TrainerConfig:
    backend: Literal["tfjs", "torch"] = "tfjs"
    device: Literal["auto", "cpu", "cuda"] = "auto"
    dtype: Literal["auto", "float32", "bfloat16"] = "auto"
    lora: Optional[LoraConfig] = None
    gradientCheckpointing: bool = False


# ---- activity payloads (activities/training.ts) ----


@dataclass
class CheckpointInfo:
    name: str
    ref: BlobRef
    step: int


@dataclass
class WeightsInfo:
    version: int
    step: int
    onnx: Optional[BlobRef] = None
    hf: Optional[BlobRef] = None
    # hf is a LoRA checkpoint: vLLM serves its adapter (src/contracts/weights.ts).
    lora: Optional[bool] = None


@dataclass
class LossPoint:
    step: int
    loss: float


@dataclass
class TimelineSnaps:
    """src/timeline/counts.ts TimelineCounts.snaps: survivors by SnapReason (src/timeline/types.ts)."""

    text: Optional[int] = None
    tokens: Optional[int] = None
    tools: Optional[int] = None
    author: Optional[int] = None
    length: Optional[int] = None


@dataclass
class TimelineCounts:
    """src/timeline/counts.ts: what timeline merging did to a sample set."""

    captured: int
    merged: int
    tokensBefore: int
    tokensAfter: int
    driftRepaired: int
    snaps: Optional[TimelineSnaps] = None
    # Chat episodes (task.chat): the full-render check's mismatches by kind, and unalignedModelIds.
    chat: Optional[dict[str, int]] = None


@dataclass
class SampleSetRef:
    """src/contracts/sample-set.ts: one role's samples in the blob store, as the history keeps them."""

    role: Literal["planner", "actor", "single"]
    ref: BlobRef
    samples: int
    responseTokens: int
    meanReward: float
    timelines: Optional[TimelineCounts] = None


@dataclass
class InitPolicyInput:
    runId: str
    model: ModelConfig
    seed: int
    trainer: Optional[TrainerConfig] = None


@dataclass
class TrainSftInput:
    runId: str
    checkpoint: CheckpointInfo
    dataset: BlobRef
    toStep: int
    sft: SftConfig
    seed: int
    maxTrainedTokens: Optional[int] = None
    trainer: Optional[TrainerConfig] = None


@dataclass
class TrainGrpoInput:
    runId: str
    checkpoint: CheckpointInfo
    samples: list[SampleSetRef]
    step: int
    rl: RlConfig
    resetOptimizer: Optional[bool] = None
    reference: Optional[CheckpointInfo] = None
    keepGroups: Optional[list[str]] = None
    policyVersion: Optional[int] = None
    objective: Optional[Literal["grpo", "rft"]] = None
    trainer: Optional[TrainerConfig] = None


@dataclass
class CheckpointFromRunInput:
    runId: str
    fromRun: str
    model: ModelConfig
    step: Optional[int] = None
    trainer: Optional[TrainerConfig] = None


@dataclass
class CheckpointFromHfInput:
    runId: str
    dir: str
    model: ModelConfig
    trainer: Optional[TrainerConfig] = None


@dataclass
class PublishWeightsInput:
    runId: str
    checkpoint: CheckpointInfo
    version: int


# ---- strict JSON <-> dataclass ----


class PayloadError(ValueError):
    """A payload that does not fit the contract; the message names the field."""


def _json_name(f: dataclasses.Field[Any]) -> str:
    return str(f.metadata.get("json", f.name))


def parse(cls: Any, value: Any, path: str = "input") -> Any:
    """`value` (parsed JSON) as `cls`; unknown keys, missing required keys and wrong types raise PayloadError."""
    origin = typing.get_origin(cls)
    args = typing.get_args(cls)
    if cls is Any:
        return value
    if origin in (Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        inner = [a for a in args if a is not type(None)]
        errors = []
        for a in inner:
            try:
                return parse(a, value, path)
            except PayloadError as err:
                errors.append(str(err))
        raise PayloadError("; ".join(errors))
    if origin is Literal:
        if value not in args:
            raise PayloadError(f"{path} is {value!r}, expected one of {', '.join(repr(a) for a in args)}")
        return value
    if origin is list:
        if not isinstance(value, list):
            raise PayloadError(f"{path} must be a list")
        return [parse(args[0], v, f"{path}[{i}]") for i, v in enumerate(value)]
    if origin is dict:
        if not isinstance(value, dict):
            raise PayloadError(f"{path} must be an object")
        return {k: parse(args[1], v, f"{path}.{k}") for k, v in value.items()}
    if cls is BlobRef:
        if not isinstance(value, dict) or set(value) != {"sha256", "bytes", "kind"}:
            raise PayloadError(f"{path} must be a blob reference {{sha256, bytes, kind}}")
        return BlobRef.from_json(value)
    if dataclasses.is_dataclass(cls):
        if not isinstance(value, dict):
            raise PayloadError(f"{path} must be an object")
        hints = typing.get_type_hints(cls)
        fields = {_json_name(f): f for f in dataclasses.fields(cls)}
        unknown = sorted(set(value) - set(fields))
        if unknown:
            raise PayloadError(f"{path} has keys the torch worker does not know: {', '.join(unknown)} (the TypeScript contract is newer than python/durable_rl_torch/contracts.py)")
        kwargs = {}
        for key, f in fields.items():
            if key in value:
                kwargs[f.name] = parse(hints[f.name], value[key], f"{path}.{key}")
            elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise PayloadError(f"{path}.{key} is required")
        return cls(**kwargs)
    if cls is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise PayloadError(f"{path} must be a number")
        return float(value)
    if cls is int:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or int(value) != value:
            raise PayloadError(f"{path} must be an integer")
        return int(value)
    if cls is bool or cls is str:
        if not isinstance(value, cls):
            raise PayloadError(f"{path} must be a {cls.__name__}")
        return value
    raise TypeError(f"parse: unsupported type {cls!r} at {path}")


def dump(value: Any) -> Any:
    """A dataclass (or list/dict of them) as JSON, leaving out fields that are None (TypeScript's optional keys)."""
    if isinstance(value, BlobRef):
        return value.to_json()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out = {}
        for f in dataclasses.fields(value):
            v = getattr(value, f.name)
            if v is not None:
                out[_json_name(f)] = dump(v)
        return out
    if isinstance(value, list):
        return [dump(v) for v in value]
    if isinstance(value, dict):
        return {k: dump(v) for k, v in value.items() if v is not None}
    return value
