"""The host's verify: a check that proves the GPU stack works and answers with data (a resource type of its own).

Like an assert it has nothing to apply and is judged on the last probe; unlike one, it carries its own hooks:

- `gate(body, max_age)`  the check behind its fingerprint (fleet/resources/verify_gate.py): the host answers "reused" when
                         nothing verify proved has changed since its own record, and that record passed (a failed
                         verify is never reused), so a converged host imports no torch. The variables verify reads
                         (`variables`, name -> digest, set when its role is rendered) are parts of that fingerprint
- `read(section, seen)`  the answer: a reused verify stands on the last record (read back by this very probe) and is
                         folded into the facts; a run one carries the new fingerprint and why it ran
- `record(result, providers)`  the verify record (fleet/remote/verify_record.py), what the host and the facts keep
- `fold(facts, record)`  the facts with it: `verify`, and what importing torch told of torch

The engine asks every resource the same questions (Resource.gate/read/record/fold, no-ops by default), so a user
role's own JSON `assert` is only an assert: it never becomes, or overwrites, the host's verify.

Its program is the package fleet/remote/verify/, shipped as one plain Python file (verify_program; no templating: the
role renders only its CONFIG_JSON, the `config` parameter), or a role's own `script`; either prints {"passed": bool, "checks": [{"name", "passed", "detail"}], ...}
as its last JSON line.
"""

from __future__ import annotations

import dataclasses
import functools
import posixpath
import threading
from datetime import datetime, timezone

from fleet.facts import fingerprint
from fleet.facts.fingerprint import fingerprint_program
from fleet.facts.shells import trace_program
from fleet.facts.software import VERIFY_PATH
from fleet import programs
from fleet.resources import verify_gate
from fleet.resources.assert_ import Assert, json_result, judge_python
from fleet.resources.base import NEEDS_CHANGE, CheckResult, Param, q, qpath


class Verify(Assert):
    type_name = "verify"
    default_deadline = 3600     # a perf run on a busy GPU (fleet.sections.bounded)
    params = {name: spec for name, spec in Assert.params.items() if name != "json"}
    params["interpreter"] = Param((str,), default="python", check=Assert.params["interpreter"].check)
    params["config"] = Param((str,), default="{}")   # the verify program's CONFIG_JSON (one JSON object)
    requires_one_of = ((), "")   # no script: fleet's own verify program (fleet/remote/verify/)
    writes_record = True
    record_path = VERIFY_PATH
    reads_variables = True   # decide_tasks sets `variables`: the digests of the variables its role reads
    reads_kept = verify_gate.HOST_PARTS   # its gate reads the probe's fingerprint: it starts once that is taken

    def __init__(self, values):
        super().__init__(values)
        self.variables: dict[str, str] = {}

    @property
    def venv(self) -> str:
        """The environment verify's python lives in (its bin/python's grandparent; none for a bare `python3`)."""
        python = str(self.p["python"])
        return posixpath.dirname(posixpath.dirname(python)) if "/" in python else ""

    def environment(self) -> str:
        """fleet.facts.shells' trace of the startup files, handed to the verify program (FLEET_VERIFY_TRACE) as the
        command that runs it (an installed helper program), which it runs only where a kind of process failed
        through LD_LIBRARY_PATH, to name the file:line that set it."""
        return f"env FLEET_VERIFY_TRACE=\"bash $(printf %q \"{trace_program().at}\")\" "

    @classmethod
    def gate_age(cls, host_vars: dict, roles) -> float | None:
        """verify_max_age: the host's, else a role's default, else 24h ('24h', '30m', '2d' or seconds)."""
        max_age = host_vars.get("verify_max_age")
        if max_age in (None, ""):   # 0 is an answer (verify every time), not "unset"
            max_age = next((r.defaults["verify_max_age"] for r in roles if r.defaults.get("verify_max_age")),
                           verify_gate.DEFAULT_MAX_AGE)
        return verify_gate.parse_age(max_age)

    def programs(self) -> tuple:
        """fleet's verify program and the shells' trace it runs; the fingerprint the gate takes when it runs in a
        command without the facts probe. None for a role's own verify script."""
        if self.p.get("script"):
            return ()
        return (verify_program(), trace_program(), fingerprint_program(self.venv))

    def check(self) -> str:
        """A role's own `script` as an assert runs it; else fleet's verify program (fleet/remote/verify/, as
        verify_program ships it), installed by digest (fleet/programs.py), run with the rendered config: its output, and a
        NEEDS_CHANGE exit where it failed, as an assert's."""
        if self.p.get("script"):
            return super().check()
        program = verify_program()
        # issue 49: <python_env>/bin/python runs as root on a pod: judged first, started isolated (-I) from /
        run = f"{self.environment()}\"$fleet_prog\" -I \"{program.at}\" {q(self.p['config'])}"
        return (programs.use(program) + programs.use(trace_program()) + judge_python(self.p["python"])
                + f"out=$(timeout {int(self.p['timeout'])} {run} 2>&1); rc=$?\n"
                f"printf '%s\\n' \"$out\"\n[ $rc -eq 0 ] && exit 0; exit {NEEDS_CHANGE}")

    def gate(self, body: str, max_age: float | None) -> str:
        if self.p.get("script"):
            return verify_gate.gated(body, self.venv, max_age, variables=self.variables)
        return verify_gate.gated(body, self.venv, max_age, variables=self.variables,
                                 fingerprint=fingerprint_program(self.venv))

    def parse(self, rc: int, output: str) -> CheckResult:
        return json_result(self.p["msg"], rc, output)

    def read(self, rc: int, output: str, seen) -> tuple[CheckResult, dict]:
        gate = verify_gate.read(output)
        last = seen.facts.get("verify") if isinstance(seen.facts.get("verify"), dict) else None
        if gate.reused:
            if last is None:   # the host vouched for a record this probe could not read back
                why = "the host reports a current verify record, but it could not be read back; run fleet verify"
                return CheckResult(False, why, error=why), {}
            last = fingerprint.judged(last, [])   # the host vouched for it: nothing it proved has changed
            result = CheckResult(bool(last.get("passed")), str(last.get("summary") or "verify reused"))
            return result, {"verify": {**last, "reused": True, "checked_at": _now(),
                                       "reason": f"reused: nothing it proved has changed since {last.get('at')}"
                                                 + _compared(last)}}
        result = self.parse(rc, gate.output)
        if isinstance(result.data, dict):
            why = verify_gate.run_reason(last, gate, seen.max_age, datetime.now(timezone.utc), seen.forced)
            result = dataclasses.replace(result, data={
                **result.data, "fingerprint": gate.fingerprint, "fingerprint_parts": gate.parts, "reused": False,
                "reason": "ran: " + why})
        return result, {}

    def record(self, result: CheckResult, providers: dict) -> dict | None:
        from fleet.remote.verify_record import verify_record

        return None if result.data is None else verify_record(result.data, providers)

    def reused(self, facts: dict) -> bool:
        verify = facts.get("verify")
        return isinstance(verify, dict) and bool(verify.get("reused"))

    def fold(self, facts: dict, record: dict) -> dict:
        from fleet.facts.record import with_last_verify

        record = fingerprint.judged(record, [])   # it ran on the host as last probed: its verdict holds
        return {**facts, "verify": record, "torch": with_last_verify(facts.get("torch"), record)}


