"""One parser per kind of input, whatever spelled it: a flag (--wait 30), an environment variable
(FLEET_DEAD_AFTER=60), an inventory variable (verify_timeout: 900) or --set NAME=VALUE.

Each parser takes what YAML or a command line gives (a number, true/false, text) and returns the value, or raises
Rejected: one sentence saying what is wrong and what to write, without the place; the caller knows the place (a
flag's name, $NAME, file:line) and puts it in front. Nothing here knows a host, a role or a variable's name.

    seconds("30") -> 30.0        seconds("nan") -> Rejected        seconds(0, zero=True) -> 0.0
    count("4") -> 4              boolean("off") -> False            share("0.1") -> 0.1
    duration("24h") -> 86400.0   url("http://x", ...) -> Rejected   path("venv") -> Rejected
"""

from __future__ import annotations

import argparse
import math
import os
import re
from typing import Any, Callable, Mapping

from fleet.errors import InputError

# A week: longer than any wait fleet has a use for, and far below what time.sleep, threading's waits and a
# socket's timeout accept (past about 9.2e9 s they raise OverflowError, inf raises, nan never returns).
MAX_SECONDS = 7 * 86400
TRUE_WORDS = ("true", "yes", "on", "1")
FALSE_WORDS = ("false", "no", "off", "0")


class Rejected(ValueError):
    """A value a parser refuses; str() is one sentence with the fix, without where the value came from."""


def boolean(value: Any) -> bool:
    """true/false as YAML writes them, or one of the words (any case): true yes on 1 / false no off 0."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    text = str(value).strip().lower() if isinstance(value, str) else None
    if text in TRUE_WORDS:
        return True
    if text in FALSE_WORDS:
        return False
    raise Rejected(f"{value!r} is not true or false: write true or false (yes/no and on/off are read too)")


def _number(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise Rejected(f"{value!r} is not {what}: write a number such as 30")
    try:
        number = float(value.strip()) if isinstance(value, str) else float(value)
    except (ValueError, OverflowError):
        raise Rejected(f"{value!r} is not {what}: write a number such as 30") from None
    if not math.isfinite(number):
        raise Rejected(f"{value!r} is not {what}: write a finite number such as 30")
    return number


def seconds(value: Any, *, zero: bool = False, least: float = 0.0, most: float = MAX_SECONDS) -> float:
    """A number of seconds above 0 (0 too where `zero`: 'do not wait'), at least `least`, at most `most`."""
    number = _number(value, "a number of seconds")
    if number < 0 or (number == 0 and not zero):
        raise Rejected(f"{value!r} seconds is not {'0 or more' if zero else 'more than 0'}: write e.g. 30")
    if number < least and not (zero and number == 0):
        raise Rejected(f"{value!r} seconds is less than {least:g}: write at least {least:g}")
    if number > most:
        raise Rejected(f"{value!r} seconds is more than {most:g} ({most / 86400:g} days): write at most {most:g}")
    return number


def count(value: Any, *, least: int | None = 1, most: int | None = None) -> int:
    """A whole number from `least` to `most` (None: no bound that side)."""
    text = value.strip() if isinstance(value, str) else value
    if isinstance(text, bool) or not (isinstance(text, int) or (isinstance(text, str) and
                                                                 re.fullmatch(r"[+-]?\d+", text))):
        raise Rejected(f"{value!r} is not a whole number: write one such as {max(least or 1, 1)}")
    number = int(text)
    if (least is not None and number < least) or (most is not None and number > most):
        limit = (f"from {least} to {most}" if least is not None and most is not None
                 else f"at least {least}" if least is not None else f"at most {most}")
        raise Rejected(f"{value!r} is out of range: write a whole number {limit}")
    return number


def number(value: Any, *, least: float | None = None, most: float | None = None) -> float:
    """A finite number within [least, most]."""
    found = _number(value, "a number")
    if (least is not None and found < least) or (most is not None and found > most):
        span = (f"from {least:g} to {most:g}" if least is not None and most is not None
                else f"at least {least:g}" if least is not None else f"at most {most:g}")
        raise Rejected(f"{value!r} is out of range: write a number {span}")
    return found


def share(value: Any) -> float:
    """A fraction from 0 to 1 (0.1: a tenth)."""
    return number(value, least=0.0, most=1.0)


_DURATION = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*")
_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


def duration(value: Any) -> float:
    """'24h', '30m', '2d', '90s' or a number of seconds (0 or more) -> seconds."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return seconds(value, zero=True, most=365 * 86400)
    found = _DURATION.fullmatch(str(value)) if isinstance(value, str) else None
    if not found:
        raise Rejected(f"{value!r} is not a duration: write e.g. 24h, 30m or 2d")
    return seconds(float(found[1]) * _UNITS[found[2]], zero=True, most=365 * 86400)


URL = re.compile(r"^(https?|file)://\S+\Z")
# scp-like git@github.com:o/r, and an absolute path on the host (git clone takes a local repository: a mirror)
GIT_URL = re.compile(r"^((https?|file|ssh|git)://\S+|[\w.-]+@[\w.-]+:\S+|/\S*)\Z")
_PLAIN = re.compile(r"^(http|git)://", re.I)
SYSTEM_DIRS = {"/", "/usr", "/usr/local", "/root", "/etc", "/opt", "/bin", "/sbin", "/lib", "/var", "/home"}


