"""Secrets never reach a record."""

import pytest

from fleet.facts.scrub import scrub, scrub_text


@pytest.mark.parametrize("text, secret", [
    ("HF_TOKEN=hf_abcdefghijklmnopqrstuvwx", "hf_abcdefghij"),
    ('{"password": "hunter2"}', "hunter2"),
    ("export AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG", "wJalrXUtnFEMI"),
    ("git clone https://bob:s3cr3t@github.com/org/repo", "s3cr3t"),
    ("Authorization: Bearer eyJhbGciOi.abc", "eyJhbGciOi"),
    ("see ghp_0123456789abcdefghijABCDEFGHIJ here", "ghp_0123456789"),
    ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\n-----END OPENSSH PRIVATE KEY-----", "b3BlbnNzaC1rZXk"),
])
def test_secrets_are_masked(text, secret):
    assert secret not in scrub_text(text)
    assert "***" in scrub_text(text)


@pytest.mark.parametrize("text", [
    "GPU-270f419f-43bf-663b-3c9a-c3be552893cf",
    "PATH=/opt/tokenizers/bin:/usr/local/cuda/bin:/usr/bin",
    "LD_LIBRARY_PATH=/usr/local/cuda-13.0/compat:/usr/local/nvidia/lib64",
    "libcudss.so.0 => /usr/lib/aarch64-linux-gnu/libcudss/13/libcudss.so.0",
])
def test_facts_survive(text):
    assert scrub_text(text) == text


def test_scrub_walks_json_values():
    value = {"probe": {"raw": {"env": "API_KEY=abc123"}}, "list": ["token: xyz", 3, None]}
    assert scrub(value) == {"probe": {"raw": {"env": "API_KEY=***"}}, "list": ["token: ***", 3, None]}


def _strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def test_the_fast_path_masks_exactly_what_every_pattern_masks():
    """scrub_text skips texts with none of the words any pattern needs, and caches short texts: on every string
    of the recorded facts and reports in tests/data and bench/data, and on random mixes of the fragments the
    patterns look for, it answers what running every pattern answers."""
    import json
    import random
    from pathlib import Path

    from fleet.facts.scrub import _scrub_all

    root = Path(__file__).resolve().parents[2]
    corpus = []
    for path in [*root.glob("tests/data/**/*.json"), *root.glob("bench/data/**/*.json")]:
        try:
            corpus += list(_strings(json.loads(path.read_text())))
        except (ValueError, UnicodeDecodeError):
            continue
    assert len(corpus) > 10000
    fragments = ["HF_TOKEN=", "hf_", "abcdefghijklmnopqrstuvwxyz0123", "Bearer ", "bearer\t", "https://", "http://",
                 "u:p@", "@", "x@y", "ghp_", "github_pat_", "sk-", "xoxb-", "AKIA", "ABCDEFGHIJKLMNOP", "eyJ", ".",
                 "-----BEGIN RSA PRIVATE KEY-----", "-----END RSA PRIVATE KEY-----", "password", "Pass", "_pass",
                 "passed", "=", ": ", '": "', "'", '"', " ", "\n", "api-key", "Api_Key", "secret", "credential",
                 "authorization", "/usr/lib/", "keyring", "token", "tokenizers", "PATH=/opt/x:/usr/bin", "é"]
    rng = random.Random(27)
    corpus += ["".join(rng.choice(fragments) for _ in range(rng.randint(1, 12))) for _ in range(20000)]
    corpus.append("x" * 5000 + " HF_TOKEN=hf_abcdefghijklmnopqrstuvwx")   # past the cached length
    changed = 0
    for text in corpus:
        want = _scrub_all(text)
        assert scrub_text(text) == want, text
        changed += want != text
    assert changed > 1000   # the mixes do reach the patterns


