"""The training activities on the torch worker's task queue: the same names and JSON payloads as the
tfjs trainer's (activities/training.ts). Synchronous functions, run one at a time in the worker's thread
pool, heartbeating between stages and micro-batches, so a cancel or a kill is seen within the heartbeat
timeout. Every result is named in the blob store once: a retried activity finds its own result.

Every named result (checkpoints, SFT chunks, RL steps, published weights) is keyed by what it was made
from as well as by its name (named_results.py, made_from.py), as the tfjs trainer's are: a start under
a workflow id whose results were made from other inputs (a source run that trained further since) is
refused with a ConfigError naming what differs, instead of being handed the other start's result.

Under torchrun (several GPUs: distributed.py), rank 0 serves the activities, and trainSft and trainGrpo
run on every rank: rank 0 posts the job (its name and input) to the others, every rank runs the same
schedule on its shard of the model (fsdp.py), rank 0 alone heartbeats and writes, and every heartbeat
point tells the other ranks whether the activity was cancelled. The other activities run on rank 0 alone."""
from __future__ import annotations

import contextlib
import json
import math
import tempfile
import threading
from pathlib import Path
from typing import Any, Callable, Iterator, Optional

import torch
from temporalio import activity
from temporalio.exceptions import ApplicationError, CancelledError

from . import names
from .blob_store import BlobRef, BlobStore, get_json, put_json
from .checkpoints import MANIFEST_KIND, TS_KIND, Policy, full_model_files, load_policy, read_manifest, store_policy, weights_manifest
from .contracts import (
    CheckpointFromHfInput,
    CheckpointFromRunInput,
    CheckpointInfo,
    InitPolicyInput,
    ModelConfig,
    PayloadError,
    PublishWeightsInput,
    TrainerConfig,
    TrainGrpoInput,
    TrainSftInput,
    WeightsInfo,
    dump,
    parse,
)
from .distributed import World, WorldBroken
from .fsdp import gathered_state, is_sharded, shard
from .grpo import run_grpo_update
from .made_from import (
    copied_checkpoint_inputs,
    init_policy_inputs,
    publish_inputs,
    published_before_records,
    refuse_other_inputs,
    rl_step_inputs,
    same_bytes,
    sft_chunk_inputs,
)
from .models import Placement, hf_config, max_positions, model_shape, new_model, placement, shape_mismatch, tokenizer_files, with_new_adapter
from .named_results import MadeFrom, NamedResultSpec, named_result, once_by_name
from .sft import run_sft_chunk
from .trainer import AdamW
from .ts_checkpoint import GptConfig, decode_checkpoint, init_weights

# The same text activities/training.ts checks a starting policy's tokenizer with.
TOKENIZER_CHECK = "Compute: 17+25*3-(8/2)\nACT 1: 17+25\nRESULT 1: 42\nANSWER: 71\n<calc>17+25</calc>\n<result>42</result>\n<|eos|>"


def config_error(message: str) -> ApplicationError:
    return ApplicationError(message, type="ConfigError", non_retryable=True)


def bad_input(message: str) -> ApplicationError:
    return ApplicationError(message, type="BadInputError", non_retryable=True)


def heartbeat(details: Any) -> None:
    """A heartbeat when running as an activity (tests call the functions directly too); raises once cancelled."""
    if not activity.in_activity():
        return
    activity.heartbeat(details)
    if activity.is_cancelled():
        raise CancelledError("the activity was cancelled")


def parsed(cls: Any, value: Any) -> Any:
    try:
        return parse(cls, value)
    except PayloadError as err:
        raise bad_input(f"{activity.info().activity_type if activity.in_activity() else cls.__name__}: {err}") from None


def backend_label(where: Placement, world: Optional[World] = None) -> str:
    dev = torch.cuda.get_device_name(where.device) if where.device.type == "cuda" else f"cpu ({torch.get_num_threads()} threads)"
    ranks = f" × {world.size} ranks (FSDP)" if world is not None else ""
    return f"torch {torch.__version__} on {dev}{ranks}, {str(where.dtype).removeprefix('torch.')}"


