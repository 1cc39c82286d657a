"""Named results keyed by what they were made from: the port of src/store/named-results.ts (issue 36).

A name such as runs/<id>/weights/v000000 says where a result is, not what it was made from. So each
named result has a record beside it, `made-from/<name>` ({"version": 1, "name", "madeFrom"}: labelled
inputs, each a short text), written create-only before the result, and is read and written only
through claim_named_result / named_result / once_by_name:
 - the same inputs reuse the result (a retried attempt finds its own; a re-run of the same config
   under the same workflow id reuses what was finished);
 - other inputs are refused (NamedResultConflictError) whether the result exists yet or not, naming
   each input that differs;
 - a name without a record was written by the code before records: it is adopted as made from the
   inputs of the first attempt that finds it, after the caller's check of the result where possible.
Records, messages and digests are the TypeScript side's, byte for byte, so either worker reads the
other's records and a refusal reads the same whichever trainer made it.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Optional, Union

from .blob_store import BlobRef, BlobStore, get_json, put_json
from .js_json import js_json

# What a result was made from: labelled inputs, each a short text (a content address, a digest, a number).
MadeFrom = Mapping[str, str]


@dataclass(frozen=True)
class NamedResultSpec:
    name: str
    # The result in words, for errors, e.g. "published weights v0 of workflow id 'F2'".
    what: str
    made_from: MadeFrom
    # A result written before records existed: why it cannot have been made from made_from, or None to adopt it.
    check_unrecorded: Optional[Callable[[BlobRef], Optional[str]]] = None


@dataclass(frozen=True)
class InputDifference:
    """How one input differs between the record and this attempt ("(none)" where one side lacks it)."""

    input: str
    recorded: str
    requested: str

    def to_json(self) -> dict[str, str]:
        return {"input": self.input, "recorded": self.recorded, "requested": self.requested}


class NamedResultConflictError(Exception):
    """A named result that was (or is being) made from other inputs than this attempt's."""

    def __init__(self, result_name: str, what: str, differences: Union[list[InputDifference], str]):
        self.result_name = result_name
        self.what = what
        # Input by input, or why a result written before records cannot be this attempt's.
        self.differences = differences
        if isinstance(differences, str):
            message = f"{what} ({result_name}) {differences}"
        else:
            came = ", ".join(f"{d.input} {d.recorded}" for d in differences)
            wants = ", ".join(f"{d.input} is {d.requested}" for d in differences)
            message = f"{what} ({result_name}) came from {came}; this start's {wants}"
        super().__init__(message)

    def differences_json(self) -> Union[list[dict[str, str]], str]:
        return self.differences if isinstance(self.differences, str) else [d.to_json() for d in self.differences]


def made_from_name(name: str) -> str:
    """Where the record of what `name`'s result was made from sits: outside runs/, so no listing of a run's names meets it."""
    return f"made-from/{name}"


def json_digest(value: Any) -> str:
    """jsonDigest: the sha256 of JSON.stringify(value ?? null), so a config section digests the same in both workers."""
    return hashlib.sha256(js_json(value).encode("utf8")).hexdigest()


def claim_named_result(store: BlobStore, spec: NamedResultSpec) -> Optional[BlobRef]:
    """Claims spec.name for a result made from spec.made_from: the result already named (same inputs, or
    adopted from before records), or None when there is none yet and this attempt may make it."""
    record_name = made_from_name(spec.name)
    mine = put_json(store, {"version": 1, "name": spec.name, "madeFrom": dict(spec.made_from)}, "made-from")
    held = store.get_name(record_name)
    if held is None:
        unrecorded = store.get_name(spec.name)
        why = spec.check_unrecorded(unrecorded) if unrecorded is not None and spec.check_unrecorded else None
        if why:
            raise NamedResultConflictError(spec.name, spec.what, why)
        held = store.name_if_absent(record_name, mine)
    if held.sha256 != mine.sha256:
        differences = _compare_inputs(get_json(store, held)["madeFrom"], spec.made_from)
        if differences:
            raise NamedResultConflictError(spec.name, spec.what, differences)
    return store.get_name(spec.name)


def named_result(store: BlobStore, spec: NamedResultSpec, make: Callable[[], BlobRef]) -> BlobRef:
    """The result named spec.name made from spec.made_from: an earlier attempt's, else make()'s, named
    (the first writer's when attempts race). Raises NamedResultConflictError for other inputs."""
    done = claim_named_result(store, spec)
    if done is not None:
        return done
    return store.name_if_absent(spec.name, make())


def once_by_name(store: BlobStore, spec: NamedResultSpec, kind: str, compute: Callable[[], Any]) -> Any:
    """Exactly-once JSON results for retried activities, keyed by their inputs: the value an earlier
    attempt made from the same inputs, else compute()'s, stored and named (the first writer's if two
    race). Whatever compute writes must itself be idempotent (content-addressed blobs, create-only names)."""
    done = claim_named_result(store, spec)
    if done is not None:
        return get_json(store, done)
    value = compute()
    mine = put_json(store, value, kind)
    stored = store.name_if_absent(spec.name, mine)
    return value if stored.sha256 == mine.sha256 else get_json(store, stored)


def _compare_inputs(recorded: Mapping[str, str], requested: MadeFrom) -> list[InputDifference]:
    inputs = list(dict.fromkeys([*recorded, *requested]))
    return [
        InputDifference(k, recorded.get(k, "(none)"), requested.get(k, "(none)"))
        for k in inputs
        if recorded.get(k) != requested.get(k)
    ]
