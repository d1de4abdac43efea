"""`python -m fleet ...` with each remote command timed ON the host: the script is wrapped so the host
itself reports how long it ran (nanoseconds, on stderr, stripped again before fleet sees it). Used once per
bench size for the profile of a no-op, never for the timed runs. Lines `HOST SECONDS` go to $BENCH_REMOTE_LOG."""

import os
import re
import sys
import time
from dataclasses import replace

from fleet import connection

_MARK = re.compile(r"@@bench-remote (\d+)@@\n?")
_run = connection.Connection.run
_log = open(os.environ["BENCH_REMOTE_LOG"], "a", buffering=1)


def run(self, script, **kwargs):
    timed = ("bench_t0=$(date +%s%N)\n(\n" + script + "\n)\nbench_rc=$?\n"
             "printf '@@bench-remote %s@@\\n' \"$(( $(date +%s%N) - bench_t0 ))\" >&2\nexit $bench_rc\n")
    started = time.monotonic()
    result = _run(self, timed, **kwargs)
    rtt = time.monotonic() - started
    m = _MARK.search(result.stderr or "")
    if m:
        _log.write(f"{self.host.name} {int(m.group(1)) / 1e9:.4f} {rtt:.4f}\n")
        try:
            result = replace(result, stderr=_MARK.sub("", result.stderr))
        except TypeError:   # not a dataclass: leave the marker in stderr
            pass
    return result


connection.Connection.run = run

from fleet.cli import main  # noqa: E402

sys.exit(main(sys.argv[1:]))
