"""JSON from hosts in, JSON out: every number finite (issue 49: one pod's NaN made the whole fleet's --json invalid).

A host's JSON may say NaN, Infinity or 1e999, which Python's json reads as floats and writes back as bare NaN and
Infinity: no JSON parser (jq, JavaScript, Go) accepts those. What a host sends is read with `loads` (those become
null) and every parsed fact passes `finite`; every writer uses `dumps`, which refuses a non-finite number rather
than write a document nobody can read.
"""

from __future__ import annotations

import json
import math
import re


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


def _unwritable(value):
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


try:   # json's own C encoder, as json.dumps(allow_nan=False, separators=(", ", ": ")) makes it
    _C_ENCODER = json.encoder.c_make_encoder(None, _unwritable, json.encoder.encode_basestring_ascii, None, ": ",
                                             ", ", False, False, False)
except (AttributeError, TypeError):   # a Python without _json
    _C_ENCODER = None


def _one_line(value) -> str:
    if isinstance(value, str):
        return json.encoder.encode_basestring_ascii(value)
    if _C_ENCODER is None:
        return json.dumps(value, allow_nan=False, separators=(", ", ": "))
    return "".join(_C_ENCODER(value, 0))


OPEN_LEVELS = 3   # a readable document's levels laid a line per item (a facts record: sections, keys, their parts)


def readable(value) -> str:
    """`value` as JSON for people to read and grep: the top OPEN_LEVELS levels a line per item, indented two spaces a
    level, each value below them on its one line ({"path": "/", "free_gb": 65.7}); what json.loads reads back is
    what `dumps` writes (NaN refused, ASCII only). The lines are written by json's C encoder: json.dumps(indent=2)
    runs the pure-Python one, twice this layout's cost on a facts record, written per host at every run (issue 46)."""
    parts: list[str] = []
    _lay(value, "", OPEN_LEVELS, parts)
    return "".join(parts)


def _lay(value, indent: str, open_levels: int, parts: list[str]) -> None:
    if not open_levels or not value or not isinstance(value, (dict, list, tuple)):
        parts.append(_one_line(value))
        return
    inner, closing = indent + "  ", "\n" + indent + ("}" if isinstance(value, dict) else "]")
    parts.append("{" if isinstance(value, dict) else "[")
    if isinstance(value, dict):
        for number, (key, item) in enumerate(value.items()):
            parts.append((",\n" if number else "\n") + inner + (
                _one_line(key) if isinstance(key, str) else _one_line({key: 0})[1:-4]) + ": ")
            _lay(item, inner, open_levels - 1, parts)
    else:
        for number, item in enumerate(value):
            parts.append(",\n" + inner if number else "\n" + inner)
            _lay(item, inner, open_levels - 1, parts)
    parts.append(closing)


def document(text: str):
    """A user's JSON file (a facts record) as json.loads reads it, except that one nested deeper than Python's
    recursion allows (100,000 `[`) is a JSONDecodeError at the bracket where it got too deep, not a RecursionError."""
    if isinstance(text, bytes):
        text = text.decode("utf-8")
    try:
        return json.loads(text)
    except RecursionError:
        at = too_deep_at(text)
        raise json.JSONDecodeError(f"nested more than {DEPTH} levels deep (a facts record nests about 8)", text,
                                   at if at is not None else 0) from None


DEPTH = 200   # what a readable document may nest; JSON and YAML flow brackets alike
_TOKENS = re.compile(r'"(?:[^"\\\n]|\\.)*"|\'[^\'\n]*\'|[\[\]{}]')


def too_deep_at(text: str, limit: int = DEPTH) -> int | None:
    """The offset of the first bracket ([ or {, outside quotes) that opens more than `limit` levels, or None."""
    depth = 0
    for match in _TOKENS.finditer(text):
        token = match[0]
        if token in "[{":
            depth += 1
            if depth > limit:
                return match.start()
        elif token in "]}":
            depth = max(depth - 1, 0)
    return None
