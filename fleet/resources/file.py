"""A whole file: content (inline or a role template), mode and owner; replaced atomically."""

from __future__ import annotations

import hashlib

from fleet.shell import write_file_script
from fleet.resources.base import DIFF_MARK, NEEDS_CHANGE, Param, Resource, mode_problem, mode_text, q, qpath

_DIFF_LIMIT = 65536


class File(Resource):
    type_name = "file"
    path_param = "path"
    template_target = "content"
    params = {
        "path": Param((str,), required=True),
        "content": Param((str,)),
        "template": Param((str,)),      # a file under the role's templates/, rendered by the role loader
        "mode": Param((str, int), default="0644", check=mode_problem),
        "owner": Param((str,)),
        "root": Param((bool,), default=None),
        # a file already there, whatever it holds, is left as it is: fleet writes it only where it is missing (a
        # venv's bin/pip where the venv was made without pip's scripts; pip's own, where present, is pip's)
        "missing_only": Param((bool,), default=False),
    }

    def locks(self) -> frozenset[str]:
        return frozenset({f"path:{self.p['path']}"})

    def describe(self) -> str:
        return f"write {self.p['path']}"


    def _mode(self) -> str:
        return mode_text(self.p["mode"])

    def _content(self) -> str:
        return self.p["content"] or ""

    def wanted_text(self) -> str:
        return self._content()

    def check(self) -> str:
        path = qpath(self.p["path"])
        want = hashlib.sha256(self._content().encode()).hexdigest()
        owner = (f"[ \"$(stat -c %U {path})\" = {q(self.p['owner'])} ] || why=\"$why owner\"\n"
                 if self.p["owner"] else "")
        present = (f"if [ -e {path} ]; then echo 'present: left as it is (written only where missing)'; exit 0; fi\n"
                   if self.p["missing_only"] else "")
        return (
            present +
            f"if [ ! -f {path} ]; then echo 'absent'; exit {NEEDS_CHANGE}; fi\n"
            "why=''\n"
            f"fleet_h=$(sha256sum < {path}); [ \"${{fleet_h%% *}}\" = {q(want)} ] || why=\"$why content\"\n"
            f"[ \"$(stat -c %a {path})\" = {q(self._mode())} ] || why=\"$why mode\"\n"
            f"{owner}"
            "if [ -z \"$why\" ]; then echo 'content, mode and owner match'; exit 0; fi\n"
            "echo \"differs:$why\"\n"
            f"if [ \"$(wc -c < {path})\" -le {_DIFF_LIMIT} ] && grep -Iq . {path} 2>/dev/null; then\n"
            f"  printf '\\n{DIFF_MARK}\\n'; cat {path}\nfi\n"
            f"exit {NEEDS_CHANGE}\n"
        )

    def apply(self) -> str:
        path = self.p["path"]
        # a ~/ path expands on the host: given as a shell word
        return write_file_script(path, self._content(), mode=int(self._mode(), 8), owner=self.p["owner"],
                                 path_word=qpath(path))
