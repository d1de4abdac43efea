"""Adding a pod to an inventory: a text edit that keeps every comment, written once, atomically, validated."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from fleet.inventory.edit import insert_host
from fleet.workflows.pod_entry import HEADER, find_pod, load_existing, write_entry
from fleet.workflows.ssh_line import Target
from fleet.errors import InputError
from fleet.inventory import load_inventory

PODS = Path(__file__).resolve().parents[2] / "examples" / "pods.yaml"   # the hand-written example
WHEN = "2025-01-01 00:00 UTC"
NEW = Target("root", "198.51.100.23", 17555)


def test_the_shipped_pods_inventory_gets_the_pod_and_keeps_everything_else(tmp_path):
    path = tmp_path / "pods.yaml"
    shutil.copy(PODS, path)
    before = path.read_text()
    write_entry(path, "pod-23-17555", NEW)
    after = path.read_text()
    # every line that was there is still there, in order, and the comments with it
    kept = iter(after.splitlines())
    assert all(line in kept for line in before.splitlines())
    assert "# EXAMPLE ADDRESSES" in after and "# example address" in after
    inv = load_inventory(path)
    assert (inv.hosts["pod-23-17555"].address, inv.hosts["pod-23-17555"].port) == ("198.51.100.23", 17555)
    assert list(inv.hosts) == ["pod-a", "pod-b", "pod-23-17555"]
    # the new host sits in the hosts block, before the groups and their comment
    assert after.index("pod-23-17555:") < after.index("groups:")
    assert inv.hosts["pod-23-17555"].groups == []   # a new pod joins no group by itself


def test_inserting_goes_after_the_last_host_not_after_a_comment_of_the_next_section():
    text = ("hosts:\n"
            "  a:\n"
            "    address: 10.0.0.1\n"
            "    # a's note\n"
            "\n"
            "# --- groups below ---\n"
            "groups:\n"
            "  g: [a]\n")
    out = insert_host(text, "b", NEW, when=WHEN)
    assert out.splitlines()[4].startswith("  b:")
    assert out.splitlines()[3] == "    # a's note"
    assert "\n# --- groups below ---\ngroups:\n" in out


@pytest.mark.parametrize("text", ["hosts: {}\n", "hosts:\n", "hosts: ~  # none yet\n", "vars: {a: 1}\n", "",
                                  "# only a comment"])
def test_empty_or_missing_hosts_sections(tmp_path, text):
    out = insert_host(text, "b", NEW, when=WHEN)
    path = tmp_path / "inv.yaml"
    path.write_text(out)
    assert load_inventory(path).hosts["b"].port == 17555
    if "#" in text:
        assert text.split("#", 1)[1].strip() in out


def test_the_indentation_of_the_file_is_followed():
    text = "hosts:\n    a:\n        address: 10.0.0.1\n"
    out = insert_host(text, "b", NEW, when=WHEN)
    assert "\n    b:" in out and "\n        address: 198.51.100.23" in out


def test_a_flow_style_hosts_mapping_is_refused_with_the_line():
    with pytest.raises(InputError, match=r"inv.yaml:2: 'hosts:' is written on one line"):
        insert_host("vars: {}\nhosts: {a: {address: 10.0.0.1}}\n", "b", NEW, where="inv.yaml")


def test_hostile_values_are_written_as_yaml_strings(tmp_path):
    path = tmp_path / "inv.yaml"
    keyfile = tmp_path / "my key #1: yes"
    keyfile.write_text("x")
    write_entry(path, "b", Target("root", "10.0.0.1", 22, key=str(keyfile)))
    assert load_inventory(path).hosts["b"].key == str(keyfile)


def test_a_missing_file_is_created_with_a_header(tmp_path):
    path = tmp_path / "new" / "pods.yaml"
    write_entry(path, "pod-23-17555", NEW)
    assert path.read_text().startswith(HEADER)
    assert oct(path.stat().st_mode & 0o777) == "0o644"
    assert find_pod(load_existing(path), NEW).name == "pod-23-17555"


def test_the_same_pod_is_found_again_by_address_and_port(tmp_path):
    path = tmp_path / "pods.yaml"
    shutil.copy(PODS, path)
    inv = load_existing(path)
    assert find_pod(inv, Target("root", "203.0.113.10", 17322)).name == "pod-a"
    assert find_pod(inv, Target("root", "203.0.113.10", 17323)) is None


def test_validation_happens_before_the_rename_so_nothing_half_written(tmp_path):
    path = tmp_path / "pods.yaml"
    shutil.copy(PODS, path)
    before = path.read_bytes()
    with pytest.raises(InputError, match="would break it"):   # pod-a exists: a duplicate key
        write_entry(path, "pod-a", NEW)
    assert path.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["pods.yaml"]        # no temp file left behind


def test_commit_false_validates_without_writing(tmp_path):
    path = tmp_path / "pods.yaml"
    shutil.copy(PODS, path)
    before = path.read_bytes()
    inv = write_entry(path, "pod-23-17555", NEW, commit=False)
    assert "pod-23-17555" in inv.hosts and inv.path == path
    assert path.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["pods.yaml"]


def test_the_file_mode_is_kept(tmp_path):
    path = tmp_path / "pods.yaml"
    shutil.copy(PODS, path)
    path.chmod(0o600)
    write_entry(path, "pod-23-17555", NEW)
    assert path.stat().st_mode & 0o777 == 0o600


PIN_URL = "https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2404/x86_64/cuda-keyring_1.1-1_all.deb"


def test_keyring_pins_and_set_values_go_into_the_new_pods_entry_only(tmp_path):
    """--keyring-pins and the bootstrap's --set values are the pod's own vars: the other hosts keep fleet's pins."""
    path = tmp_path / "pods.yaml"
    shutil.copy(PODS, path)
    pod = Target("root", "198.51.100.23", 17555, pins={PIN_URL: "a" * 64},
                 vars={"verify_perf": False, "cuda_version": "13.0", "torch_min_free_gb": 5})
    write_entry(path, "pod-23-17555", pod)
    inv = load_inventory(path)
    new = inv.hosts["pod-23-17555"]
    assert new.vars["cuda_keyring_pins"] == {PIN_URL: "a" * 64}
    assert (new.vars["verify_perf"], new.vars["cuda_version"], new.vars["torch_min_free_gb"]) == (False, "13.0", 5)
    for name in ("pod-a", "pod-b"):
        assert "cuda_keyring_pins" not in inv.hosts[name].vars and "verify_perf" not in inv.hosts[name].vars
    from fleet.decide.variables import resolve as resolve_vars   # what decide reads: the pin replaced for this pod only
    assert resolve_vars(new.vars).keyring_pins == {PIN_URL: "a" * 64}
    assert resolve_vars(inv.hosts["pod-a"].vars).keyring_pins == {}
