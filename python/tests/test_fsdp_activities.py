"""The training activities on two ranks (rank 0 serving, rank 1 following it, as under torchrun):
trainSft then trainGrpo steps, full and then LoRA, give one process's results, checkpoints and Adam
moments (within 1e-5) in the same format, so a run resumes on any number of ranks; an error of the
job's own inputs, or a cancel seen by rank 0's heartbeat, ends the job on every rank alike and the
ranks serve the next job; a follower dying in the middle of an update fails the activity at once,
with the ranks given up."""
import functools
import os
import shutil
import time
from pathlib import Path
from typing import Any, Optional

import torch
from safetensors.torch import load as load_safetensors
from temporalio.exceptions import ApplicationError, CancelledError

from durable_rl_torch import names
from durable_rl_torch.activities import TrainingActivities
from durable_rl_torch.blob_store import BlobRef, FsBlobStore, get_json, put_json
from durable_rl_torch.checkpoints import Policy, store_policy
from durable_rl_torch.contracts import CheckpointInfo, ModelConfig, dump
from durable_rl_torch.models import hf_config, new_model

from fsdp_helpers import run_ranks
from helpers import rollout
from test_fsdp import max_diff, sft_examples

TOLERANCE = 1e-5
MODEL = {"dModel": 32, "nLayers": 2, "nHeads": 2, "dFf": 64, "maxSeq": 64, "arch": "qwen3"}
SFT = {"steps": 4, "batchSize": 4, "learningRate": 1e-3, "warmupSteps": 1, "gradClip": 1.0, "stepsPerActivity": 2}
RL = {"learningRate": 1e-3, "ppoEpochs": 2, "miniBatches": 2, "microBatch": {"rows": 2, "byLength": True}, "clipEpsHigh": 0.28}
LORA = {"backend": "torch", "device": "cpu", "lora": {"rank": 4, "alpha": 8, "targetModules": ["q_proj", "v_proj"]}}


def seed_store(root: Path) -> dict[str, Any]:
    """A starting checkpoint, an SFT dataset and two rollouts in a fresh store; the inputs that read them."""
    store = FsBlobStore(root)
    ref = store_policy(store, Policy(new_model(hf_config(ModelConfig(**MODEL)), seed=1), 0, None))
    start = dump(CheckpointInfo(name=store.name_if_absent(names.checkpoint("run", 0), ref) and names.checkpoint("run", 0), ref=ref, step=0))
    dataset = put_json(store, {"examples": sft_examples(0)}, "sft-dataset")
    sets = []
    for seed in (1, 2):
        samples = put_json(store, {"samples": rollout(groups=3, size=4, seed=seed)}, "samples")
        sets.append([{"role": "planner", "ref": samples.to_json(), "samples": 12, "responseTokens": 0, "meanReward": 0}])
    return {"start": start, "dataset": dataset.to_json(), "sets": sets}


def steps(acts: TrainingActivities, inputs: dict[str, Any]) -> dict[str, Any]:
    """SFT to step 2, two full GRPO steps, then two LoRA steps (a new adapter, then the adapter trained on)."""
    out: dict[str, Any] = {}
    out["sft"] = acts.train_sft({"runId": "run", "checkpoint": inputs["start"], "dataset": inputs["dataset"], "toStep": 2, "sft": SFT, "seed": 3})
    ckpt = out["sft"]["checkpoint"]
    for step, sets in zip((3, 4), inputs["sets"]):
        out[f"grpo{step}"] = acts.train_grpo({"runId": "run", "checkpoint": ckpt, "samples": sets, "step": step, "rl": RL})
        ckpt = out[f"grpo{step}"]["checkpoint"]
    # A job whose input fails on every rank alike: a samples blob that is not in the store.
    missing = {**inputs["sets"][0][0], "ref": {**inputs["sets"][0][0]["ref"], "sha256": "0" * 64}}
    try:
        acts.train_grpo({"runId": "missing", "checkpoint": ckpt, "samples": [missing], "step": 5, "rl": RL})
        out["missing"] = "trained"
    except Exception as err:
        out["missing"] = f"{type(err).__name__}: {err}"
    # A job cancelled in the middle of its update (rank 0's fourth heartbeat raises): every rank stops alike.
    out["cancelled"] = cancelled(acts, {"runId": "cancelled", "checkpoint": ckpt, "samples": inputs["sets"][0], "step": 5, "rl": RL})
    for step, sets in zip((5, 6), inputs["sets"]):
        out[f"lora{step}"] = acts.train_grpo({"runId": "run", "checkpoint": ckpt, "samples": sets, "step": step, "rl": RL, "trainer": LORA, "resetOptimizer": step == 5})
        ckpt = out[f"lora{step}"]["checkpoint"]
    return out


def cancelled(acts: TrainingActivities, raw: dict[str, Any]) -> str:
    import durable_rl_torch.activities as activities

    beats = {"n": 0}
    heartbeat = activities.heartbeat

    def cancelling(details: Any) -> None:
        beats["n"] += 1
        if beats["n"] == 4:
            raise CancelledError("the activity was cancelled")
        heartbeat(details)

    activities.heartbeat = cancelling
    try:
        acts.train_grpo(raw)
        return "trained"
    except CancelledError as err:
        return f"cancelled after {beats['n']} heartbeats: {err}"
    finally:
        activities.heartbeat = heartbeat