def _compared(last: dict) -> str:
    said = fingerprint.compared(last.get("fingerprint_parts") if isinstance(last.get("fingerprint_parts"), dict) else None)
    return f" (compared: {said})" if said else ""


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def verify_program() -> programs.Program:
    """fleet's verify program as it is shipped (_verify_program). Built once per run: without the lock every host's
    thread that asked before the first had finished built it again (60 bundles for 100 hosts, ~8 ms each)."""
    with _BUILDING:
        return _verify_program()


_BUILDING = threading.Lock()


@functools.lru_cache(maxsize=None)
def _verify_program() -> programs.Program:
    """fleet's verify program as it is shipped: the package fleet/remote/verify/ with the facts' own loader rules and
    trace reader (fleet/remote/loader_rules.py, trace.py), the rules that name why a command resolves as it does
    (resolve_rules.py) and the families table the trace and verify judge by (families.py) bundled into one file
    (fleet.remote.bundle)."""
    from fleet import remote

    modules = ("families", "loader_rules", "resolve_rules", "trace", *remote.package("verify"))
    return programs.Program("verify", remote.bundle("verify.runner", modules, {"tables": tables_module()}))


def tables() -> dict:
    """fleet's tables the verify program judges by, the same for every host of a fleet version: the all-reduce rows
    (fleet/knowledge/allreduce.py), the copy engines' floors (copy_floors.py) and each platform's perf rows
    (platforms.py). They travel inside the installed program (tables_module), so a host's CONFIG_JSON names only
    which apply to it (fleet/remote/verify/config.py with_tables) and a changed row changes the program's digest."""
    from fleet.knowledge import allreduce, copy_floors, platforms

    return {"ALLREDUCE": allreduce.config(), "COPY_FLOORS": copy_floors.rows(),
            "PERF": {p.name: [row.as_dict() for row in p.perf] for p in platforms.PLATFORMS}}


def tables_module() -> str:
    """The module `tables` of the verify program (fleet_remote.tables on the host): tables() as Python literals."""
    return "".join(f"{name} = {value!r}\n" for name, value in tables().items())
