"""A tarball unpacked under a prefix (NVIDIA's redist tarballs), done once: `creates` marks it done.

Never half done, never more than asked for:
- the tarball is fetched to a temp dir and, with `sha256`, checked before anything is unpacked;
- it is unpacked into a temp dir beside `dest`, then renamed into place (a new prefix) or copied over an
  existing one under an "incomplete" marker removed last: a copy cut short leaves the marker, so the check
  says "not done" even when the `creates` file already arrived;
- tar runs with --no-same-owner --no-same-permissions: as root, GNU tar otherwise keeps the archive's owners
  and its setuid/setgid bits (tar(1), "--same-owner ... default for superuser"; "-p ... default for superuser").
"""

from __future__ import annotations

import re

from fleet.resources.base import NEEDS_CHANGE, Param, Resource, q, qpath

INCOMPLETE = ".fleet-archive-incomplete"
_SHA256 = re.compile(r"^[0-9a-fA-F]{64}\Z")


def sha256_problem(value) -> str | None:
    return None if _SHA256.match(str(value)) else "must be 64 hex digits (sha256sum's output)"


def verify_sha256(file: str, want: str | None, what: str) -> str:
    """Shell that refuses `file` unless its sha256 is `want` (nothing when no digest was given)."""
    if not want:
        return ""
    return (f"got=$(sha256sum -- {file} | cut -d' ' -f1)\n"
            f"if [ \"$got\" != {q(want.lower())} ]; then echo \"sha256 of \"{q(what)}\" is $got, expected \"{q(want.lower())}"
            "\"; refusing it\"; exit 1; fi\n")


class Archive(Resource):
    type_name = "archive"
    default_deadline = 1800     # downloads (fleet.sections.bounded)
    needs_root = True
    apply_needs = ("fetch",)
    params = {"url": Param((str,), required=True), "dest": Param((str,), required=True),
              "creates": Param((str,), required=True), "strip_components": Param((int,), default=1),
              "sha256": Param((str,), check=sha256_problem)}

    def locks(self) -> frozenset[str]:
        return frozenset({f"path:{self.p['dest']}"})

    def describe(self) -> str:
        return f"unpack {self.p['url']} into {self.p['dest']}"

    def check(self) -> str:
        creates, marker = qpath(self.p["creates"]), f"{qpath(self.p['dest'])}/{INCOMPLETE}"
        return (f"if [ -e {marker} ]; then echo 'an earlier unpack into '{q(self.p['dest'])}' did not finish'; "
                f"exit {NEEDS_CHANGE}; fi\n"
                f"if [ -e {creates} ]; then echo 'present: '{q(self.p['creates'])}; exit 0; fi\n"
                f"echo 'absent: '{q(self.p['creates'])}; exit {NEEDS_CHANGE}")

    def apply(self) -> str:
        dest = qpath(self.p["dest"])
        return ("set -e\n"
                "d=$(mktemp -d); x=''; trap 'rm -rf -- \"$d\" ${x:+\"$x\"}' EXIT\n"
                f"echo 'fetch '{q(self.p['url'])}\n"
                f"fleet_fetch {q(self.p['url'])} \"$d/archive\"\n"
                + verify_sha256('"$d/archive"', self.p["sha256"], self.p["url"])
                + f"parent=$(dirname -- {dest}); mkdir -p -- \"$parent\"\n"
                "x=$(mktemp -d \"$parent/.fleet-archive.XXXXXX\")\n"
                "tar -xf \"$d/archive\" -C \"$x\" --no-same-owner --no-same-permissions "
                f"--strip-components={int(self.p['strip_components'])}\n"
                f"if [ ! -e {dest} ]; then chmod 755 \"$x\"; mv -T -- \"$x\" {dest}; x=''\n"
                f"else touch {dest}/{INCOMPLETE}; cp -a \"$x/.\" {dest}/; sync; rm -f {dest}/{INCOMPLETE}; fi\n")
