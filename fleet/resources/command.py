"""A command guarded by `creates` (a path it makes) and/or `unless` (a command that succeeds once done)."""

from __future__ import annotations

from fleet.resources.base import NEEDS_CHANGE, Param, Resource, q, qpath


class Command(Resource):
    concurrent_check = False          # it runs what the role says: alone, after fleet's own checks
    type_name = "command"
    params = {"cmd": Param((str,), required=True), "creates": Param((str,)), "unless": Param((str,)),
              "root": Param((bool,), default=False)}

    requires_one_of = (("creates", "unless"), ", or it would run on every apply")


    def describe(self) -> str:
        return f"run {self.p['cmd']}"

    def check(self) -> str:
        lines = []
        if self.p["creates"]:
            lines.append(f"if [ -e {qpath(self.p['creates'])} ]; then echo 'exists: '{q(self.p['creates'])}; exit 0; fi")
        if self.p["unless"]:
            lines.append(f"if ( {self.p['unless']} ) >/dev/null 2>&1; then echo 'unless-condition holds'; exit 0; fi")
        lines.append(f"echo 'needs to run'; exit {NEEDS_CHANGE}")
        return "\n".join(lines)

    def apply(self) -> str:
        return f"set -e\n{self.p['cmd']}"
