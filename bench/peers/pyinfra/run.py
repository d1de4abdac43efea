"""pyinfra's own CLI, with each SSH session it opens on a host counted (paramiko's Transport.open_session:
one per command and per file transfer). Counts go to $BENCH_COUNT_LOG, one peer address per line."""

import os
import sys

import paramiko

_open_session = paramiko.Transport.open_session
_log = open(os.environ["BENCH_COUNT_LOG"], "a", buffering=1) if os.environ.get("BENCH_COUNT_LOG") else None


def open_session(self, *args, **kwargs):
    if _log:
        _log.write(f"{self.getpeername()[0]}\n")
    return _open_session(self, *args, **kwargs)


paramiko.Transport.open_session = open_session

from pyinfra_cli.main import main  # noqa: E402

sys.argv[0] = "pyinfra"
sys.exit(main())