def _alternatives(pattern: str) -> set[str]:
    """The words a `a|b[cd]_|...` pattern (no other syntax) matches, lower case: "gh[pousr]_" -> ghp_, gho_, ..."""
    import re

    words = set()
    for part in pattern.removeprefix("(?i)").split("|"):
        found = re.fullmatch(r"([^\[]*)(?:\[(\w+)\](.*))?", part)
        head, chars, tail = found.groups()
        words.update(head + c + tail for c in chars) if chars else words.add(head)
    return {word.lower() for word in words}


def test_the_words_that_may_hold_a_secret_are_the_patterns_and_find_what_it_finds():
    """A long text is masked only where it holds one of _MAYBE's words; an ASCII text is asked by `in` on its lower
    case (issue 46: the pattern's search was 0.13 ms a KB), any other by the pattern: the same answer either way."""
    import json
    from pathlib import Path

    from fleet.facts.scrub import _MAYBE, _MAYBE_WORDS, _maybe
    from test_scrub_linear import HOSTILE

    assert set(_MAYBE_WORDS) == _alternatives(_MAYBE.pattern)
    texts = [word.upper() for word in _MAYBE_WORDS] + [word.title() for word in _MAYBE_WORDS]
    texts += ["x" * 600 + "PaSsWoRd=x", "x" * 600 + "nothing here", "GH_P_ xo xb- a k i a", "sk_ hf- :/ /",
              "paſſword", "\u212aEY=1", "İTOKEN", "ünïcödé text only", "ghp", "ghq_", "xoxc-"]
    texts += [family(400) for family in HOSTILE.values()]
    for path in (Path(__file__).resolve().parents[2] / "bench" / "data" / "replay-lab-facts").glob("*.json"):
        texts += list(_strings(json.loads(path.read_text())))
    assert len(texts) > 1000
    for text in texts:
        assert _maybe(text) == (_MAYBE.search(text) is not None), text[:80]


def test_scrubbed_is_the_report_as_json_writes_it_every_string_scrubbed_in_one_walk():
    """fleet.facts.scrub.scrubbed (the sinks' one scrub a host): json.loads(json.dumps(report, default=str)) with
    every string scrubbed and NaN/Infinity null, whatever the types inside (exact JSON types take a faster way)."""
    import enum
    import json
    import math
    from pathlib import Path

    from fleet.facts.scrub import Scrubbed, scrubbed

    class Text(str):
        pass

    class Count(enum.IntEnum):
        TWO = 2

    def reference(value):
        def walk(item):
            if isinstance(item, str):
                return scrub_text(item)
            if isinstance(item, dict):
                return {key: walk(inner) for key, inner in item.items()}
            if isinstance(item, list):
                return [walk(inner) for inner in item]
            return item
        return walk(json.loads(json.dumps(value, default=str, allow_nan=True),
                               parse_constant=lambda name: None))

    report = {"status": "ok", "record": {"env": "HF_TOKEN=hf_abcdefghijklmnopqrstuvwx", "n": 3, "on": True,
                                         "none": None, "x": 1.5, "nan": math.nan, "inf": [-math.inf, 2.0],
                                         "t": ("API_KEY=abc", 1), Text("k"): Text("password: hunter2"),
                                         1: "one", 2.5: "f", None: "n", True: "t", "path": Path("/opt/a"),
                                         "e": Count.TWO, "long": "x" * 600 + " token=abc",
                                         "deep": [[{"a": ["secret=s", {"b": ()}]}]]},
              "tasks": [{"reason": "ok " * 300}]}
    for path in (Path(__file__).resolve().parents[2] / "bench" / "data" / "replay-lab-facts").glob("*.json"):
        report[path.stem] = json.loads(path.read_text())
    made = scrubbed(report)
    assert isinstance(made, Scrubbed) and scrubbed(made) is made
    assert json.dumps(made, sort_keys=True) == json.dumps(reference(report), sort_keys=True)
    assert made["record"]["env"] == "HF_TOKEN=***" and made["record"]["k"] == "password: ***"
    assert made["record"]["nan"] is None and made["record"]["t"] == ["API_KEY=***", 1]