def parameter_count(model: torch.nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


class TrainingActivities:
    def __init__(self, store: BlobStore, device_lock: Optional[threading.Lock] = None, world: Optional[World] = None, on_broken: Callable[[], None] = lambda: None):
        self.store = store
        # The model of the last checkpoint written, kept in memory: the next update of the same run
        # starts from it instead of reading it back (taken out while an activity trains it). Under
        # torchrun, every rank keeps its shard of it.
        self._kept: Optional[tuple[str, Policy]] = None
        self._lock = device_lock or threading.Lock()
        # The ranks of a torchrun launch (None: one process); on_broken: called on rank 0 once they are
        # out of step (the worker stops, so that Temporal retries the activity elsewhere).
        self.world = world
        self._on_broken = on_broken

    # ---- the ranks of a torchrun launch ----

    @contextlib.contextmanager
    def _job(self, name: str, raw: dict[str, Any]) -> Iterator[None]:
        """Rank 0 runs the body with every other rank running `name` on `raw` beside it (follow)."""
        world = self.world
        if world is None:
            yield
            return
        try:
            world.post({"job": name, "input": raw})
        except Exception as err:
            raise self._broken(WorldBroken(f"handing {name} to the other ranks failed ({err})")) from None
        error: Optional[BaseException] = None
        try:
            yield
        except BaseException as err:
            error = err
            raise
        finally:
            try:
                world.settle(error)
            except WorldBroken as broken:
                raise self._broken(broken) from error

    def _broken(self, broken: WorldBroken) -> ApplicationError:
        self._on_broken()
        return ApplicationError(
            f"the training ranks are out of step: {broken}; this worker stops (torchrun ends every rank), and the activity is retried on a worker started again",
            type="TrainingRanksFailed",
        )

    def follow(self, message: dict[str, Any]) -> None:
        """A rank other than 0: runs the job rank 0 posted, then the handshake (raises WorldBroken)."""
        assert self.world is not None
        name, raw = message["job"], message["input"]
        error: Optional[BaseException] = None
        try:
            if name == "trainSft":
                sft: TrainSftInput = parse(TrainSftInput, raw)
                self._sft_job(sft, sft_chunk_inputs(raw, sft))
            elif name == "trainGrpo":
                grpo: TrainGrpoInput = parse(TrainGrpoInput, raw)
                self._grpo_job(grpo, rl_step_inputs(raw, grpo), raw["samples"])
            else:
                raise WorldBroken(f"rank 0 posted an unknown job {name!r}")
        except WorldBroken:
            raise
        except Exception as err:
            error = err
        self.world.settle(error)

    def _beat(self, details: Any) -> None:
        """A heartbeat point: rank 0 heartbeats, and every rank learns from it whether the activity was cancelled."""
        world = self.world
        if world is None:
            heartbeat(details)
            return
        cancelled = False
        if world.leader:
            try:
                heartbeat(details)
            except CancelledError:
                cancelled = True
        if world.share(cancelled):
            raise CancelledError("the activity was cancelled")

    def _on_rank0(self, fn: Callable[[], Any]) -> Any:
        """fn() once: on rank 0 alone under torchrun (writes to the store), its value on every rank."""
        return fn() if self.world is None else self.world.leader_does(fn)

    def _placed(self, model: torch.nn.Module, where: Placement) -> torch.nn.Module:
        """The model as this process trains it: sharded over the ranks under torchrun."""
        return model if self.world is None else shard(model, self.world, where)

    def handlers(self) -> list[Callable[..., Any]]:
        """What the worker registers: every activity, under the TypeScript contract's names (activities/training.ts)."""
        return [self.init_policy, self.train_sft, self.train_grpo, self.checkpoint_from_run, self.checkpoint_from_hf, self.publish_weights]

    # ---- loading and saving ----

    def _policy(self, info: CheckpointInfo, where: Placement, trainer: Optional[TrainerConfig], for_new_adapter: bool = False) -> Policy:
        """for_new_adapter: a full model is wanted unsharded (peft adds its adapter before sharding)."""
        kept, self._kept = self._kept, None
        if kept is not None and kept[0] == info.ref.sha256 and not (for_new_adapter and is_sharded(kept[1].model) and not kept[1].is_lora):
            return kept[1]
        del kept
        try:
            return load_policy(self.store, info, where, trainer)
        except (ValueError, KeyError) as err:
            raise bad_input(f"checkpoint {info.name}: {err}") from None

    def _save(self, run_id: str, policy: Policy, made_from: MadeFrom, exact: bool = False, optim: Optional[AdamW] = None) -> CheckpointInfo:
        """Stores the policy (with optim's state) and names it run_id's checkpoint at its step, made from `made_from`."""
        if is_sharded(policy.model):
            return self._save_sharded(run_id, policy, made_from, optim)
        if optim is not None:
            policy.adam = optim.state()
        mine = store_policy(self.store, policy)
        info = self._name_checkpoint(run_id, policy.step, mine, made_from, exact)
        # Kept in memory only if it is what the name holds (an earlier attempt's may differ in its last bits).
        if self.world is None:
            self._kept = (mine.sha256, policy) if info.ref == mine else None
        return info

    def _save_sharded(self, run_id: str, policy: Policy, made_from: MadeFrom, optim: Optional[AdamW]) -> CheckpointInfo:
        """The model and Adam's moments gathered whole to rank 0, which writes them as one process
        would (so a run resumes on any number of ranks); every rank keeps its shards."""
        assert self.world is not None
        state = gathered_state(policy.model, self.world, trainable_only=policy.is_lora)
        adam = optim.state(keep=self.world.leader) if optim is not None else None

        def write() -> tuple[CheckpointInfo, bool]:
            mine = store_policy(self.store, Policy(policy.model, policy.step, adam, policy.base_files), state=state)
            info = self._name_checkpoint(run_id, policy.step, mine, made_from, False)
            return info, info.ref == mine

        info, same = self.world.leader_does(write)
        del state, adam
        self._kept = (info.ref.sha256, Policy(policy.model, policy.step, optim.live_state() if optim is not None else None, policy.base_files)) if same else None
        return info

    def _name_checkpoint(self, run_id: str, step: int, mine: BlobRef, made_from: MadeFrom, exact: bool) -> CheckpointInfo:
        """`exact`: the checkpoint follows from its inputs byte for byte (an initialisation, a copy), so one named
        before made-from records is adopted only if it is the same blob; a trained one is adopted as it is (a
        retry, after the upgrade, of an attempt that crashed after naming it)."""
        name = names.checkpoint(run_id, step)
        spec = NamedResultSpec(name, f"checkpoint step {step} of workflow id '{run_id}'", made_from, (lambda held: same_bytes(held, mine, "checkpoint")) if exact else None)
        return CheckpointInfo(name=name, ref=named_result(self.store, spec, lambda: mine), step=step)

    # ---- activities ----

    @activity.defn(name="initPolicy")
    def init_policy(self, raw: dict[str, Any]) -> dict[str, Any]:
        inp: InitPolicyInput = parsed(InitPolicyInput, raw)
        where = placement(inp.trainer)
        heartbeat("start")
        cfg = hf_config(inp.model)
        if inp.model.arch == "gpt2":
            # The tfjs trainer's initialisation (src/model/init.ts), so both backends start from the same weights.
            from .checkpoints import _gpt2_from_ts

            ts_cfg = GptConfig(cfg.vocab_size, inp.model.maxSeq, inp.model.dModel, inp.model.nLayers, inp.model.nHeads, inp.model.dFf)
            model = _gpt2_from_ts(ts_cfg, init_weights(ts_cfg, inp.seed), where, False)
        else:
            model = new_model(cfg, inp.seed).to(where.device)
        heartbeat("initialised")
        # Deterministic init: a retry stores the same bytes, and one named before records is adopted only if it is them.
        with refuse_other_inputs():
            info = self._save(inp.runId, Policy(model, 0, None), init_policy_inputs(raw, inp), exact=True)
        return {"checkpoint": dump(info), "backend": backend_label(where, self.world), "parameters": parameter_count(model)}

    @activity.defn(name="trainSft")
    def train_sft(self, raw: dict[str, Any]) -> dict[str, Any]:
        inp: TrainSftInput = parsed(TrainSftInput, raw)
        made_from = sft_chunk_inputs(raw, inp)

        def compute() -> dict[str, Any]:
            with self._lock, self._job("trainSft", raw):
                return self._sft_job(inp, made_from)

        spec = NamedResultSpec(names.sft_chunk(inp.runId, inp.toStep), f"SFT chunk to step {inp.toStep} of workflow id '{inp.runId}'", made_from)
        with refuse_other_inputs():
            return once_by_name(self.store, spec, "sft-chunk", compute)

    def _sft_job(self, inp: TrainSftInput, made_from: MadeFrom) -> dict[str, Any]:
        """trainSft's update, on every rank under torchrun."""
        where = placement(inp.trainer)
        policy = self._policy(inp.checkpoint, where, inp.trainer)
        if policy.is_lora:
            raise config_error("trainSft: the checkpoint is a LoRA adapter; SFT trains full weights (trainer.lora applies to RL updates)")
        model = self._placed(policy.model, where)
        examples = get_json(self.store, inp.dataset)["examples"]
        optim = AdamW(model, inp.sft.learningRate, inp.sft.gradClip, policy.adam)
        chunk = run_sft_chunk(
            model, optim, policy.step, examples, inp.toStep, inp.sft, inp.seed, max_seq(model), where,
            on_step=lambda step, loss: self._beat({"step": step, "loss": loss}), max_trained_tokens=inp.maxTrainedTokens, world=self.world,
        )
        step = max(inp.toStep, policy.step) if inp.maxTrainedTokens is None else chunk.last_step
        info = self._save(inp.runId, Policy(model, step, None), made_from, optim=optim)
        return {"checkpoint": dump(info), "losses": chunk.losses, "tokensPerSec": round(chunk.tokens_per_sec), "trainedTokens": chunk.trained_tokens}

    @activity.defn(name="trainGrpo")
    def train_grpo(self, raw: dict[str, Any]) -> dict[str, Any]:
        inp: TrainGrpoInput = parsed(TrainGrpoInput, raw)
        if (inp.rl.useKlLoss or inp.rl.useKlInReward) and inp.reference is None:
            raise bad_input("rl.useKlLoss and rl.useKlInReward need a reference policy, but trainGrpo got no reference checkpoint (TrainGrpoInput.reference)")
        made_from = rl_step_inputs(raw, inp)

        def compute() -> dict[str, Any]:
            with self._lock, self._job("trainGrpo", raw):
                return self._grpo_job(inp, made_from, raw["samples"])

        spec = NamedResultSpec(names.rl_step(inp.runId, inp.step), f"RL step {inp.step} of workflow id '{inp.runId}'", made_from)
        with refuse_other_inputs():
            return once_by_name(self.store, spec, "rl-step", compute)

    def _grpo_job(self, inp: TrainGrpoInput, made_from: MadeFrom, sets: list[dict[str, Any]]) -> dict[str, Any]:
        """trainGrpo's update, on every rank under torchrun. `sets`: the input's sample sets as they came (for the rollout record)."""
        where = placement(inp.trainer)
        self._beat({"step": inp.step, "phase": "load"})
        lora = inp.trainer.lora if inp.trainer else None
        # A new adapter goes onto the checkpoint's model before it is sharded.
        policy = self._policy(inp.checkpoint, where, inp.trainer, for_new_adapter=lora is not None)
        fresh_adapter = False
        if lora is not None and not policy.is_lora:
            plain = policy
            base_files = self._on_rank0(lambda: self._base_files(inp.checkpoint, plain))
            policy = Policy(with_new_adapter(policy.model, lora, inp.step), policy.step, None, base_files)
            fresh_adapter = True
        policy.model = self._placed(policy.model, where)
        all_samples = [s for group in inp.samples for s in get_json(self.store, group.ref)["samples"]]
        keep = set(inp.keepGroups) if inp.keepGroups is not None else None
        kept = lambda s: keep is None or s["metadata"].get("groupId") in keep
        samples = [s for s in all_samples if kept(s)]
        self._beat({"step": inp.step, "phase": "update", "samples": len(samples)})
        reset = bool(inp.resetOptimizer) or fresh_adapter
        optim = AdamW(policy.model, inp.rl.learningRate, inp.rl.gradClip, None if reset else policy.adam)
        update = run_grpo_update(
            policy.model, optim, samples, inp.rl, max_seq=max_seq(policy.model), where=where, seed=inp.step,
            reference=self._reference(inp, policy, where), policy_version=inp.policyVersion, objective=inp.objective or "grpo",
            progress=lambda p: self._beat({"step": inp.step, **p}), world=self.world,
        )
        self._on_rank0(lambda: self._write_rollout_record(inp, sets, all_samples, kept, update.per_sample))
        info = self._save(inp.runId, Policy(policy.model, inp.step, None, policy.base_files), made_from, optim=optim)
        return {**update.numbers, "checkpoint": dump(info)}

    def _base_files(self, info: CheckpointInfo, policy: Policy) -> dict[str, BlobRef]:
        """The frozen base of a new LoRA adapter: the checkpoint's own files (stored again only when it is a tfjs checkpoint)."""
        if info.ref.kind == MANIFEST_KIND:
            m = read_manifest(self.store, info.ref)
            if not m.get("adapter"):
                return {k: BlobRef.from_json(r) for k, r in m["files"].items()}
        return {k: self.store.put(data, "hf-file") for k, data in sorted(full_model_files(policy.model).items())}

    def _reference(self, inp: TrainGrpoInput, policy: Policy, where: Placement) -> Optional[Callable[[], Any]]:
        """A context manager factory yielding the frozen reference's model: under LoRA the base with the
        adapter disabled when the reference is that base, else the reference checkpoint loaded apart."""
        if inp.reference is None:
            return None
        ref_info = inp.reference
        if policy.is_lora and ref_info.ref.kind == MANIFEST_KIND:
            m = read_manifest(self.store, ref_info.ref)
            if not m.get("adapter") and {k: BlobRef.from_json(r) for k, r in m["files"].items()} == policy.base_files:

                @contextlib.contextmanager
                def disabled() -> Iterator[Any]:
                    with policy.model.disable_adapter():
                        yield policy.model

                return disabled

        @contextlib.contextmanager
        def loaded() -> Iterator[Any]:
            ref = load_policy(self.store, ref_info, where, None)
            try:
                yield self._placed(ref.model, where)
            finally:
                del ref

        return loaded

    def _write_rollout_record(self, inp: TrainGrpoInput, sets: list[dict[str, Any]], all_samples: list[dict[str, Any]], kept: Callable[[dict[str, Any]], bool], per_sample: list[dict[str, Any]]) -> None:
        """What the update trained on, for the rollout viewer (activities/training.ts writeRolloutRecord)."""
        it = iter(per_sample)
        credit = [next(it) if kept(s) else {"advantage": 0, "status": "not-kept"} for s in all_samples]
        versions = [v for s in all_samples for v in (s["metadata"].get("weightVersions") or [s["metadata"]["weightVersion"]])]
        record: dict[str, Any] = {
            "version": 1,
            "runId": inp.runId,
            "step": inp.step,
            "policyVersion": inp.policyVersion if inp.policyVersion is not None else max([0, *versions]),
            "policyVersionKnown": inp.policyVersion is not None,
            "objective": inp.objective or "grpo",
            # The sets as the input holds them, as the tfjs trainer writes them.
            "sets": sets,
            "credit": credit,
        }
        if inp.keepGroups is not None:
            record["keepGroups"] = inp.keepGroups
        if activity.in_activity():
            record["workflowType"] = activity.info().workflow_type
        record["normAdvByStd"] = inp.rl.normAdvByStd
        record["advantageNorm"] = inp.rl.advantageNorm
        self.store.name_if_absent(names.rollout_record(inp.runId, inp.step), put_json(self.store, record, "rollout-record"))

    @activity.defn(name="checkpointFromRun")
    def checkpoint_from_run(self, raw: dict[str, Any]) -> dict[str, Any]:
        inp: CheckpointFromRunInput = parsed(CheckpointFromRunInput, raw)
        steps = names.checkpoint_steps(self.store.list_names(names.checkpoint_prefix(inp.fromRun)))
        heartbeat("listed")
        if not steps:
            raise config_error(f"init.fromRun: no checkpoints of run '{inp.fromRun}' in the blob store")
        step = inp.step if inp.step is not None else max(steps)
        ref = self.store.get_name(names.checkpoint(inp.fromRun, step))
        if ref is None:
            raise config_error(f"init.step: run '{inp.fromRun}' has no checkpoint at step {step} (it has {', '.join(map(str, steps))})")
        found = self._shape_of(ref)
        refuse_other_shape("init.fromRun", inp.model, found, f"'{inp.fromRun}'")
        # The same blob under this run's name: both trainers read either format.
        made_from = copied_checkpoint_inputs("checkpointFromRun", ref, f"step {step} of workflow id '{inp.fromRun}'")
        with refuse_other_inputs():
            return dump(self._name_checkpoint(inp.runId, step, ref, made_from, exact=True))

    def _shape_of(self, ref: BlobRef) -> ModelConfig:
        if ref.kind == TS_KIND:
            c = decode_checkpoint(self.store.get(ref)).config
            return ModelConfig(dModel=c.dModel, nLayers=c.nLayers, nHeads=c.nHeads, dFf=c.dFf, maxSeq=c.maxSeq)
        from transformers import AutoConfig

        m = read_manifest(self.store, ref)
        with tempfile.TemporaryDirectory() as tmp:
            (Path(tmp) / "config.json").write_bytes(self.store.get(BlobRef.from_json(m["files"]["config.json"])))
            return model_shape(AutoConfig.from_pretrained(tmp))

    @activity.defn(name="checkpointFromHf")
    def checkpoint_from_hf(self, raw: dict[str, Any]) -> dict[str, Any]:
        inp: CheckpointFromHfInput = parsed(CheckpointFromHfInput, raw)
        from transformers import AutoConfig, PreTrainedTokenizerFast

        d = Path(inp.dir)
        if not (d / "config.json").is_file():
            raise config_error(f"init.fromHf: {inp.dir} has no config.json (a Hugging Face model directory)")
        try:
            cfg = AutoConfig.from_pretrained(str(d))
        except Exception as err:  # transformers' own message names what it could not read
            raise config_error(f"init.fromHf: {inp.dir}/config.json: {err}") from None
        refuse_other_shape("init.fromHf", inp.model, model_shape(cfg), inp.dir)
        if not (d / "tokenizer.json").is_file():
            raise config_error(f"init.fromHf: {inp.dir} has no tokenizer.json")
        mine = PreTrainedTokenizerFast(tokenizer_file=str(Path(__file__).resolve().parents[2] / "assets" / "tokenizer.json"))
        theirs = PreTrainedTokenizerFast(tokenizer_file=str(d / "tokenizer.json"))
        if mine.encode(TOKENIZER_CHECK, add_special_tokens=False) != theirs.encode(TOKENIZER_CHECK, add_special_tokens=False) or cfg.vocab_size != len(mine.get_vocab()):
            raise config_error(f"init.fromHf: {inp.dir}/tokenizer.json is not the project's tokenizer (assets/tokenizer.json), which the run's prompts and demonstrations are encoded with")
        heartbeat("read")
        weights = sorted(p for p in d.iterdir() if p.is_file() and (p.suffix == ".safetensors" or p.name == "model.safetensors.index.json"))
        if not any(p.suffix == ".safetensors" for p in weights):
            raise config_error(f"init.fromHf: {inp.dir} has no .safetensors weights")
        files = {p.name: self.store.put(p.read_bytes(), "hf-file").to_json() for p in weights}
        files["config.json"] = self.store.put((d / "config.json").read_bytes(), "hf-file").to_json()
        for fname, data in tokenizer_files(max_positions(cfg)).items():
            files[fname] = self.store.put(data, "hf-file").to_json()
        ref = put_json(self.store, {"format": "durable-rl/hf-checkpoint/1", "step": 0, "files": dict(sorted(files.items()))}, MANIFEST_KIND)
        with refuse_other_inputs():
            return dump(self._name_checkpoint(inp.runId, 0, ref, copied_checkpoint_inputs("checkpointFromHf", ref, f"step 0 of {inp.dir}"), exact=True))

    @activity.defn(name="publishWeights")
    def publish_weights(self, raw: dict[str, Any]) -> dict[str, Any]:
        inp: PublishWeightsInput = parsed(PublishWeightsInput, raw)
        # The weights alone, made before the claim: a small manifest (a tfjs checkpoint written out first).
        manifest = weights_manifest(self.store, inp.checkpoint)
        mine = put_json(self.store, manifest, MANIFEST_KIND)
        heartbeat("read")
        spec = NamedResultSpec(names.weights(inp.runId, inp.version), f"published weights v{inp.version} of workflow id '{inp.runId}'", publish_inputs(inp.checkpoint), published_before_records(self.store, mine, inp.checkpoint))
        with refuse_other_inputs():
            ref = named_result(self.store, spec, lambda: mine)
        self.store.set_name(names.latest_weights(inp.runId), ref)
        return dump(WeightsInfo(version=inp.version, step=inp.checkpoint.step, hf=ref, lora=True if manifest.get("adapter") else None))


def max_seq(model: torch.nn.Module) -> int:
    from .trainer import hf_model

    return max_positions(hf_model(model).config)


def refuse_other_shape(key: str, want: ModelConfig, found: ModelConfig, where: str) -> None:
    diff = shape_mismatch(want, found)
    if diff:
        raise config_error(f"{key}: {'; '.join(d + ' in ' + where for d in diff)}")
