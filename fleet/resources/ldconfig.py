"""A library directory registered with the dynamic loader (/etc/ld.so.conf.d/<name>.conf + ldconfig).

Not for cuda-compat: a compat libcuda registered once breaks CUDA for every process (error 803) as soon as the
kernel driver is no longer older than it (a pod restarted on another host, a driver upgraded). cuda-compat goes
into the ld cache only behind a gate that re-checks the kernel driver at every start, as NVIDIA's container
toolkit does: fleet/resources/compat_gate.py and roles/cuda_compat (shared/DOMAIN.md, forward compatibility).
"""

from __future__ import annotations

from fleet.shell import write_file_script
from fleet.resources.base import NEEDS_CHANGE, Param, Resource, one_line_problem, plain_name_problem, q


class Ldconfig(Resource):
    type_name = "ldconfig"
    needs_root = True
    params = {"path": Param((str,), required=True, check=one_line_problem),  # ld.so.conf is line-based
              "name": Param((str,), required=True, check=plain_name_problem)}

    def locks(self) -> frozenset[str]:
        return frozenset({"ldcache"})   # it edits /etc/ld.so.conf.d or /etc/ld.so.preload and runs ldconfig

    def _conf(self) -> str:
        return f"/etc/ld.so.conf.d/{self.p['name']}.conf"

    def describe(self) -> str:
        return f"register {self.p['path']} with the loader ({self._conf()})"

    def check(self) -> str:
        conf, path = q(self._conf()), q(self.p["path"])
        return (f"if [ \"$(cat {conf} 2>/dev/null)\" != {path} ]; then echo 'not registered'; exit {NEEDS_CHANGE}; fi\n"
                f"if [ -d {path} ] && [ -n \"$(ls -A {path} 2>/dev/null)\" ] && "
                f"! ldconfig -p | grep -qF \" => \"{path}/; then echo 'registered but loader cache is stale'; "
                f"exit {NEEDS_CHANGE}; fi\necho registered")

    def apply(self) -> str:
        # In a subshell: the atomic write's own `set -e` and EXIT trap stay its own.
        return (f"set -e\n(\n{write_file_script(self._conf(), self.p['path'] + chr(10))})\n"
                f"ldconfig\necho 'registered '{q(self.p['path'])}")
