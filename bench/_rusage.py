"""Run a command; print its exit status, wall time, CPU (user+sys, its children included) and peak RSS as one JSON
line on stderr, after its own output. `python bench/_rusage.py CMD ARGS...`"""

import json
import os
import subprocess
import sys
import time

started = time.monotonic()
proc = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL)
_, status, usage = os.wait4(proc.pid, 0)
wall = time.monotonic() - started
print(json.dumps({"exit": os.waitstatus_to_exitcode(status), "wall": wall,
                  "cpu": usage.ru_utime + usage.ru_stime, "maxrss_mb": usage.ru_maxrss / 1024}),
      file=sys.stderr)
