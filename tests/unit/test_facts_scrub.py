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
