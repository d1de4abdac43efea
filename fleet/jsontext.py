"""JSON from hosts in, JSON out: every number finite (issue 49: one pod's NaN made the whole fleet's --json invalid).

A host's JSON may say NaN, Infinity or 1e999, which Python's json reads as floats and writes back as bare NaN and
Infinity: no JSON parser (jq, JavaScript, Go) accepts those. What a host sends is read with `loads` (those become
null) and every parsed fact passes `finite`; every writer uses `dumps`, which refuses a non-finite number rather
than write a document nobody can read.
"""

from __future__ import annotations

import json
import math


def _finite_float(text: str) -> float | None:
    value = float(text)
    return value if math.isfinite(value) else None


def loads(text: str):
    """json.loads where NaN, Infinity, -Infinity and numbers too big for a float (1e999) read as None."""
    return json.loads(text, parse_constant=lambda name: None, parse_float=_finite_float)


def finite(value):
    """The value with every non-finite float inside it (dicts, lists, tuples) replaced by None."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: finite(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(item) for item in value]
    return value


def dumps(value, **kwargs) -> str:
    """json.dumps that refuses NaN and Infinity (allow_nan=False): what it writes every JSON reader reads."""
    return json.dumps(value, allow_nan=False, **kwargs)
