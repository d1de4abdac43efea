"""The README is organised around what a pod renter does (issue 38), and its first-pod path works from a fresh
clone: no example pods in the default inventory (`fleet bootstrap --name pod-a` would be refused)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()


def test_sections_in_the_order_a_pod_renter_needs_them():
    heads = re.findall(r"^## (.+)$", README, re.M)
    wanted = ["Try it on a fresh machine", "Install", "Your first pod", "Using the pod", "Commands",
              "Inventory and variables", "Troubleshooting"]
    assert [h for h in heads if h in wanted] == wanted, heads
    trouble = README.split("## Troubleshooting", 1)[1].split("\n## ", 1)[0]
    for topic in ("Error 803", "Error 804", "changed host key", "stale verify", "apply lock"):
        assert topic in trouble, topic


def test_every_command_is_in_the_command_list_and_the_variables_table_has_its_place():
    from fleet.commands import NAMES

    listed = README.split("## Commands", 1)[1].split("\n## ", 1)[0]
    for name in NAMES:
        assert f"    fleet {name} " in listed, name
    # the variables table, generated from the declarations (tests/unit/test_variables.py keeps it so)
    assert README.count("<!-- variables:begin -->") == 1 and README.count("<!-- variables:end -->") == 1


def test_a_fresh_clone_has_no_pods_in_the_default_inventory_and_install_lines_paste():
    assert not (ROOT / "inventories" / "pods.yaml").exists()   # bootstrap creates it; examples/pods.yaml shows one
    assert (ROOT / "examples" / "pods.yaml").is_file()
    install = README.split("## Install", 1)[1].split("\n## ", 1)[0]
    assert "OWNER" not in install and "    pipx install .  " in install
