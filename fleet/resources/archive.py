"""A tarball unpacked under a prefix (NVIDIA's redist tarballs), done once: `creates` marks it done."""

from __future__ import annotations

from .base import FETCH, NEEDS_CHANGE, Param, Resource, q, qpath


class Archive(Resource):
    type_name = "archive"
    needs_root = True
    params = {"url": Param((str,), required=True), "dest": Param((str,), required=True),
              "creates": Param((str,), required=True), "strip_components": Param((int,), default=1)}

    def describe(self) -> str:
        return f"unpack {self.p['url']} into {self.p['dest']}"

    def check(self) -> str:
        return (f"if [ -e {qpath(self.p['creates'])} ]; then echo 'present: '{q(self.p['creates'])}; exit 0; fi\n"
                f"echo 'absent: '{q(self.p['creates'])}; exit {NEEDS_CHANGE}")

    def apply(self) -> str:
        dest = qpath(self.p["dest"])
        return (f"set -e\n{FETCH}\n"
                "d=$(mktemp -d); trap 'rm -rf -- \"$d\"' EXIT\n"
                f"echo 'fetch '{q(self.p['url'])}\n"
                f"fleet_fetch {q(self.p['url'])} \"$d/archive\"\n"
                f"mkdir -p \"$d/x\" && tar -xf \"$d/archive\" -C \"$d/x\" --strip-components={int(self.p['strip_components'])}\n"
                f"mkdir -p -- {dest} && cp -a \"$d/x/.\" {dest}/\n")
