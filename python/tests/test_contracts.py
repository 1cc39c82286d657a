"""Payloads are parsed strictly: a key the torch worker does not know fails with its name."""
import pytest

from durable_rl_torch.blob_store import BlobRef
from durable_rl_torch.contracts import PayloadError, RlConfig, TrainGrpoInput, dump, parse

REF = {"sha256": "a" * 64, "bytes": 1, "kind": "checkpoint"}


def grpo_input(**rl):
    return {"runId": "r", "checkpoint": {"name": "c", "ref": REF, "step": 3}, "samples": [], "step": 4, "rl": {"learningRate": 3e-5, **rl}}


def test_a_valid_input_parses_and_dumps_back():
    raw = grpo_input()
    raw["rl"]["async"] = {"maxStaleness": 2, "correction": "tis", "isCap": 4}
    inp = parse(TrainGrpoInput, raw)
    assert inp.checkpoint.ref == BlobRef("a" * 64, 1, "checkpoint")
    assert inp.rl.async_ is not None and inp.rl.async_.correction == "tis"
    assert dump(inp)["rl"]["async"] == {"maxStaleness": 2, "correction": "tis", "isCap": 4.0}


@pytest.mark.parametrize(
    "mutate,message",
    [
        (lambda r: r["rl"].update(newKey=1), "input.rl has keys the torch worker does not know: newKey"),
        (lambda r: r.pop("step"), "input.step is required"),
        (lambda r: r["rl"].update(lossAggMode="sum"), "input.rl.lossAggMode is 'sum'"),
        (lambda r: r.update(step="4"), "input.step must be an integer"),
        (lambda r: r["checkpoint"].update(ref={"sha256": "x"}), "input.checkpoint.ref must be a blob reference"),
    ],
)
def test_bad_payloads_name_the_field(mutate, message):
    raw = grpo_input()
    mutate(raw)
    with pytest.raises(PayloadError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse(TrainGrpoInput, raw)


def test_defaults_are_the_schema_defaults():
    rl = parse(RlConfig, {})
    assert (rl.clipEps, rl.dualClipC, rl.lossAggMode, rl.klLossType, rl.ppoEpochs) == (0.2, 3, "token-mean", "low_var_kl", 1)
