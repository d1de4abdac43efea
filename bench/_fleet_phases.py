"""`python -m fleet ...` with the controller's CPU split by phase: each wrapped function's thread CPU time
(time.thread_time, so threads waiting on the network cost nothing) summed over every host's thread, printed as
`phase seconds calls` lines on stderr at exit. For finding where the controller's per-host CPU goes
(bench/controller.py --phases); the phases nest (converge holds observe), so they do not sum to the total."""

import atexit
import collections
import importlib
import os
import sys
import threading
import time

_spent = collections.Counter()
_calls = collections.Counter()
_lock = threading.Lock()
_local = threading.local()

PHASES = [
    ("fleet.connection", "open_connection"),
    ("fleet.connection.ssh", "SSHConnection._exec"),
    ("fleet.connection.ssh", "SSHConnection.close"),
    ("fleet.engine", "converge"),
    ("fleet.engine.observe", "observe"),
    ("fleet.engine.observe", "last_facts"),
    ("fleet.engine.decided", "decide_tasks"),
    ("fleet.engine.decided", "check_sections"),
    ("fleet.engine", "plan"),
    ("fleet.engine", "judge"),
    ("fleet.engine", "report"),
    ("fleet.engine.session", "record"),
    ("fleet.engine.session", "gather"),
    ("fleet.report.apply", "ApplyPrinter.__call__"),
    ("fleet.report.apply", "print_apply"),
    ("fleet.report.apply", "ApplyPrinter.finish"),
    ("fleet.report", "Reporter.progress"),
    ("fleet.sections", "split_sections"),
    ("fleet.engine.session", "probe"),
    ("fleet.facts.scrub", "scrub"),
    ("fleet.record.store", "scrub"),
    ("fleet.record.store", "_atomic_write"),
    ("fleet.record.store", "_readable"),
    ("fleet.engine", "last_facts"),
    ("fleet.engine.observe", "decide_tasks"),
    ("fleet.engine.observe", "check_sections"),
    ("fleet.engine.observe", "read_check"),
    ("fleet.engine.observe", "_decide"),
    ("fleet.engine.session", "decide_facts"),
    ("fleet.engine.decided", "render_role"),
    ("fleet.engine.probe", "parse"),
    ("fleet.engine.probe", "parts"),
    ("fleet.commands.facts", "_report"),
    ("fleet.report.compare", "compare"),
    # the sinks (issue 46): each host's report kept
    ("fleet.record.sinks", "Sinks.host"),
    ("fleet.record.store", "FactsRecords.host"),
    ("fleet.store.sink", "HistorySink.host"),
    ("fleet.store", "Store.add"),
    ("fleet.store", "digest_of"),
    ("fleet.store.schema", "check"),
    ("fleet.record.runlog", "RunLog.end"),
    # the threads under each command (issue 46): SSH transport, invoke's runner loops, fleet's watchdog
    ("paramiko.transport", "Transport.run"),
    ("invoke.runners", "Runner.wait"),
    ("invoke.runners", "Runner.handle_stdin"),
    ("invoke.runners", "Runner.handle_stdout"),
    ("invoke.runners", "Runner.handle_stderr"),
    ("fleet.connection.ssh", "_Watchdog.run"),
    # the main thread's own work before and after the hosts'
    ("fleet.inventory", "load_inventory"),
    ("fleet.engine.session", "roles_of"),
    ("fleet.engine.chains", "check_roles"),
]


def _wrap(fn, name):
    def wrapped(*args, **kwargs):
        depth = getattr(_local, name, 0)
        setattr(_local, name, depth + 1)
        started = time.thread_time()
        try:
            return fn(*args, **kwargs)
        finally:
            setattr(_local, name, depth)
            if depth == 0:   # a recursive call counts once
                spent = time.thread_time() - started
                with _lock:
                    _spent[name] += spent
                    _calls[name] += 1
    return wrapped


def _install():
    # a phase names a function or a method: never a module (fleet.engine.observe's `probe` is the module
    # fleet.engine.probe; wrapping it broke every apply with "'function' object has no attribute 'needs_of'")
    for module_name, attr in PHASES:
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        owner, _, leaf = attr.rpartition(".")
        target = getattr(module, owner) if owner else module
        if not callable(getattr(target, leaf, None)):   # absent, or a module
            continue
        setattr(target, leaf, _wrap(getattr(target, leaf), attr))


@atexit.register
def _report():
    times = os.times()
    print(f"@@phases total-process-cpu {times.user + times.system:.3f} 1", file=sys.stderr)
    print(f"@@phases main-thread-cpu {time.thread_time():.3f} 1", file=sys.stderr)
    for name, spent in _spent.most_common():
        print(f"@@phases {name} {spent:.3f} {_calls[name]}", file=sys.stderr)


_install()
from fleet.cli import main  # noqa: E402

sys.exit(main(sys.argv[1:]))
