"""Scripts and their secrets never in a process's arguments (issue 26): while fleet's command runs on the host,
no process there (sshd's login shell, bash, sudo) carries the script's text in /proc/*/cmdline, where every user
of the host can read it. Asked of the host itself, by the running script, with bash builtins only (a grep would
carry the pattern in its own arguments)."""

from __future__ import annotations

import pytest

TOKEN = "fleet-test-token-3b7e91"
# the pattern is built in pieces, so the script's text holds the token only in the export fleet writes
SCAN = """pat=fleet-test-tok; pat+=en-3b7e91; hits=0
for f in /proc/[0-9]*/cmdline; do
  while IFS= read -r -d '' arg; do [[ $arg == *"$pat"* ]] && hits=$((hits + 1)); done < "$f" 2>/dev/null
done 2>/dev/null
echo "hits $hits token ${#HF_TOKEN}"
"""


@pytest.mark.parametrize("host, sudo", [("pod-570", False), ("spark", True)])   # root, and a user through sudo
def test_a_token_in_a_script_is_in_no_process_arguments(lab, host, sudo):
    with lab.connect(host) as conn:
        res = conn.run(SCAN, env={"HF_TOKEN": TOKEN}, sudo=sudo)
    assert res.exit == 0, res.stderr
    assert res.stdout.split() == ["hits", "0", "token", str(len(TOKEN))]   # the script ran, with its token
