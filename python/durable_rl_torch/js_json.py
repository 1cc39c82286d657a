"""JSON text exactly as JavaScript's JSON.stringify writes it, for digests both workers must agree on
(named_results.json_digest is src/store/named-results.ts jsonDigest: the sha256 of that text).

Python's json.dumps differs from it in numbers (1e-05 for 0.00001, 1.0 for 1), in the order of
integer-like keys (JavaScript lists them first, ascending) and in lone surrogates (JavaScript escapes
them); everything else (escapes of quotes, backslashes and control characters) is the same.
"""
from __future__ import annotations

import json
import math
import re
from decimal import Decimal
from typing import Any

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_ARRAY_INDEX = re.compile(r"^(0|[1-9][0-9]*)$")


def js_number(x: float | int) -> str:
    """Number.prototype.toString(): the shortest digits that round-trip (as repr), laid out as ECMAScript does."""
    if isinstance(x, int) and abs(x) < 2**53:
        return str(x)
    x = float(x)
    if not math.isfinite(x):
        return "null"  # JSON.stringify's rendering of NaN and the infinities
    if x == 0:
        return "0"
    if x < 0:
        return "-" + js_number(-x)
    _, digit_tuple, exponent = Decimal(repr(x)).as_tuple()
    assert isinstance(exponent, int)
    n = len(digit_tuple) + exponent  # ECMAScript's n: x is 0.<digits> times 10**n
    digits = "".join(map(str, digit_tuple)).rstrip("0")
    k = len(digits)
    if k <= n <= 21:
        return digits + "0" * (n - k)
    if 0 < n <= 21:
        return f"{digits[:n]}.{digits[n:]}"
    if -6 < n <= 0:
        return "0." + "0" * -n + digits
    e = n - 1
    mantissa = digits if k == 1 else f"{digits[0]}.{digits[1:]}"
    return f"{mantissa}e{'+' if e > 0 else '-'}{abs(e)}"


def _string(s: str) -> str:
    return _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", json.dumps(s, ensure_ascii=False))


def _key_order(keys: list[str]) -> list[str]:
    """Own property order: array indices ascending, then the other keys as inserted."""
    index = [k for k in keys if _ARRAY_INDEX.match(k) and int(k) < 2**32 - 1]
    return sorted(index, key=int) + [k for k in keys if k not in set(index)]


def js_json(value: Any) -> str:
    """JSON.stringify(value) for JSON values (dict, list, str, int, float, bool, None)."""
    if value is None or value is True or value is False:
        return json.dumps(value)
    if isinstance(value, (int, float)):
        return js_number(value)
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(js_json(v) for v in value) + "]"
    if isinstance(value, dict):
        if not all(isinstance(k, str) for k in value):
            raise TypeError("js_json: object keys must be strings")
        return "{" + ",".join(f"{_string(k)}:{js_json(value[k])}" for k in _key_order(list(value))) + "}"
    raise TypeError(f"js_json: {type(value).__name__} is not a JSON value")
