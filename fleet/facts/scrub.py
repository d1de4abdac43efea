"""Keep secrets out of facts records and output: raw probe text, progress lines and error messages can echo
anything a host printed (an HF_TOKEN in an env dump, a token inside a repository URL)."""

from __future__ import annotations

import functools
import json
import math
import re

MASK = "***"

# Every pattern below costs time linear in the text it reads (issue 49: a pod's 24 KB PRETTY_NAME of "token-" made
# the old ones cubic; bench/scrub_cost.py times doubling inputs, tests/unit/test_scrub_linear.py counts the steps):
# - a run of name characters is read from its START only ((?<![\w.-])), never again from inside it, and consumed
#   whole without backtracking (possessive *+ / ++, atomic (?>...)): a name always ends where its run ends, since
#   every separator that may follow (= : " ' space) is outside the run;
# - a match that has begun always ends at a bound (an unterminated quote masks to the end of its line, a key block
#   with no END masks to the end of the text), so no later start reads the same characters again.

# Names that say "secret": HF_TOKEN, RUNPOD_API_KEY, DB_PASSWORD, SMTP_PASS, SSH_PRIVATE_KEY, ...
# `pass` alone only where it ends the name (DB_PASS), so "passed": true in a verify record survives.
_KEYWORD = (r"token|passw(?:or)?d|passphrase|secret|api[_-]?key|access[_-]?key|private[_-]?key"
            r"|credential|authorization")
_NAME = rf"(?<![\w.-])(?:(?=[\w.-]*?(?:{_KEYWORD}))[\w.-]++|[\w.-]*+(?<=[_.-]pass)|pass)"
# A value: a quoted string (multi-word values included; unterminated: to the end of its line) or one unquoted word.
_VALUE = r"\"(?:[^\"\\\n]|\\.)*+\"?|'[^'\n]*+'?|[^\s\"',;]++"

_PATTERNS = [
    re.compile(r"(?i)(\bBearer\s++)([\w.~+/-]++=*+)"),
    # NAME=value, "name": "value", name: value where the name says secret (HF_TOKEN=..., "password": ...);
    # a bare "name:value" is left alone so PATH-like lists (/opt/tokenizers/bin:/usr/bin) survive
    re.compile(rf"(?i)({_NAME}(?:[\"']?\s*+=|[\"']\s*+:|:\s)\s*+)({_VALUE})"),
    # credentials inside a URL: https://user:pass@host/ ...
    re.compile(r"(://[^/\s:@]++:)([^@\s/]++)(@)"),
    # ... and a bare token as the user part of an http(s) URL: https://ghp_xxx@github.com/org/repo
    re.compile(r"(?i)(\bhttps?://)([^/\s:@]++)(@)"),
    # a JWT: from the first "eyJ" at a word start in its run of [\w-] (a later one in the same run has fewer
    # characters before the same dot, so it cannot match where the first did not)
    re.compile(r"(?<![\w-])(?>([\w-]*?)(?<!\w)(?=eyJ))(eyJ[\w-]{10,}+\.[\w-]{10,}+\.[\w-]{10,}+)"),
    # well-known token shapes: GitHub, Hugging Face, OpenAI-style, Slack, AWS access keys
    re.compile(r"()\b(gh[pousr]_[A-Za-z0-9]{20,}+|github_pat_\w{20,}+|hf_[A-Za-z0-9]{20,}+|sk-[A-Za-z0-9_-]{20,}+"
               r"|xox[abpr]-[A-Za-z0-9-]{10,}+|AKIA[0-9A-Z]{16})"),
    # private key blocks (one cut short, with no END line, to the end of the text)
    re.compile(r"(-----BEGIN [A-Z ]*PRIVATE KEY-----)([\s\S]*?)(-----END [A-Z ]*PRIVATE KEY-----|\Z)"),
]


# Every pattern above needs one of these in the text: the word a NAME must hold (token, pass..., secret, ...key,
# credential, authorization), "bearer", a URL's "://", a token shape's prefix, or a key block's "KEY". A text
# with none of them has nothing to mask, which is most of a facts record (paths, versions, package names).
_MAYBE = re.compile(r"(?i)token|pass|secret|key|credential|authorization|bearer|://|gh[pousr]_|github_pat_|hf_|sk-"
                    r"|xox[abpr]-|AKIA|eyJ")