def url(value: Any, *, git: bool = False) -> str:
    """An https:// or file:// URL (git: also ssh://, git@host:path, an absolute path). Plain http:// and git:// are
    refused: what fleet fetches runs or is trusted as root, so anyone on the network path could replace it."""
    text = _text(value, "a URL")
    plain = _PLAIN.match(text)
    if plain:
        raise Rejected(f"{text!r} is plain {plain[1].lower()}://, and what fleet installs from it runs as root, so "
                       f"anyone on the network path could replace it: write https://{text[plain.end():]} (or "
                       "file:///... for a local mirror)")
    if git and not GIT_URL.match(text):
        raise Rejected(f"{text!r} is not a git URL: write https://..., file:///..., git@host:owner/repo.git or an "
                       "absolute path of a repository on the host")
    if not git and not URL.match(text):
        raise Rejected(f"{text!r} is not a URL: write https://... (or file:///... for a local mirror)")
    return text


def store_url(value: Any) -> str:
    """A history store's URL (fleet/store/): sqlite:///PATH or postgresql://..., never with a password (libpq reads
    those from its own files and environment, so none lands in an inventory, an argv or a log)."""
    from urllib.parse import parse_qs, urlsplit

    text = _text(value, "a store URL")
    parts = urlsplit(text)
    if parts.scheme == "sqlite":
        if not parts.path or parts.netloc:
            raise Rejected(f"{text!r} is not a SQLite store URL; write sqlite:///relative/path.db or "
                           "sqlite:////absolute/path.db")
        return text
    if parts.scheme in ("postgresql", "postgres"):
        if parts.password is not None or "password" in parse_qs(parts.query):
            raise Rejected("the store URL carries a password; remove it and put it where libpq reads it: ~/.pgpass "
                           "(or PGPASSFILE), a service file (PGSERVICEFILE, then postgresql://?service=NAME), or "
                           "PGPASSWORD in fleet's environment")
        return text
    raise Rejected(f"{text!r} is not a store URL; write sqlite:///PATH or postgresql://USER@HOST/DB")


def path(value: Any, *, example: str = "/workspace/cache", own_tree: bool = False) -> str:
    """An absolute path on the host, without '..'; `own_tree`: a tree fleet fills as root, never a system
    directory (a venv over /usr/local shadows python3 for every user of the host)."""
    text = _text(value, "a path")
    if not text.startswith("/"):
        raise Rejected(f"{text!r} is a path on the host and must be absolute: write one like {example}")
    if ".." in text.split("/"):
        raise Rejected(f"{text!r} climbs with '..': write the directory it means, like {example}")
    if own_tree and (text.rstrip("/") or "/") in SYSTEM_DIRS:
        raise Rejected(f"{text!r} is a system directory that fleet would fill as root: write a directory of its "
                       f"own, like {example}")
    return text


def gpus(value: Any) -> dict:
    """What a pod was rented as (`expect_gpus`): "8" -> {"count": 8}; "H200" -> {"model": "H200"}; "8x H200" or
    "8 H200" -> both; "" or None -> {} (nothing expected)."""
    text = "" if value is None else str(value).strip()
    if not text:
        return {}
    found = re.fullmatch(r"(?:(\d+)\s*[xX]?\s*)?([A-Za-z][\w .-]*)?", text)
    if not found or not (found[1] or found[2]) or (found[1] and int(found[1]) < 1):
        raise Rejected(f"{text!r} is not a count, a model or both: write e.g. 8, H200 or 8x H200")
    return {k: v for k, v in (("count", int(found[1]) if found[1] else None),
                              ("model", found[2].strip() if found[2] else None)) if v is not None}


def _text(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise Rejected(f"{value!r} is not {what}: write it as text")
    text = value.strip()
    if re.search(r"[\x00-\x1f\x7f]", text):   # a path or URL with a newline splits every line a host answers with
        raise Rejected(f"{text!r} is {what} holding a control character (a newline, a tab): remove it")
    return text


# -- the places a value comes from ---------------------------------------------------------------------------

def flag(parse: Callable[..., Any], **options) -> Callable[[str], Any]:
    """An argparse `type=`: argparse names the flag (`argument --wait: ...`) and exits 2 before anything runs."""
    def parse_flag(text: str):
        try:
            return parse(text, **options)
        except Rejected as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
    parse_flag.__name__ = parse.__name__   # argparse's "invalid <name> value" where a type raises otherwise
    return parse_flag


def from_env(name: str, parse: Callable[..., Any], default: Any, env: Mapping[str, str] | None = None,
             **options) -> Any:
    """$name read by `parse`; unset or empty: `default`. A bad value is an InputError naming the variable."""
    text = (os.environ if env is None else env).get(name, "")
    if not text.strip():
        return default
    try:
        return parse(text, **options)
    except Rejected as exc:
        shown = f" ({default:g})" if isinstance(default, (int, float)) and not isinstance(default, bool) else ""
        raise InputError(f"environment variable {name}={exc}; or unset it for the default{shown}") from None
