"""cuda-compat in the ld cache only while the kernel driver needs it: the gate's verdict, checked and applied.

The role cuda_compat installs the gate (roles/cuda_compat/templates/fleet-cuda-compat-gate.sh.j2) that writes
or removes /etc/ld.so.conf.d/000-fleet-cuda-compat.conf at every start; this resource is that same rendered gate
run by fleet: its check (`gate check`, read-only) says whether the drop-in, the ld cache and the gate's record
agree with the kernel driver NOW (a drop-in left by another driver is found and repaired by the next apply), and
its apply runs the gate. The gate is a helper program installed by the digest of its text under /var/lib/fleet/bin
(fleet/programs.py: the text travels only where the host lacks it), so the check answers before the
role's own copy in /usr/local/sbin is installed and the apply never depends on the order of the tasks.

`decided` (decisions.compat.use): where fleet decided compat and the compat package is not installed yet, the
check says so (exit 10), so the plan names the registration the apply will make once the package is there.
"""

from __future__ import annotations

from fleet import programs
from fleet.resources.base import NEEDS_CHANGE, Param, Resource, q

DROP_IN = "/etc/ld.so.conf.d/000-fleet-cuda-compat.conf"   # fleet's own: the loader role leaves it to this one
GATE = "/usr/local/sbin/fleet-cuda-compat-gate"
STATE = "/var/lib/fleet/cuda-compat-gate"


class CompatGate(Resource):
    type_name = "compat_gate"
    needs_root = True
    template_target = "script"
    params = {"script": Param((str,)),            # the gate's text (the role's template)
              "template": Param((str,)),
              "dir": Param((str,), required=True),
              "decided": Param((bool,), default=False)}

    def locks(self) -> frozenset[str]:
        return frozenset({"ldcache"})   # it edits /etc/ld.so.conf.d or /etc/ld.so.preload and runs ldconfig

    def describe(self) -> str:
        return f"{DROP_IN} (naming {self.p['dir']}) only while the kernel driver is older than cuda-compat"

    def programs(self) -> tuple:
        """The rendered gate, installed by its digest (fleet/programs.py) and run from there."""
        return (programs.Program("fleet-cuda-compat-gate", self.p["script"] or ""),)

    def _gate(self, mode: str, who: str) -> str:
        (gate,) = self.programs()
        return f"{programs.use(gate)}sh \"{gate.at}\" {mode} {q(who)}"

    def check(self) -> str:
        pending = ""
        if self.p["decided"]:
            d = q(self.p["dir"])
            # a glob, not `ls`: whether a file is there, without a process
            pending = (f"fleet_g=({d}/libcuda.so.*.*); if ! [ -e \"${{fleet_g[0]}}\" ] && ! [ -L \"${{fleet_g[0]}}\" ]; "
                       "then echo 'cuda-compat is not installed yet: "
                       f"once it is, the gate decides from the kernel driver and writes {DROP_IN} where it is older';"
                       f" exit {NEEDS_CHANGE}; fi\n")
        return pending + self._gate("check", "fleet check")

    def apply(self) -> str:   # an apply is its own command: it carries the gate's text (installed where missing)
        return programs.prelude(self.programs()) + self._gate("run", "fleet apply")
