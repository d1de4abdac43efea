"""`python -m fleet ...` with every remote command recorded: one JSON line per command (host, the command
line, the script fed on stdin, exit status, stdout, stderr) appended to $BENCH_RECORD. Used to record what a
converged host answers, for the replaying SSH server of bench/controller.py (bench/_replay.py)."""

import json
import os
import sys
import threading

from fleet.connection import ssh

_exec = ssh.SSHConnection._exec
_lock = threading.Lock()
_log = open(os.environ["BENCH_RECORD"], "a", buffering=1)


def _recorded(self, command, *, stdin, **kwargs):
    result = _exec(self, command, stdin=stdin, **kwargs)
    line = json.dumps({"host": self.host.name, "command": command, "stdin": stdin or "", "exit": result.exit,
                       "stdout": result.stdout, "stderr": result.stderr})
    with _lock:
        _log.write(line + "\n")
    return result


ssh.SSHConnection._exec = _recorded

from fleet.cli import main  # noqa: E402

sys.exit(main(sys.argv[1:]))
