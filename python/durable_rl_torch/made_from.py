"""What each of the torch worker's named results is made from, and the refusal of other inputs: the
madeFrom inputs of activities/training.ts (same labels, texts and digests where the meaning is the
same) and activities/named-results.ts refuseOtherInputs.

Every record the torch worker writes also lists `backend: torch`. The tfjs trainer's records have no
such input, so a tfjs and a torch start under one workflow id never compare equal: their checkpoints
are different formats (and its published weights ONNX, not a manifest), so one must not be handed the
other's result even where the checkpoint it starts from is the same blob (checkpointFromRun copies
the source's). The run-id claim (the config's fingerprint, which holds trainer.*) refuses such a start
before it gets here; the records are the second line.

An RL step's inputs are its checkpoint, reference, config and optimizer reset, not its samples: a
step redone after a resume rolls the same policy out again, whose samples can differ, and reuses the
update that was finished (docs/main-job.md, "Resume a run").
"""
from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterator, Optional

from temporalio.exceptions import ApplicationError

from .blob_store import BlobRef, BlobStore, get_json
from .contracts import CheckpointInfo, InitPolicyInput, TrainGrpoInput, TrainSftInput
from .js_json import js_number
from .named_results import MadeFrom, NamedResultConflictError, json_digest

BACKEND = {"backend": "torch"}


def checkpoint_text(c: CheckpointInfo) -> str:
    """A checkpoint as a record lists it: its content address and step."""
    return f"{c.ref.sha256} (step {c.step})"


# Config sections are digested as sent (`raw`, the payload's JSON), as the tfjs worker digests its input.


def init_policy_inputs(raw: dict[str, Any], inp: InitPolicyInput) -> MadeFrom:
    """A fresh policy: the model section (arch and shape; the tokenizer is the project's) and the seed."""
    return {"activity": "initPolicy", **BACKEND, "model": json_digest(raw["model"]), "seed": js_number(inp.seed)}


def sft_chunk_inputs(raw: dict[str, Any], inp: TrainSftInput) -> MadeFrom:
    """What an SFT chunk (its result and its checkpoint) is made from."""
    return {
        "activity": "trainSft",
        **BACKEND,
        "checkpoint": checkpoint_text(inp.checkpoint),
        "dataset": inp.dataset.sha256,
        "sft config": json_digest(raw["sft"]),
        "seed": js_number(inp.seed),
        "to step": js_number(inp.toStep),
        **({"token budget": js_number(inp.maxTrainedTokens)} if inp.maxTrainedTokens is not None else {}),
    }


def rl_step_inputs(raw: dict[str, Any], inp: TrainGrpoInput) -> MadeFrom:
    """What an RL step (its result and its checkpoint) is made from; see the file's comment for why not its samples."""
    return {
        "activity": "trainGrpo",
        **BACKEND,
        "checkpoint": checkpoint_text(inp.checkpoint),
        "rl config": json_digest(raw["rl"]),
        "reset optimizer": "true" if inp.resetOptimizer else "false",
        "objective": inp.objective or "grpo",
        **({"reference": checkpoint_text(inp.reference)} if inp.reference is not None else {}),
    }


def copied_checkpoint_inputs(activity: str, ref: BlobRef, of: str) -> MadeFrom:
    """A starting checkpoint copied or imported (checkpointFromRun / checkpointFromHf): its content address and origin."""
    return {"activity": activity, **BACKEND, "checkpoint": f"{ref.sha256} ({of})"}


def publish_inputs(checkpoint: CheckpointInfo) -> MadeFrom:
    return {**BACKEND, "checkpoint": checkpoint_text(checkpoint)}


def published_before_records(store: BlobStore, mine: BlobRef, checkpoint: CheckpointInfo) -> Callable[[BlobRef], Optional[str]]:
    """Weights published before made-from records are adopted only if they are `mine`, this checkpoint's."""

    def check(held: BlobRef) -> Optional[str]:
        step = get_json(store, held).get("step")
        if held == mine or step == checkpoint.step:
            return same_bytes(held, mine, "published weights")
        return f"was exported from a checkpoint of step {step} (its manifest; published before made-from records); this start's checkpoint is {checkpoint_text(checkpoint)}"

    return check


def same_bytes(held: BlobRef, mine: BlobRef, kind: str) -> Optional[str]:
    """A result named before made-from records is adopted only if it holds what these inputs make."""
    return None if held.sha256 == mine.sha256 else f"holds {kind} {held.sha256} (named before made-from records), not {mine.sha256}, which this start's inputs make"


@contextlib.contextmanager
def refuse_other_inputs() -> Iterator[None]:
    """A named result made from other inputs is a config problem no retry can fix (a workflow id reused
    for other inputs): a non-retryable ConfigError naming the id, the result and what differs."""
    try:
        yield
    except NamedResultConflictError as err:
        raise ApplicationError(
            f"{err}: a workflow id's results are kept for the inputs they were made from; start this one under another workflow id",
            {"name": err.result_name, "differences": err.differences_json()},
            type="ConfigError",
            non_retryable=True,
        ) from None
