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


SPLIT = """\
100 clone(child_stack=NULL, flags=CLONE_CHILD_CLEARTID|CLONE_CHILD_SETTID|SIGCHLD <unfinished ...>
101 execve("/usr/bin/readlink", ["readlink", "-f", "/x"], 0x55 /* 20 vars */ <unfinished ...>
100 <... clone resumed>, child_tidptr=0x7f) = 102
101 <... execve resumed>) = 0
102 execve("/usr/bin/stat", ["stat", "/"], 0x55 /* 20 vars */) = 0
"""


def test_a_call_split_by_another_process_counts_once_with_its_program():
    """strace -f into one file splits a call another process interrupted (`<unfinished ...>`, `<... resumed>`): the
    figures moved with the load until the counter joined them again."""
    from probe_processes import programs

    assert count(SPLIT) == {"forks": 1, "execs": 2, "threads": 0, "sleeps": 0}
    assert programs(SPLIT) == {"readlink": 1, "stat": 1}
    assert programs(TRACE) == {"cat": 1, "nvidia-smi": 1}   # the failed execve not, the watchdog's sleep not
    per_process = 'clone(child_stack=NULL, flags=SIGCHLD) = 7\nexecve("/bin/id", ["id"], 0x5 /* 1 var */) = 0\n'
    assert count(per_process) == {"forks": 1, "execs": 1, "threads": 0, "sleeps": 0}   # strace -ff: no PID
