"""bench/probe_processes.py's counter, on strace -f lines of this machine's strace: a fork that made a process counts,
a thread or a failed one does not; an execve counts only where it succeeded; the watchdog's sleeps are told apart."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from probe_processes import count  # noqa: E402

TRACE = """\
100 clone(child_stack=NULL, flags=CLONE_CHILD_CLEARTID|CLONE_CHILD_SETTID|SIGCHLD, child_tidptr=0x7f) = 101
101 execve("/usr/bin/cat", ["cat", "/proc/meminfo"], 0x55 /* 20 vars */) = 0
100 clone3({flags=CLONE_VM|CLONE_VFORK, exit_signal=SIGCHLD, stack=0x7f, stack_size=0x9000}, 88) = 102
102 execve("/usr/local/bin/nvidia-smi", ["nvidia-smi"], 0x55 /* 20 vars */) = -1 ENOENT (No such file or directory)
102 execve("/usr/bin/nvidia-smi", ["nvidia-smi"], 0x55 /* 20 vars */) = 0
103 clone(child_stack=0x7f, flags=CLONE_VM|CLONE_FS|CLONE_FILES|CLONE_SIGHAND|CLONE_THREAD|CLONE_SYSVSEM) = 104
100 vfork() = 105
105 execve("/usr/bin/sleep", ["sleep", "1"], 0x55 /* 20 vars */) = 0
100 fork() = -1 EAGAIN (Resource temporarily unavailable)
101 exit_group(0) = ?
100 wait4(-1, [{WIFEXITED(s) && WEXITSTATUS(s) == 0}], 0, NULL) = 101
"""


def test_forks_execs_and_threads_are_told_apart():
    assert count(TRACE) == {"forks": 2, "execs": 2, "threads": 1, "sleeps": 1}   # the watchdog's sleep apart
