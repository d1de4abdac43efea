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
