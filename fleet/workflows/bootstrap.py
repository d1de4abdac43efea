"""`fleet bootstrap`: a new pod, from the SSH line its provider shows to a verified stack, in one shot.

    target = parse_target("ssh root@203.0.113.10 -p 17322 -i ~/.ssh/id_ed25519")   # fleet/workflows/ssh_line.py
    result = bootstrap(target, inventory_path=default_inventory())   # ~/.config/fleet/pods.yaml

Phases: connect (waiting with backoff for a pod still booting; a new host key is taken on first use and its
fingerprint shown, a CHANGED key is refused as always) -> facts (the engine's observe + plan: facts, the GPUs' whole
health (`fleet health`'s sources: its verdict is judged first, a pod to return stops there), decisions and every
check but verify's; nothing changed but fleet's helper programs) -> inventory -> apply (fleet.engine.converge from
that same probe, every role) -> verify (its second observe).

When the host enters the inventory: after the facts phase has shown the pod can be provisioned (reachable,
not refused by the decisions, enough free disk for what will be installed, every check able to run), and
before the first change is applied. A pod that cannot be provisioned is never written; a pod that fleet
starts changing is always written, so that a failed apply (a mirror hiccup, a lost connection) can be
resumed with `fleet apply INVENTORY --limit NAME` or the same bootstrap line, and inspected with `fleet
facts`/`fleet run`. The entry is written once (the same address and port already there: that name is
reused and the file left as it is), as a text edit that keeps every comment, into a temp file that must
load with `load_inventory` before it is renamed over the original: never a truncated or invalid file
(fleet/workflows/pod_entry.py).
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from fleet.engine import hostlock
from fleet.errors import AuthRefused, FleetError, InputError
from fleet.inventory import Host, Inventory
from fleet.inventory.home import remember
from fleet.workflows.pod_entry import (check_name, derive_name, entry_vars, find_pod, kept_values, known_elsewhere,
                                       load_existing, shown, write_entry, write_vars)
from fleet.workflows.ssh_line import Target   # the pod to bootstrap, read from its SSH line (parse_target)

DEFAULT_WAIT = 300.0
# A key the pod refuses is tried again this long: a provider may still be writing authorized_keys as sshd starts
# (seconds, not minutes); past that the -i key is the wrong one, and waiting the whole --wait would cost a renter
# five minutes to learn it.
AUTH_WAIT = 20.0

Progress = Callable[[str, str], None]


def _refused(host: Host, target: Target, waited: float) -> str:
    """The sentence for a key the pod refused: the -i key is what to fix, not an inventory the pod is not in yet."""
    key = f"the key -i {target.key}" if target.key else "the keys offered (no -i given: ssh-agent's and ~/.ssh/id_*)"
    fix = ("give -i the private key whose public half is in the pod's settings at the provider (its SSH public key "
           "field)") if target.key else "add -i KEY, the private key whose public half the provider has"
    return (f"{host.name}: {host.target} refused {key} (tried for {waited:g}s, as long as a provider may still be "
            f"installing keys); {fix}, then run the bootstrap again")


@dataclass
class BootstrapResult:
    name: str
    inventory: Path
    target: Target
    existing: bool = False            # the inventory already held this pod: left as it was
    added: bool = False               # this run wrote the entry
    host_key: str | None = None       # "accepted ... SHA256:..." when the key was taken on first use
    phases: dict[str, float] = field(default_factory=dict)
    facts: dict | None = None
    health: object = None             # the GPU health verdict read first (fleet.decide.health.HealthVerdict)
    report: object = None             # the apply's fleet.engine.HostReport
    vars: dict = field(default_factory=dict)   # the host's variables as the apply resolved them (python_env, ...)
    kept: dict = field(default_factory=dict)   # --set values of a retried bootstrap written into the pod's entry
    error: str | None = None
    remote_commands: int = 0
    seconds: float = 0.0

    @property
    def changed(self) -> list:
        return [t for t in (self.report.tasks if self.report else []) if t.status == "changed"]

    @property
    def verify(self) -> dict | None:
        return (self.facts or {}).get("verify")

    @property
    def ok(self) -> bool:
        return (self.error is None and self.report is not None and not self.report.failed
                and bool((self.verify or {}).get("passed")))


def _no_credentials(overrides: dict, inventory_path: Path) -> None:
    """--set values become the new pod's entry in the inventory, a file anyone may read or commit: one holding a
    password or token (a URL's user:password@, a token shape the scrubber knows) is refused, nothing written."""
    from fleet.facts.scrub import scrub_text

    for name, value in overrides.items():
        texts = [value] if isinstance(value, str) else [str(v) for v in (value.values() if isinstance(value, dict)
                                                                          else value if isinstance(value, list) else [])]
        for text in texts:
            masked = scrub_text(text)
            if masked != text:
                raise InputError(
                    f"--set {name}={masked}: the value holds a credential, and bootstrap writes --set values into "
                    f"{inventory_path}; give the URL without it and put the password where pip and git find it on "
                    "the pod: ~/.netrc (machine HOST login USER password PASSWORD, mode 0600), or the pod's "
                    "environment (PIP_INDEX_URL in its template's secrets)")


def bootstrap(target: Target, *, inventory_path: Path, name: str | None = None, wait: float = DEFAULT_WAIT,
              connect_timeout: float = 10.0, known_hosts: Path | None = None,
              progress: Progress | None = None, overrides: dict | None = None,
              on_task=None, ignore_health: bool = False) -> BootstrapResult:
    """Connect, gather facts, add to the inventory, apply every role, verify. Input errors raise (nothing
    touched); a pod that cannot be provisioned or fails comes back with `error` set (one sentence).
    `overrides`: variables (--set), over the inventory's: written into the entry of a pod this run adds, and added to
    the entry of a pod already there (a retry) unless that entry sets them otherwise (refused, naming its line), so
    the summary's `fleet apply --limit NAME` keeps them. A key the pod refuses is retried for AUTH_WAIT seconds only
    and named as the -i key.
    The GPUs' health is read first: a pod to return stops there, nothing installed and nothing written, unless
    `ignore_health`."""
    from fleet.connection import ConnectOptions, connect
    from fleet.engine import session

    progress = progress or (lambda host, msg: None)
    old = load_existing(inventory_path)
    present = find_pod(old, target)
    if present is None:
        known_elsewhere(inventory_path, target)
        name = name or derive_name(target, set(old.hosts) | set(old.groups) if old else set())
        check_name(name, old, target)
        _no_credentials(overrides or {}, inventory_path)
        target.vars = dict(overrides or {})   # the settings it is provisioned with stay with it
        inventory = write_entry(inventory_path, name, target, commit=False)   # validated, not yet written
    else:
        inventory = old
    host = inventory.hosts[present.name if present else name]
    own = entry_vars(inventory_path, present.name) if present and overrides else {}
    own_where = dict(host.var_where)     # file:line of each, before --set stands over them
    if overrides:
        host.vars = {**host.vars, **overrides}
        host.var_where = {**host.var_where, **{n: f"--set {n}" for n in overrides}}
    result = BootstrapResult(host.name, inventory_path, target, existing=present is not None)
    if present and name and name != present.name:
        progress(host.name, f"already in {inventory_path} as {present.name!r}; --name {name!r} not used")
    if present and target.pins and host.vars.get("cuda_keyring_pins") != target.pins:
        # the entry is left as it was (as for every other setting): the pins serve this run only
        host.vars = {**host.vars, "cuda_keyring_pins": dict(target.pins)}
        host.var_where = {**host.var_where, "cuda_keyring_pins": "--keyring-pins"}
        progress(host.name, f"--keyring-pins used for this run only: {present.name}'s entry in {inventory_path} is "
                            "left as it was (add them under its vars: cuda_keyring_pins to keep them)")
    roles = session.roles_of([host], inventory.roles_path)[host.name]   # bad roles and variables stop here
    if present is None:   # the entry keeps the values as checked: --set verify_perf=off is written false
        target.vars = {name: host.vars[name] for name in target.vars}
    else:                 # a retry keeps its --set too: the summary's `fleet apply --limit NAME` must run the same
        result.kept = kept_values(present.name, {n: host.vars[n] for n in overrides or {}}, own, own_where)
    result.vars = dict(host.vars)

    def on_key(message: str) -> None:
        result.host_key = message.split(": ", 1)[-1]
        progress(host.name, message.split(": ", 1)[-1])

    # A second bootstrap of this pod, or of a pod deriving the same name, stops here: before contacting it.
    claim = hostlock.reserve(inventory_path, host.name, (target.address, target.port))
    options = ConnectOptions(accept_new_host_keys=True, connect_timeout=connect_timeout, wait=wait,
                             auth_wait=min(wait, AUTH_WAIT), known_hosts=known_hosts, on_new_host_key=on_key)
    started = time.monotonic()
    conn = None
    try:
        with _phase(result, "connect"):
            progress(host.name, f"connecting to {host.target} (waiting up to {wait:g}s for a pod still booting; a "
                                f"refused key is tried for {min(wait, AUTH_WAIT):g}s while the provider may still "
                                "be installing it)")
            try:
                conn = connect(host, options)
            except AuthRefused:
                raise AuthRefused(_refused(host, target, min(wait, AUTH_WAIT))) from None
        _provision(conn, host, inventory, roles, result, progress, on_task, ignore_health)
    except FleetError as exc:
        if isinstance(exc, InputError):
            raise
        result.error = str(exc) + (_resume_note(result) if result.added else "")
    finally:
        if conn is not None:
            result.remote_commands = conn.remote_commands
            conn.close()
        claim.close()
        result.seconds = round(time.monotonic() - started, 3)
    return result


def _healthy_enough(facts: dict, host: Host, result: BootstrapResult, progress: Progress, ignore_health: bool) -> bool:
    """The GPUs' verdict, read off the first probe (it carried `fleet health`'s sources; no command of its own)
    before anything is installed: a pod whose verdict is "return this pod" (a fault only its provider can fix) is not
    worth the gigabytes."""
    from fleet.workflows import health

    verdict = result.health = health.of_facts(facts, host)
    progress(host.name, f"GPU health: {verdict.reason}")
    if verdict.verdict != "return" or ignore_health:
        return True
    result.error = (f"{host.name}: {verdict.reason}. Nothing was installed (fleet's probe keeps only its helper "
                    f"programs, in /var/lib/fleet/bin): {verdict.way_out}; or run the same bootstrap with "
                    "--ignore-health to provision it anyway")
    return False


def _provision(conn, host: Host, inventory: Inventory, roles, result: BootstrapResult, progress: Progress,
               on_task=None, ignore_health: bool = False) -> None:
    from fleet.engine import Setup, converge

    setup = Setup(roles, facts_dir=inventory.facts_dir, progress=progress, on_task=on_task)
    with _phase(result, "facts"):
        observed, planned = _preview(conn, host, setup, result, progress, ignore_health)
    if observed is None:     # a pod to return: nothing recorded, nothing written
        return
    problem = _cannot_provision(observed, planned)
    if problem:
        result.error = f"{host.name} cannot be provisioned: {problem}"
        return
    if not result.existing:
        write_entry(result.inventory, host.name, result.target)
        result.added = True
        remember(result.inventory)    # a known inventory: forget and the next bootstrap look there too
        progress(host.name, f"added to {result.inventory}")
    elif result.kept:
        write_vars(result.inventory, host.name, result.kept)
        progress(host.name, f"kept in its entry in {result.inventory}: "
                            + ", ".join(f"{n}={shown(v)}" for n, v in result.kept.items()))
    report = converge(conn, host, setup, observed)   # the preview's probe is the apply's: the pod is asked once
    result.report, result.facts = report, report.facts
    from fleet.engine import session
    result.vars = session.variables(report.facts, host.vars)   # where the pod's volume put the venv, if it did
    result.phases["apply"] = round(report.phases.get("probe", 0) + report.phases.get("apply", 0), 3)
    result.phases["verify"] = report.phases.get("verify", 0.0)
    failed = [t for t in report.tasks if t.status == "failed"]
    if report.error or failed:
        what = report.error or f"{failed[0].role}: {failed[0].task}: {failed[0].reason}"
        result.error = f"{host.name}: {what}" + _resume_note(result)


def _preview(conn, host: Host, setup, result: BootstrapResult, progress: Progress, ignore_health: bool):
    """The facts phase: the apply's own first probe and plan (nothing changed on the pod but fleet's helper
    programs, installed by digest as any apply's probe installs them), the facts recorded as a --check would. The
    apply goes on from this very probe (converge's `first`): one probe, not two. verify is left out of it
    (without_records): after any change it runs again anyway, so it runs once, after the changes. The probe also
    carries `fleet health`'s own sources, so the GPUs are judged from it first: (None, None) for a pod to return."""
    from fleet.engine import final_facts, judge, last_facts, observe, plan, session
    from fleet.workflows import health

    observed = observe(conn, host, setup, last_facts(setup, host), without_records=True,
                       also=health.extra_sections())
    if not _healthy_enough(observed.facts, host, result, progress, ignore_health):
        result.facts = observed.facts
        return None, None
    if observed.refuse:
        result.facts = observed.facts
        session.record(setup.facts_dir, host.name, observed.facts)
        return observed, None
    result.facts = final_facts(observed, judge(observed, check_mode=True))
    session.record(setup.facts_dir, host.name, result.facts)
    return observed, plan(observed)


def _resume_note(result: BootstrapResult) -> str:
    return (f"; it stays in {result.inventory} as {result.name}: fix the cause and run the same bootstrap again "
            "(what is done is not redone)")


def _cannot_provision(observed, planned) -> str | None:
    """Why this pod cannot be provisioned, from the check-mode preview (refused, disk, a check that cannot run)."""
    if observed.refuse:
        return observed.refuse
    broken = [t for t in planned.entries if t.status == "failed"]
    if broken:
        return f"{broken[0].role}: {broken[0].task}: {broken[0].reason}"
    system = observed.facts.get("system") or {}
    free = system.get("disk_free_gb")
    if free is None:
        return None
    for task in planned.to_apply:                # the plan's changing tasks, as decided once for these facts
        need = task.resource.p.get("min_free_gb")
        if need and float(free) < float(need):
            return (f"only {float(free):g} GB free at {system.get('disk_path') or '/'}, and {task.spec.role} needs "
                    f"{float(need):g} GB; free space, or point python_env at a bigger volume")
    return None


@contextmanager
def _phase(result: BootstrapResult, name: str):
    started = time.monotonic()
    try:
        yield
    finally:
        result.phases[name] = round(time.monotonic() - started, 3)