def checkpoint_tensors(store: FsBlobStore, info: dict[str, Any]) -> dict[str, Any]:
    """A checkpoint's weights (or adapter) and Adam moments, and its manifest's other entries."""
    manifest = get_json(store, BlobRef.from_json(info["ref"]))
    weights_file = manifest["adapter"]["adapter_model.safetensors"] if "adapter" in manifest else manifest["files"]["model.safetensors"]
    return {
        "weights": load_safetensors(store.get(BlobRef.from_json(weights_file))),
        "moments": load_safetensors(store.get(BlobRef.from_json(manifest["optimizer"]["moments"]))),
        "step": manifest["step"],
        "optimizer": {k: v for k, v in manifest["optimizer"].items() if k != "moments"},
        "files": sorted(manifest["files"]),
        "adapter": sorted(manifest.get("adapter", {})),
    }


def _die_in_update() -> None:
    """Rank 1 ends its process in the middle of the next update (its second micro-batch)."""
    import durable_rl_torch.trainer as trainer

    calls = {"n": 0}
    gradients = trainer._gradients

    def dying(*args: Any, **kwargs: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == 2:
            os._exit(3)
        return gradients(*args, **kwargs)

    trainer._gradients = dying


def ranks_scenario(root: str, world: Any) -> Optional[dict[str, Any]]:
    """Rank 0 serves steps() and then an update rank 1 dies in; rank 1 follows it."""
    store = FsBlobStore(Path(root))
    if not world.leader:
        from durable_rl_torch.worker import WorkerSettings, follow

        settings = WorkerSettings(address="", namespace="", tls=False, api_key=None, store=store, task_queue="")
        acts = TrainingActivities(store, world=world)
        # The jobs of steps(), then the one it dies in.
        for _ in range(7):
            acts.follow(world.receive())
        _die_in_update()
        follow(settings, world)
        return None
    broken = []
    acts = TrainingActivities(store, world=world, on_broken=lambda: broken.append(True))
    inputs = get_json(store, store.get_name("test-inputs"))
    out = steps(acts, inputs)
    started = time.perf_counter()
    try:
        acts.train_grpo({"runId": "die", "checkpoint": out["grpo4"]["checkpoint"], "samples": inputs["sets"][0], "step": 5, "rl": RL})
        out["died"] = "trained"
    except ApplicationError as err:
        out["died"] = {"type": err.type, "message": err.message, "non_retryable": err.non_retryable, "seconds": time.perf_counter() - started, "broken": broken}
    return out


def test_two_ranks_serve_the_activities_as_one_process(tmp_path: Path):
    inputs = seed_store(tmp_path / "ranks")
    store = FsBlobStore(tmp_path / "ranks")
    store.name_if_absent("test-inputs", put_json(store, inputs, "test-inputs"))
    shutil.copytree(tmp_path / "ranks", tmp_path / "one")
    ranks = run_ranks(functools.partial(ranks_scenario, str(tmp_path / "ranks")), tmp_path)
    torch.set_num_threads(2)
    one_store = FsBlobStore(tmp_path / "one")
    one = steps(TrainingActivities(one_store), inputs)
    got = ranks[0]
    assert got is not None and ranks[1] is None

    # The error of the job's inputs, raised on both ranks alike; the ranks went on to the LoRA steps.
    largest = 0.0
    assert got["missing"] == one["missing"] and got["missing"] != "trained"
    assert got["cancelled"] == one["cancelled"] == "cancelled after 4 heartbeats: the activity was cancelled"
    for key in ("sft", "grpo3", "grpo4", "lora5", "lora6"):
        a, b = dict(got[key]), dict(one[key])
        ca, cb = a.pop("checkpoint"), b.pop("checkpoint")
        for n in ("tokensPerSec", "updateSeconds", "paddedTokensRun"):
            a.pop(n, None), b.pop(n, None)
        worst = max(max_diff(a, b) + [("", 0.0)], key=lambda d: d[1])
        assert worst[1] < TOLERANCE, (key, worst)
        assert ca["name"] == cb["name"] and ca["step"] == cb["step"]
        ta, tb = checkpoint_tensors(store, ca), checkpoint_tensors(one_store, cb)
        worst = max(max_diff(ta, tb), key=lambda d: d[1])
        assert worst[1] < TOLERANCE, (key, worst)
        largest = max(largest, worst[1])
    assert got["lora6"]["optimizerSteps"] == 4 and checkpoint_tensors(store, got["lora6"]["checkpoint"])["adapter"] == ["adapter_config.json", "adapter_model.safetensors"]

    # Rank 1 died in the middle of an update: the activity failed at once (retryable), the ranks given up.
    died = got["died"]
    assert died != "trained" and died["type"] == "TrainingRanksFailed" and not died["non_retryable"]
    assert "out of step" in died["message"] and died["broken"] == [True]
    assert died["seconds"] < 30
    print(f"largest checkpoint difference {largest:.3g}; the update a rank died in failed after {died['seconds']:.1f} s")
