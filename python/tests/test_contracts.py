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


# ---- every payload dataclass survives dump then parse ----

import dataclasses  # noqa: E402
import inspect  # noqa: E402
import types  # noqa: E402
import typing  # noqa: E402

from durable_rl_torch import contracts  # noqa: E402

DATACLASSES = [cls for _, cls in inspect.getmembers(contracts, dataclasses.is_dataclass) if cls.__module__ == contracts.__name__]
# Enough variants that every literal value of every field appears in one.
VARIANTS = max(len(typing.get_args(t)) for cls in DATACLASSES for t in typing.get_type_hints(cls).values() if typing.get_origin(t) is typing.Literal)


def example(tp, variant: int, full: bool):
    """A value of `tp`: `variant` picks among literal values; `full` sets every optional field, else none."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        return example(next(a for a in args if a is not type(None)), variant, full)
    if origin is typing.Literal:
        return args[variant % len(args)]
    if origin is list:
        return [example(args[0], variant, full), example(args[0], variant + 1, full)]
    if origin is dict:
        return {"a": example(args[1], variant, full)}
    if tp is BlobRef:
        return BlobRef("ab" * 32, 10 + variant, "checkpoint")
    if dataclasses.is_dataclass(tp):
        hints = typing.get_type_hints(tp)
        kwargs = {}
        for i, f in enumerate(dataclasses.fields(tp)):
            required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
            if required or full:
                kwargs[f.name] = example(hints[f.name], variant + i, full)
        return tp(**kwargs)
    return {int: 3 + variant, float: 0.25 + variant, str: f"s{variant}", bool: variant % 2 == 0}[tp]


@pytest.mark.parametrize("cls", DATACLASSES, ids=lambda c: c.__name__)
def test_every_contract_dataclass_round_trips(cls):
    assert len(DATACLASSES) >= 20
    for full in (True, False):
        for variant in range(VARIANTS):
            x = example(cls, variant, full)
            assert parse(cls, dump(x)) == x, f"{cls.__name__} variant {variant} full={full}: {dump(x)}"
