"""Issue 36 item 1 on the torch worker's activities, called as plain functions on both stores: a run
started again under its workflow id after its init.fromRun source trained further is refused with a
ConfigError naming the id, the result and what differs; with the same inputs it reuses what it made;
names written before made-from records are adopted only where they are what this start makes."""
from typing import Any

import pytest
from temporalio.exceptions import ApplicationError

from durable_rl_torch import names
from durable_rl_torch.activities import TrainingActivities
from durable_rl_torch.blob_store import BlobRef, BlobStore, get_json, put_json
from durable_rl_torch.checkpoints import MANIFEST_KIND, Policy, store_policy
from durable_rl_torch.contracts import ModelConfig
from durable_rl_torch.models import hf_config, new_model
from durable_rl_torch.named_results import made_from_name

from helpers import rollout

MODEL = {"dModel": 32, "nLayers": 1, "nHeads": 2, "dFf": 64, "maxSeq": 64}
RL = {"learningRate": 1e-3, "ppoEpochs": 1, "miniBatches": 1}


def source_at(store: BlobStore, step: int) -> BlobRef:
    """The source run's checkpoint at `step` (other weights at every step, as training makes them)."""
    ref = store_policy(store, Policy(new_model(hf_config(ModelConfig(**MODEL)), seed=step), step, None))
    return store.name_if_absent(names.checkpoint("src", step), ref)


def refusal(call: Any) -> ApplicationError:
    with pytest.raises(ApplicationError) as err:
        call()
    assert err.value.type == "ConfigError" and err.value.non_retryable
    assert err.value.message.endswith(": a workflow id's results are kept for the inputs they were made from; start this one under another workflow id")
    return err.value


def start(acts: TrainingActivities, store: BlobStore, rl: dict[str, Any] = RL) -> dict[str, Any]:
    """A trainingRun 'dep' with init.fromRun 'src' (RL only): copy the source's latest, publish v0, one RL step."""
    ckpt = acts.checkpoint_from_run({"runId": "dep", "fromRun": "src", "model": MODEL})
    weights = acts.publish_weights({"runId": "dep", "checkpoint": ckpt, "version": 0})
    samples = put_json(store, {"samples": rollout(vocab=200)}, "samples")
    sets = [{"role": "planner", "ref": samples.to_json(), "samples": 6, "responseTokens": 0, "meanReward": 0}]
    step = acts.train_grpo({"runId": "dep", "checkpoint": ckpt, "samples": sets, "step": ckpt["step"] + 1, "rl": rl, "resetOptimizer": True})
    return {"checkpoint": ckpt, "weights": weights, "step": step}


def test_a_start_after_the_source_trained_further_is_refused_and_the_same_inputs_reuse(any_store):
    acts = TrainingActivities(any_store)
    at2 = source_at(any_store, 2)
    first = start(acts, any_store)
    assert first["checkpoint"]["ref"] == at2.to_json() and first["step"]["checkpoint"]["step"] == 3
    # Started again with the same inputs: the same results, the update not trained again.
    assert start(TrainingActivities(any_store), any_store) == first
    # Another rl config for the same step: refused, naming it.
    err = refusal(lambda: start(acts, any_store, {**RL, "learningRate": 2e-3}))
    assert f"RL step 3 of workflow id 'dep' ({names.rl_step('dep', 3)}) came from rl config " in err.message
    assert err.details[0]["differences"][0]["input"] == "rl config"

    # The source trains on to step 4: the copy resolves it, and publishing v0 from it is refused.
    at4 = source_at(any_store, 4)
    published = any_store.get_name(names.weights("dep", 0))
    err = refusal(lambda: start(acts, any_store))
    assert err.message.startswith(
        f"published weights v0 of workflow id 'dep' ({names.weights('dep', 0)}) came from checkpoint {at2.sha256} (step 2); this start's checkpoint is {at4.sha256} (step 4)"
    )
    assert err.details[0] == {"name": names.weights("dep", 0), "differences": [{"input": "checkpoint", "recorded": f"{at2.sha256} (step 2)", "requested": f"{at4.sha256} (step 4)"}]}
    assert any_store.get_name(names.weights("dep", 0)) == published
    # The records are the TypeScript side's, with the torch backend among the inputs.
    record = get_json(any_store, any_store.get_name(made_from_name(names.checkpoint("dep", 4))))
    assert record == {
        "version": 1,
        "name": names.checkpoint("dep", 4),
        "madeFrom": {"activity": "checkpointFromRun", "backend": "torch", "checkpoint": f"{at4.sha256} (step 4 of workflow id 'src')"},
    }


def test_names_written_before_records_are_adopted_only_if_they_are_what_this_start_makes(any_store):
    acts = TrainingActivities(any_store)
    at2, at4 = source_at(any_store, 2), source_at(any_store, 4)
    # Written by the code before records: the copy of step 2 and its published weights.
    any_store.name_if_absent(names.checkpoint("dep", 2), at2)
    legacy = put_json(any_store, {k: v for k, v in get_json(any_store, at2).items() if k != "optimizer"}, MANIFEST_KIND)
    any_store.name_if_absent(names.weights("dep", 0), legacy)
    ckpt4 = acts.checkpoint_from_run({"runId": "dep", "fromRun": "src", "model": MODEL})
    err = refusal(lambda: acts.publish_weights({"runId": "dep", "checkpoint": ckpt4, "version": 0}))
    assert f"({names.weights('dep', 0)}) was exported from a checkpoint of step 2 (its manifest; published before made-from records); this start's checkpoint is {at4.sha256} (step 4)" in err.message
    # The copy of step 2 is the same blob this start makes: adopted, and so are its weights.
    ckpt2 = acts.checkpoint_from_run({"runId": "dep", "fromRun": "src", "model": MODEL, "step": 2})
    assert ckpt2["ref"] == at2.to_json()
    assert acts.publish_weights({"runId": "dep", "checkpoint": ckpt2, "version": 0})["hf"] == legacy.to_json()
    # A checkpoint name holding another blob than the copy is refused.
    any_store.name_if_absent(names.checkpoint("dep2", 4), at2)
    err = refusal(lambda: acts.checkpoint_from_run({"runId": "dep2", "fromRun": "src", "model": MODEL}))
    assert f"holds checkpoint {at2.sha256} (named before made-from records), not {at4.sha256}, which this start's inputs make" in err.message

