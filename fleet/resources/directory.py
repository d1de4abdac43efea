"""A directory with a mode (and owner)."""

from __future__ import annotations

from fleet.resources.base import NEEDS_CHANGE, Param, Resource, mode_problem, mode_text, q, qpath


class Directory(Resource):
    type_name = "directory"
    path_param = "path"
    params = {"path": Param((str,), required=True),
              "mode": Param((str, int), default="0755", check=mode_problem),
              "owner": Param((str,)), "root": Param((bool,), default=None)}

    def locks(self) -> frozenset[str]:
        return frozenset({f"path:{self.p['path']}"})

    def describe(self) -> str:
        return f"create directory {self.p['path']}"


    def _mode(self) -> str:
        return mode_text(self.p["mode"])

    def check(self) -> str:
        path = qpath(self.p["path"])
        owner = f" && [ \"$(stat -c %U {path})\" = {q(self.p['owner'])} ]" if self.p["owner"] else ""
        return (f"if [ -d {path} ] && [ \"$(stat -c %a {path})\" = {q(self._mode())} ]{owner}; then "
                f"echo present; exit 0; fi\n"
                f"if [ -d {path} ]; then echo 'mode or owner differs'; else echo absent; fi; exit {NEEDS_CHANGE}")

    def apply(self) -> str:
        path = qpath(self.p["path"])
        owner = f"\nchown {q(self.p['owner'])} {path}" if self.p["owner"] else ""
        return f"set -e\nmkdir -p -- {path}\nchmod {q(self._mode())} {path}{owner}"
