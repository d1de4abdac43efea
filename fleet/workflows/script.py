"""`fleet script`: one host's `fleet apply` as a standalone, idempotent bash script.

For a pod template's start command, where no control machine is at hand. The host's facts are gathered
once (one remote command) to freeze the decisions, which the script states in comments; the roles are
rendered from them exactly as `fleet apply` renders them (fleet.engine.decide_tasks), with the resources' own
check and apply snippets. Then, on the host:

- the cuda-compat gate a converged host has (roles/cuda_compat) runs first, as at every start: a pod template
  runs the script at start, where a changed kernel driver shows first;
- each enabled task: its check; its apply only when the check says "not in state" (exit 10); a check that
  cannot run or an apply that fails stops the script, naming the task;
- every changed task is checked again at the end (as apply's second observe does): idempotence proved;
- the asserts (verify) run last in a fresh shell that sources ~/.bashrc as `ssh host cmd` does, and the
  verify result is written to /var/lib/fleet/verify.json by fleet/remote/verify_record.py, the very module
  the engine records it with (its file's text is shipped into the script);
- the last line printed is `changed=N`; a second run prints `changed=0`.

Snippets run in subshells with `set +u` (they were written for the engine, which runs them without it), and
checks with LC_ALL=C, as in the engine's probe.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass
from datetime import datetime, timezone

from fleet import __version__, remote, shell
from fleet.connection import ConnectOptions
from fleet.engine import Decided, decide_tasks, hostlock, maybe_sudo
from fleet.engine.probe import gather
from fleet.errors import HostError
from fleet.facts.scrub import scrub_text
from fleet.facts.software import VERIFY_PATH
from fleet.inventory import Host
from fleet import programs
from fleet.resources import assert_
from fleet.resources.compat_gate import GATE as COMPAT_GATE

NEEDS_CHANGE = 10

_PRELUDE = remote.text("script_prelude.sh")   # fleet/remote/script_prelude.sh, as written: a person reads it


@dataclass(frozen=True)
class ScriptRequest:
    """What `fleet script` was asked, as parsed from its flags: decide from `record` (--from-facts, offline; its
    file named by `from_facts`), else from facts gathered over `connect`."""

    record: dict | None = None
    from_facts: str | None = None
    connect: ConnectOptions | None = None
    report: str | None = None             # --report URL|dir:PATH: the script sends each run's report there


@dataclass(frozen=True)
class ScriptRun:
    text: str                             # the script
    plans: dict                           # the run-time variants it carries (script_runtime.variants)
    host: str


def make_script(host: Host, roles, request: ScriptRequest, progress=lambda host, message: None) -> ScriptRun:
    """One host's script: its facts gathered in ONE remote command (or the record given), the decisions and
    rendered tasks as `fleet apply` makes them (nothing is recorded), the run-time variants, the text."""
    from fleet.workflows import script_runtime

    def decide(facts: dict) -> Decided:   # plans only: nothing is recorded; every install-type role in, checked on the pod
        return decide_tasks(roles, host, script_runtime.as_template(facts))

    if request.record is None:
        progress(host.name, "gathering facts (one command) to decide from")
        plan = decide(_gathered(host, request.connect))
        made_from = f"{host.name}'s facts gathered {plan.facts.get('gathered_at')}"
    else:
        plan = decide(request.record)
        made_from = f"{request.from_facts} (gathered {request.record.get('gathered_at')})"
    prepared = script_runtime.prepare(decide, plan, made_from, host)
    return ScriptRun(render(plan, host, prepared, report=request.report), prepared.plans, host.name)


def _gathered(host: Host, options: ConnectOptions | None) -> dict:
    """The host's facts in ONE remote command, over a connection opened as every command opens its hosts'
    (connection.parallel.on_hosts: the host's ssh config checked before it is contacted, Ctrl-C aborts it); a host
    that could not be reached is a HostError."""
    from fleet.connection.parallel import on_hosts

    outcome = on_hosts([host], lambda conn, h: gather(conn, h, None), options=options)[host.name]
    if outcome.interrupted:
        raise KeyboardInterrupt
    if outcome.error:
        raise HostError(outcome.error)
    return outcome.value


def gather_plan(conn, host: Host, roles) -> Decided:
    """Facts in ONE remote command, then the decisions and rendered tasks, as `fleet apply` makes them."""
    return decide_tasks(roles, host, gather(conn, host, None))


def render_script(plan: Decided, host: Host, *, root: bool | None = None, now: datetime | None = None,
                  verify_path: str = VERIFY_PATH, plans: dict | None = None,
                  made_from: str | None = None, report: str | None = None) -> str:
    """The bash script for `plan` (from gather_plan); `root`: whether it will run as root (default: host.user).
    `plans`: the run-time variants (fleet.workflows.script_runtime.variants; default: `plan` alone, as 'direct'), of
    which the script picks one on the host from the kernel driver it finds there."""
    from fleet.workflows import script_runtime

    made_from = made_from or f"{host.name}'s facts gathered {plan.facts.get('gathered_at')}"
    root = shell.user_is_root(host) if root is None else root
    return render(plan, host, script_runtime.runtime(plan, plans or {"direct": plan}, made_from, root), now=now,
                  verify_path=verify_path)


def render(plan: Decided, host: Host, runtime, *, now: datetime | None = None,
           verify_path: str = VERIFY_PATH, report: str | None = None) -> str:
    """The bash script for `plan` with what it decides at run time made already (script_runtime.Runtime: the
    variants, their header and guard, whether it runs as root)."""
    if plan.decisions.refuse:
        raise HostError(f"{host.name}: refused: {plan.decisions.refuse}; no script written")
    plans, root = runtime.plans, runtime.root
    bodies: dict[str, int] = {}                  # one function per distinct task, shared by the variants
    defs, runs = [], {}
    for name, variant in plans.items():
        runs[name] = [_number(t, root, bodies, defs) for t in variant.tasks if t.enabled]
    out = ["#!/usr/bin/env bash", *_header(plan, host, now), *map(_comment, runtime.described),
           # the shared functions every task calls (fleet.shell.FUNCTIONS), once; the trust judgement's always (the
           # start gate and verify's record judge their programs with it)
           _PRELUDE, shell.define(("trust", *(n for v in plans.values() for t in v.tasks if t.enabled
                                               for n in t.resource.uses(apply=True)))).rstrip("\n"),
           *([_report(report, host, verify_path)] if report else []),
           "# -- the host's apply lock: never at the same time as a `fleet apply` or another script ---------",
           hostlock.take(hostlock.lock_dir(True), f"fleet script for {host.name}", sudo=not root).rstrip("\n"),
           # where `fleet apply`'s commands run (sshd starts them in the home directory), never the start
           # directory (a pod's shared /workspace): Python started here imports what is in it
           'cd -- "$HOME" 2>/dev/null || cd /',
           "# -- run-time guard: the host must be the one the decisions cover -----------------------",
           runtime.guard, _start_gate(root), *defs]
    out.append("# -- converge ------------------------------------------------------------------------------")
    out.append("case $fleet_variant in")
    for name, numbered in runs.items():
        calls = [f"fleet_task {_label(t)} {i}" for i, t in numbered if not t.resource.judged] or [":"]
        out.append(f"  {name})\n    printf 'run-time decision: %s\\n' \"$fleet_why\"\n    "
                   + "\n    ".join(calls) + " ;;")
    out.append("esac")
    out.append("# -- confirm: every changed task now checks in state -------------------------------------")
    labels = " ".join(f"{i}) fleet_confirm {_label(t)} {i} ;;" for name in runs for i, t in runs[name]
                      if not t.resource.judged)
    if labels:
        out.append(f'for n in $fleet_applied; do case $n in {labels} esac; done')
    out.append("# -- verify, in a fresh shell as `ssh host cmd` gets it --------------------------------------")
    sudo = shell.sudo_prefix(shell.needs_sudo(True, root))   # the engine writes verify.json so too
    out.append("case $fleet_variant in")
    for name, numbered in runs.items():
        providers = plans[name].decisions_json.get("missing_providers", {}) or {}
        calls = [_assert_call(i, t, providers, verify_path, sudo) for i, t in numbered if t.resource.judged]
        out.append(f"  {name})\n" + "\n".join(calls or [":"]) + " ;;")
    out.append("esac")
    out.append("fleet_end 0")
    return "\n".join(out) + "\n"


def _report(target: str, host: Host, verify_path: str) -> str:
    """`--report TARGET`: after every run, however it ended, the run's report goes to TARGET (fleet/remote/report.sh
    and report_send.py; the token only from FLEET_REPORT_TOKEN in the pod's environment)."""
    from fleet.workflows import health

    values = {"program": remote.source("report_send"), "target": target, "host": host.name,
              "version": __version__, "verify": verify_path, "health": health.script()}
    return ("# -- the report after every run (fleet script --report) -----------------------------------\n"
            + "".join(f"fleet_report_{name}={shlex.quote(value)}\n" for name, value in values.items())
            + remote.program("report"))


def _start_gate(root: bool) -> str:
    """A pod template runs the script as its start command, where a changed kernel driver shows first: the gate
    a converged host has (roles/cuda_compat) decides again before anything else, so the ld cache never hands
    the compat libcuda to a driver that is not older than it (error 803), even if the script then stops."""
    gate = shlex.quote(COMPAT_GATE)
    sudo = shell.sudo_prefix(shell.needs_sudo(True, root))
    return ("# -- the cuda-compat gate, as at every start (compat in the ld cache only under an older driver) ----\n"
            f"if [ -x {gate} ] && fleet_judged {gate}; then {sudo}{gate} run fleet-script </dev/null; fi")


def _number(task, root: bool, bodies: dict[str, int], defs: list[str]) -> tuple[int, object]:
    """The index of this task's functions, defining them on first sight (variants share equal tasks)."""
    key = _task_functions(0, task, root) if not task.resource.judged else _assert_function(0, task)
    key += task.spec.role + task.spec.name
    if key not in bodies:
        bodies[key] = len(bodies)
        i = bodies[key]
        defs.append(_task_functions(i, task, root) if not task.resource.judged else _assert_function(i, task))
    return bodies[key], task


def _header(plan, host: Host, now: datetime | None) -> list[str]:
    facts, d = plan.facts, plan.decisions_json
    when = (now or datetime.now(timezone.utc)).strftime("%Y-%m-%d %H:%M UTC")
    gpus = ", ".join(sorted({str(g.get("name")) for g in facts.get("gpus") or []})) or "no GPU"
    driver = (facts.get("driver") or {}).get("version") or "none"
    lines = [f"fleet script for {host.name} ({host.target}), generated by fleet {__version__} on {when}",
             f"from the facts gathered {facts.get('gathered_at')}: the decisions below are frozen in, except what",
             "depends on the kernel driver (cuda-compat, LD_LIBRARY_PATH): the script decides that where it runs.",
             "Every task that installs something is in, whatever those facts say (the toolkit, git, python3-venv):",
             "its check decides on the pod, so a pod that has it says ok and one that lacks it gets it.",
             "Generate it again after the host changes (driver, GPU, OS) or the roles or variables change.",
             f"Run it on the host itself as {host.user} (a pod template's start command). It is idempotent:",
             "each task's check runs first and its apply only if needed; the last line printed is changed=N.",
             "",
             f"host: {facts.get('platform')}, {gpus}, driver {driver}",
             "roles (tasks in this script) and the decisions' reasons:"]
    for role in dict.fromkeys([t.spec.role for t in plan.tasks]):
        enabled = [t for t in plan.tasks if t.spec.role == role and t.enabled]
        why = next((t.why for t in enabled if t.why), "")
        lines.append(f"  {role:<13} {f'{len(enabled)} task(s)' if enabled else 'skipped':<10} {why}")
    if d.get("ld_library_path"):
        lines.append("LD_LIBRARY_PATH (for the facts' own driver): " + ":".join(d["ld_library_path"]))
    for task in plan.tasks:
        if not task.enabled and not (task.skip_condition or "").startswith("role condition"):
            lines.append(f"not run: {task.spec.role}: {task.spec.name} ({task.skip_reason})")
    return [_comment(line) for line in lines]


def _comment(text: str) -> str:
    """One comment line: a newline in a reason must never become code, a credential never a comment (a task's
    description names its index or repository URL: the code needs the password or token, a reader does not)."""
    return ("# " + re.sub(r"[\x00-\x1f\x7f]", " ", scrub_text(str(text)))).rstrip()


def _label(task) -> str:
    return shlex.quote(f"{task.spec.role}: {task.spec.name}")


def _task_functions(i: int, task, root: bool) -> str:
    check = maybe_sudo(programs.prelude(task.resource.programs()) + task.resource.check(), task, root, check=True)
    apply = maybe_sudo(task.resource.apply(), task, root)
    return (f"{_comment(f'[{i}] {task.spec.role}: {task.spec.name} ({task.resource.describe()})')}\n"
            f"fleet_check_{i}() ( set +u; export LC_ALL=C; :; {check}\n)\n"
            f"fleet_apply_{i}() ( set +u; :; {apply}\n)")


def _assert_function(i: int, task) -> str:
    # The env hook sits at the top of ~/.bashrc, before its non-interactive return: what `ssh host cmd` gets.
    fresh = '[ -r "$HOME/.bashrc" ] && . "$HOME/.bashrc" >/dev/null 2>&1 </dev/null'
    return (f"{_comment(f'[{i}] {task.spec.role}: {task.spec.name}')}\n"
            f"fleet_check_{i}() ( set +u; {fresh}; export LC_ALL=C; :; {programs.prelude(task.resource.programs())}"
            f"{task.resource.check()}\n)")


def _assert_call(i: int, task, providers: dict, verify_path: str, sudo: str) -> str:
    label = _label(task)
    if not task.resource.writes_record:   # a role's own assert: its exit status (the host's verify: its record)
        return (f'out=$(fleet_check_{i} 2>&1 </dev/null) && printf \'ok      %s\\n\' {label} '
                f'|| fleet_fail {label} "$(fleet_tail "$out")"')
    python = assert_.qpath(task.resource.p["python"])
    # the python that writes the record as root: judged first (fleet/shell.py), started -I (isolated) from /
    return (f'out=$(fleet_check_{i} 2>&1 </dev/null); rc=$?\n'
            f'py={python}; [ -x "$py" ] || py=python3\n'
            f'fleet_judged "$py" 2>/dev/null || fleet_fail {label} "$(fleet_judged "$py" 2>&1)"\n'
            f'summary=$(cd / && printf \'%s\\n\' "$out" | {sudo}"$fleet_prog" -I -c {shlex.quote(verify_record_program())} '
            f'{shlex.quote(verify_path)} {shlex.quote(json.dumps(providers, sort_keys=True))} "$rc" 2>&1) '
            f'|| fleet_fail {label} "${{summary:-$(fleet_tail "$out")}}"\n'
            f'printf \'verify  %s\\n\' "$summary"')


def verify_record_program() -> str:
    """Python run on the host: the assert's output on stdin -> the verify record, written atomically to argv[1];
    prints its summary and exits 0 only if it passed. It is fleet/remote/verify_record.py itself (the file's text,
    stdlib only), the module the engine records verify with: the script and `fleet apply` write the same."""
    return remote.source("verify_record")
