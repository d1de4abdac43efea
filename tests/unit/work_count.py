r"""Work counted, not timed: how many times CPython looked for pending signals while a call ran.

CPython's regular-expression engine looks once every 4,096 steps of its matching loop (sre_lib.h,
MAYBE_CHECK_SIGNALS); the interpreter looks at every call and backward jump. Keeping SIGUSR1 pending the whole
time (its handler raises it again) turns each look into one count: a deterministic measure of the regex steps and
Python calls a function made, the same on a loaded machine as on an idle one. Doubling the input of a linear
function doubles its count; a quadratic one's quadruples.

What it does not see: the engine's scan of a one-character repeat (`[\w.-]*`, `\s+`) runs without looking, so a
pattern that re-reads a run only by such scans counts per start, not per character; timing the same inputs
(bench/scrub_cost.py) covers that part.

The handler raises the signal again through `_REARM + signum`: an addition (BINARY_OP), after which CPython does not
look for signals before the handler returns, where `os.kill` and `signal.raise_signal` would look at once and
recurse. Main thread only (Python runs signal handlers there alone).
"""

from __future__ import annotations

import ctypes
import functools
import os
import signal

_kill = ctypes.CDLL(None, use_errno=True).kill


class _Rearm:
    __add__ = functools.partial(_kill, os.getpid())   # `_REARM + signum`: kill(this process, signum)


_REARM = _Rearm()
_state = {"count": 0, "armed": False}


def _handler(signum, frame):
    _state["count"] += 1
    if _state["armed"]:
        _REARM + signum


def work(fn, *args) -> int:
    """The number of signal checks while fn(*args) ran (~ its regex steps / 4096 + the Python calls it made)."""
    previous = signal.signal(signal.SIGUSR1, _handler)
    _state.update(count=0, armed=True)
    try:
        _REARM + signal.SIGUSR1
        fn(*args)
    finally:
        _state["armed"] = False
        signal.signal(signal.SIGUSR1, previous)
    return _state["count"]