def scrub_text(text: str) -> str:
    """Mask what looks like a secret: "HF_TOKEN=hf_abc..." -> "HF_TOKEN=***"; GPU UUIDs and paths survive."""
    if len(text) <= _CACHED_LENGTH:
        return _scrub_short(text)
    return _scrub_checked(text)


def _scrub_checked(text: str) -> str:
    return _scrub_all(text) if _maybe(text) else text


# _MAYBE's alternatives as plain lower-case words: in an ASCII text, a case-insensitive match of one is that word in
# the text's lower case, which `in` finds far faster than the pattern's search (0.13 ms for a 1 KB verify reason,
# read twice a host at every run; issue 46). A text with any other character is searched by the pattern itself.
_MAYBE_WORDS = ("token", "pass", "secret", "key", "credential", "authorization", "bearer", "://", "ghp_", "gho_",
                "ghu_", "ghs_", "ghr_", "github_pat_", "hf_", "sk-", "xoxa-", "xoxb-", "xoxp-", "xoxr-", "akia", "eyj")


def _maybe(text: str) -> bool:
    if text.isascii():
        lower = text.lower()
        return any(word in lower for word in _MAYBE_WORDS)
    return _MAYBE.search(text) is not None


def _scrub_all(text: str) -> str:
    for pattern in _PATTERNS:
        text = pattern.sub(_masker(pattern), text)
    return text


# Hosts of one fleet repeat the same strings (reasons, paths, versions, package lists): each distinct short one
# is looked at once per run, not once per host. Bounded: at most 16,384 texts of 512 characters (8 MB).
_CACHED_LENGTH = 512
_scrub_short = functools.lru_cache(maxsize=16384)(_scrub_checked)


def _masker(pattern: re.Pattern):
    groups = pattern.groups

    def mask(match: re.Match) -> str:
        if groups == 3:
            return match[1] + MASK + match[3]
        value = match[2]
        if len(value) >= 2 and value[0] in "\"'" and value[-1] == value[0]:
            return match[1] + value[0] + MASK + value[0]   # a quoted value stays quoted
        return match[1] + MASK
    return mask


def scrub(value):
    """Scrub every string inside a JSON-like value (dicts, lists); keys are kept as they are."""
    if isinstance(value, str):
        return scrub_text(value)
    if isinstance(value, dict):
        return {key: scrub(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [scrub(item) for item in value]
    return value


class Scrubbed(dict):
    """A report that `scrubbed` has made: every string masked, every number finite, every value JSON's own. The run's
    sinks (fleet/record/sinks.py) are handed one, made once per host, so each sink's own `scrubbed` is a no-op: three
    sinks each walking a 26 KB record cost the controller ~3 ms a host at 1,000 hosts (issue 46)."""


def scrubbed(report: dict) -> Scrubbed:
    """The report as JSON writes it (`json.loads(json.dumps(report, default=str))`: tuples as lists, keys as strings,
    any other object as its str), with every string scrubbed and every NaN or Infinity null, in one walk."""
    return report if isinstance(report, Scrubbed) else Scrubbed(_clean(report if isinstance(report, dict) else {}))


def _clean(value):
    """What `scrubbed` makes of one value. The exact JSON types first, each string scrubbed here without a further
    call (a 30 KB apply report is ~1,300 values: 0.32 -> 0.27 ms, issue 46); anything else through _clean_any."""
    kind = type(value)
    if kind is str:
        return _scrub_short(value) if len(value) <= _CACHED_LENGTH else _scrub_checked(value)
    if kind is dict:
        return {key if type(key) is str or isinstance(key, str) else _key(key):
                (_scrub_short(item) if len(item) <= _CACHED_LENGTH else _scrub_checked(item)) if type(item) is str
                else _clean(item) for key, item in value.items()}
    if kind is list:
        return [(_scrub_short(item) if len(item) <= _CACHED_LENGTH else _scrub_checked(item)) if type(item) is str
                else _clean(item) for item in value]
    if value is None or kind is bool or kind is int:
        return value
    return _clean_any(value)


def _clean_any(value):
    if isinstance(value, str):
        return scrub_text(value)
    if value is None or isinstance(value, (bool, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key if isinstance(key, str) else _key(key): _clean(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(item) for item in value]
    return scrub_text(str(value))


def _key(key) -> str:
    """A dict key as json.dumps writes a key that is no string (1 -> "1", True -> "true", None -> "null")."""
    if key is None or isinstance(key, (bool, int, float)):
        return json.dumps(key)
    return str(key)
