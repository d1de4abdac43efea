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
