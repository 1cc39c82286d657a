"""Named results keyed by what they were made from (named_results.py), on the folder store and the real
S3 server: test/store/named-results.test.ts's cases, with the TypeScript side's messages and records."""
from concurrent.futures import ThreadPoolExecutor

import pytest

from durable_rl_torch.blob_store import BlobRef, get_json, put_json
from durable_rl_torch.js_json import js_json, js_number
from durable_rl_torch.named_results import (
    InputDifference,
    NamedResultConflictError,
    NamedResultSpec,
    claim_named_result,
    json_digest,
    made_from_name,
    named_result,
    once_by_name,
)

NAME = "runs/F2/weights/v000000"


def spec(checkpoint: str, **extra) -> NamedResultSpec:
    return NamedResultSpec(NAME, "published weights v0 of workflow id 'F2'", {"checkpoint": checkpoint, "config": "c1"}, **extra)


def test_computes_once_for_the_same_inputs(any_store):
    calls = []

    def compute():
        calls.append(1)
        return {"attempt": len(calls)}

    assert once_by_name(any_store, spec("a (step 202)"), "sft-chunk", compute) == {"attempt": 1}
    assert once_by_name(any_store, spec("a (step 202)"), "sft-chunk", compute) == {"attempt": 1}
    # The same inputs listed in another order are the same inputs.
    reordered = NamedResultSpec(NAME, "w", {"config": "c1", "checkpoint": "a (step 202)"})
    assert once_by_name(any_store, reordered, "sft-chunk", compute) == {"attempt": 1}
    assert calls == [1]
    with ThreadPoolExecutor(3) as pool:
        raced = list(pool.map(lambda _: once_by_name(any_store, NamedResultSpec("x/y", "w", {"checkpoint": "b"}), "k", compute), range(3)))
    assert len({r["attempt"] for r in raced}) == 1


def test_refuses_other_inputs_naming_each_difference_and_leaves_the_result(any_store):
    first = named_result(any_store, spec("a (step 202)"), lambda: put_json(any_store, "v0 of step 202", "onnx"))
    with pytest.raises(NamedResultConflictError) as err:
        named_result(any_store, spec("b (step 208)"), lambda: put_json(any_store, "v0 of step 208", "onnx"))
    assert str(err.value) == "published weights v0 of workflow id 'F2' (runs/F2/weights/v000000) came from checkpoint a (step 202); this start's checkpoint is b (step 208)"
    assert err.value.differences == [InputDifference("checkpoint", "a (step 202)", "b (step 208)")]
    assert any_store.get_name(NAME) == first
    # An input one side lacks differs too.
    with pytest.raises(NamedResultConflictError) as err:
        named_result(any_store, NamedResultSpec(NAME, "w", {"checkpoint": "a (step 202)"}), lambda: put_json(any_store, "x", "onnx"))
    assert err.value.differences == [InputDifference("config", "c1", "(none)")]
    # The record lives outside the run's names, in the TypeScript side's layout.
    assert any_store.list_names("runs/F2/weights/v") == [NAME]
    record = any_store.get_name(made_from_name(NAME))
    assert record is not None and record.kind == "made-from"
    assert any_store.get(record) == b'{"version":1,"name":"runs/F2/weights/v000000","madeFrom":{"checkpoint":"a (step 202)","config":"c1"}}'


def test_refuses_other_inputs_once_claimed_before_the_result_exists(any_store):
    assert claim_named_result(any_store, spec("a (step 202)")) is None
    with pytest.raises(NamedResultConflictError):
        claim_named_result(any_store, spec("b (step 208)"))
    # The attempt with the recorded inputs completes it.
    made = named_result(any_store, spec("a (step 202)"), lambda: put_json(any_store, "v0 of step 202", "onnx"))
    assert get_json(any_store, made) == "v0 of step 202"


def test_of_attempts_racing_with_other_inputs_exactly_one_makes_the_result(any_store):
    def attempt(c: str):
        try:
            return named_result(any_store, spec(c), lambda: put_json(any_store, f"from {c}", "onnx"))
        except NamedResultConflictError as err:
            return err

    with ThreadPoolExecutor(4) as pool:
        outcomes = list(pool.map(attempt, "abcd"))
    made = [o for o in outcomes if isinstance(o, BlobRef)]
    assert len(made) == 1 and all(isinstance(o, NamedResultConflictError) for o in outcomes if o not in made)
    assert any_store.get_name(NAME) == made[0]


def test_adopts_a_name_written_before_records_unless_the_check_refuses_it(any_store):
    legacy = put_json(any_store, "v0 of step 202", "onnx")
    any_store.name_if_absent(NAME, legacy)
    stale = spec("b (step 208)", check_unrecorded=lambda _: "was exported from step 202; this start's checkpoint is b (step 208)")
    with pytest.raises(NamedResultConflictError, match=r"^published weights v0 of workflow id 'F2' \(runs/F2/weights/v000000\) was exported from step 202; this start's checkpoint is b \(step 208\)$"):
        named_result(any_store, stale, lambda: put_json(any_store, "x", "onnx"))
    # Refused without writing a record: the next attempt is judged afresh.
    assert any_store.get_name(made_from_name(NAME)) is None
    made = []
    check = lambda ref: None if get_json(any_store, ref) == "v0 of step 202" else "was made otherwise"
    adopted = named_result(any_store, spec("a (step 202)", check_unrecorded=check), lambda: made.append(1) or put_json(any_store, "x", "onnx"))
    assert adopted == legacy and made == []
    # Adopted for those inputs: from now on other inputs are refused by the record.
    with pytest.raises(NamedResultConflictError) as err:
        named_result(any_store, spec("c (step 210)"), lambda: put_json(any_store, "x", "onnx"))
    assert err.value.differences == [InputDifference("checkpoint", "a (step 202)", "c (step 210)")]


def test_json_digest_is_the_typescript_json_digest():
    # Computed with dist/src/store/named-results.js jsonDigest on the same values (JSON.stringify's text).
    section = {"learningRate": 1e-5, "clipEps": 0.2, "microBatch": {"rows": 16, "byLength": False}, "isCap": 1e21, "tiny": 1.5e-7, "2": "é\n\x01\ud800"}
    assert js_json(section) == '{"2":"é\\n\\u0001\\ud800","learningRate":0.00001,"clipEps":0.2,"microBatch":{"rows":16,"byLength":false},"isCap":1e+21,"tiny":1.5e-7}'
    assert json_digest(section) == "3da80102975dc3a7df185587fd1b0a12bf660ef187297791508d8c13c1b14d1a"
    assert json_digest(None) == "74234e98afe7498fb5daf1f36ac2d78acc339464f950703b8c019892f982b90b"
    model = {"dModel": 32, "nLayers": 1, "nHeads": 2, "dFf": 64, "maxSeq": 192, "arch": "gpt2"}
    assert json_digest(model) == "e682a03861ce5c601c9328eecfd770c4653c95b32067361a38c84df3a0338be4"


@pytest.mark.parametrize(
    "x,text",
    [(0.0, "0"), (-0.0, "0"), (1.0, "1"), (32.0, "32"), (5e-4, "0.0005"), (1e-6, "0.000001"), (1e-7, "1e-7"), (-2.5e-8, "-2.5e-8"),
     (1e20, "100000000000000000000"), (1e21, "1e+21"), (123.456, "123.456"), (0.1 + 0.2, "0.30000000000000004"), (2**60, "1152921504606847000")],
)
def test_numbers_are_written_as_javascript_writes_them(x, text):
    assert js_number(x) == text
