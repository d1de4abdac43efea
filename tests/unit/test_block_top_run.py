"""Two `position: top` blocks in one ~/.bashrc (env_hooks and a user's own role, e.g. examples/roles/hf_cache)
both stay before Ubuntu's early return, and both check in state: neither pushes the other out on every apply."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from resource_shell import apply, check, make

UBUNTU_BASHRC = Path(__file__).resolve().parents[2] / "fleet_lab" / "files" / "bashrc"


def test_two_top_blocks_both_stay_placed_and_both_reach_ssh_host_cmd(isolated_home):
    bashrc = isolated_home / ".bashrc"
    bashrc.write_bytes(UBUNTU_BASHRC.read_bytes())
    first = make("block", path=str(bashrc), block="export ONE=1", marker="fleet env_hooks", position="top")
    second = make("block", path=str(bashrc), block="export TWO=2", marker="fleet hf_cache", position="top")
    for resource in (first, second):
        assert not check(resource).in_state
        apply(resource)
    assert check(first).in_state and check(second).in_state      # a second apply would change nothing
    lines = bashrc.read_text().splitlines()
    assert lines[:6] == ["# BEGIN fleet hf_cache", "export TWO=2", "# END fleet hf_cache",
                         "# BEGIN fleet env_hooks", "export ONE=1", "# END fleet env_hooks"]
    env = {k: v for k, v in os.environ.items() if k != "SHLVL"}
    env.update(HOME=str(isolated_home), SSH_CLIENT="192.0.2.1 50000 22")       # as `ssh host cmd` runs bash
    out = subprocess.run(["bash", "-c", "echo $ONE $TWO"], env=env, capture_output=True, text=True).stdout
    assert out.split() == ["1", "2"]


def test_a_top_block_below_user_lines_is_still_misplaced(isolated_home):
    bashrc = isolated_home / ".bashrc"
    bashrc.write_text("case $- in *i*) ;; *) return;; esac\n# BEGIN fleet x\nexport X=1\n# END fleet x\n")
    assert check(make("block", path=str(bashrc), block="export X=1", marker="fleet x", position="top")).reason \
        == "block differs or is misplaced"
