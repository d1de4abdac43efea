"""NVIDIA's cuda-keyring .deb pinned by sha256 for the default sources (issue 26): the decision carries the
digest of the URL it names, the shipped roles pass it to the apt task, which checks it on the host before
dpkg -i and refuses a mismatch naming both digests; a user's digest or a mirror's digest file replaces it."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

import pytest

from fleet.decide import decide
from fleet.decide.keyring import PINS, SHIPPED, url
from fleet.errors import InputError
from fleet.inventory import load_inventory
from fleet.resources.apt import Apt
from resource_shell import apply_text
from test_decide import load
from test_decide_rules import KEYRING_SBSA, KEYRING_X86, rendered

X86_PIN = "d2a6b11c096396d868758b86dab1823b25e14d70333f1dfa74da5ddaf6a06dba"
SBSA_PIN = "6ea7d2737648936820e85677177957a0f6521b840d98eb0bbae0a4f003fa7249"


def test_the_default_urls_carry_the_digests_fleet_ships_with_their_source():
    assert SHIPPED[KEYRING_X86] == X86_PIN and SHIPPED[KEYRING_SBSA] == SBSA_PIN
    assert SHIPPED[url("ubuntu2204/x86_64")] == "d93190d50b98ad4699ff40f4f7af50f16a76dac3bb8da1eaaf366d47898ff8df"
    for digest, source in PINS.values():
        assert len(digest) == 64 and int(digest, 16) >= 0 and source


def toolkit_record(name="h100-pod-580-compat") -> dict:
    record = load(name)
    record["cuda"]["toolkits"] = []
    return record


def test_the_toolkit_task_checks_the_pinned_digest_of_the_default_keyring():
    record = toolkit_record()
    assert decide(record, {}).cuda.keyring_sha256 == X86_PIN
    task = rendered(record, {})["cuda_toolkit.0"]
    assert (task["keyring_deb"], task["keyring_sha256"]) == (KEYRING_X86, X86_PIN)
    thor = rendered(load("thor"), {"torch_source": "jetson", "nvpl_source": "apt", "cudss_source": "apt"})
    assert thor["nvpl.1"]["keyring_sha256"] == thor["cudss.1"]["keyring_sha256"] == SBSA_PIN


def test_a_user_url_gets_no_default_pin_and_a_user_digest_wins():
    record = toolkit_record()
    mirror = "https://mirror.example/cuda-keyring_1.1-1_all.deb"
    assert rendered(record, {"cuda_keyring_url": mirror})["cuda_toolkit.0"]["keyring_sha256"] == ""
    mine = "ab" * 32
    task = rendered(record, {"cuda_keyring_url": mirror, "cuda_keyring_sha256": mine})["cuda_toolkit.0"]
    assert (task["keyring_deb"], task["keyring_sha256"]) == (mirror, mine)


def test_a_digest_file_replaces_the_pin_of_its_url_only(tmp_path):
    other = "cd" * 32
    (tmp_path / "pins").write_text(f"{other}  {KEYRING_X86}\n")
    (tmp_path / "inv.yaml").write_text("keyring_pins: pins\nhosts:\n  a: {address: 192.0.2.1}\n")
    variables = load_inventory(tmp_path / "inv.yaml").hosts["a"].vars
    assert rendered(toolkit_record(), variables)["cuda_toolkit.0"]["keyring_sha256"] == other
    thor = rendered(load("thor"), {**variables, "nvpl_source": "apt", "torch_source": "jetson"})
    assert thor["nvpl.1"]["keyring_sha256"] == SBSA_PIN


@pytest.mark.parametrize("text, message", [("nothex  " + KEYRING_X86, r"pins:1 is not 'SHA256  https://URL'"),
                                           ("ab" * 32 + "  http://x/k.deb", r"pins:1 is not")])
def test_a_bad_digest_file_is_one_sentence_with_its_line(tmp_path, text, message):
    (tmp_path / "pins").write_text(text + "\n")
    (tmp_path / "inv.yaml").write_text("keyring_pins: pins\nhosts:\n  a: {address: 192.0.2.1}\n")
    with pytest.raises(InputError, match=message):
        load_inventory(tmp_path / "inv.yaml")


def test_the_host_refuses_a_keyring_whose_digest_differs_naming_both(tmp_path):
    """The apply's own shell, run here: the keyring section stops before apt-get sees the .deb."""
    deb = tmp_path / "cuda-keyring_1.1-1_all.deb"
    deb.write_bytes(b"not NVIDIA's keyring")
    got = hashlib.sha256(deb.read_bytes()).hexdigest()
    script = apply_text(Apt(Apt.validate({"packages": ["cuda-toolkit-13-0"], "keyring_deb": f"file://{deb}",
                                          "keyring_sha256": X86_PIN}, "role.yaml:3")))
    marker = tmp_path / "apt-ran"
    fake = tmp_path / "bin"
    fake.mkdir()
    for tool in ("apt-get", "dpkg-query", "dpkg"):
        (fake / tool).write_text(f"#!/bin/sh\n[ \"$0\" = {fake}/dpkg-query ] && exit 1\necho \"$0 $*\" >> {marker}\n")
        (fake / tool).chmod(0o755)
    res = subprocess.run(["bash", "-s"], input=script, capture_output=True, text=True,
                         env={"PATH": f"{fake}:/usr/bin:/bin"})
    assert res.returncode != 0
    assert f"is {got}, expected {X86_PIN}; refusing it" in res.stdout + res.stderr
    assert not marker.exists() or "apt-get" not in marker.read_text()
