"""An assertion: a script that must succeed on the host. It has nothing to apply; it is judged on the last probe.

With `json: true` the script prints {"passed": bool, "checks": [{"name", "passed", "detail"}], ...} as its last
JSON line and the failed checks are the reason. It is a role's own check: the host's verify is its own resource
type (fleet/resources/verify.py), and an assert never writes or replaces it.
"""

from __future__ import annotations

from fleet.jsontext import finite
from fleet.remote.verify_record import last_json as _last_json
from fleet.resources.base import CheckResult, NEEDS_CHANGE, Param, Resource, q, qpath

_RUN = {"bash": "bash -c {script}", "python": "{python} -c {script}"}


def _interpreter_problem(value) -> str | None:
    return None if value in _RUN else f"must be one of {', '.join(_RUN)}"


class Assert(Resource):
    concurrent_check = False          # it runs what the role says: alone, after fleet's own checks
    judged = True
    needs = ("trust",)   # judge_python: fleet_judged
    type_name = "assert"
    template_target = "script"
    params = {"script": Param((str,)), "template": Param((str,)),
              "interpreter": Param((str,), default="bash", check=_interpreter_problem),
              "python": Param((str,), default="python3"), "json": Param((bool,), default=False),
              "timeout": Param((int,), default=600), "msg": Param((str,), default="assertion failed")}

    requires_one_of = (("script", "template"), " (a file under the role's templates/)")

    def describe(self) -> str:
        return self.p["msg"]

    def environment(self) -> str:
        """`env NAME=value ` put before the check's interpreter (none for a role's own assert)."""
        return ""

    def check(self) -> str:
        judge = judge_python(self.p["python"]) if self.p["interpreter"] == "python" else ""
        run = self.environment() + _RUN[self.p["interpreter"]].format(script=q(self.p["script"]),
                                                                      python='"$fleet_prog" -I')
        return (f"{judge}out=$(timeout {int(self.p['timeout'])} {run} 2>&1); rc=$?\nprintf '%s\\n' \"$out\"\n"
                f"[ $rc -eq 0 ] && exit 0; exit {NEEDS_CHANGE}")

    def apply(self) -> str:
        return f"echo {q('nothing to apply: ' + self.p['msg'])} >&2; exit 1"

    def parse(self, rc: int, output: str) -> CheckResult:
        if not self.p.get("json"):
            return super().parse(rc, output)
        return json_result(self.p["msg"], rc, output)


def judge_python(python: str) -> str:
    """Shell that judges `python` just before it runs (fleet/shell.py), leaving it in $fleet_prog and the shell in /,
    for `timeout N "$fleet_prog" -I ...` (fleet_trusted_python's way, spelled out: timeout(1) cannot start a shell
    function; -I: no PYTHONPATH/PYTHONHOME from the environment or /etc/environment, no user site, no module from the
    working directory). A python that is not there runs as before, and fails as not in state."""
    return (f"fleet_judged {qpath(python)} 2>/dev/null; fleet_j=$?\n"
            f"[ $fleet_j = 126 ] && {{ fleet_judged {qpath(python)}; exit 126; }}\n"
            f"[ $fleet_j = 0 ] || fleet_prog={qpath(python)}\ncd /\n")


def json_result(msg: str, rc: int, output: str) -> CheckResult:
    """A JSON check's answer: passed when its last JSON line says so and it exited 0; the failed checks as reason."""
    doc = finite(_last_json(output))   # a host's NaN or Infinity: null
    if doc is None:
        return CheckResult(False, f"{msg}: no result ({output.strip()[-300:] or f'exit {rc}'})", error=None)
    failed = [c for c in doc.get("checks", []) if not c.get("passed")]
    reason = "all checks passed" if not failed else "; ".join(f"{c['name']}: {c.get('detail', '')}" for c in failed)
    return CheckResult(bool(doc.get("passed")) and rc == 0, reason, data=doc)
