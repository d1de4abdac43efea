"""A git checkout pinned at a ref (tag, branch or commit), cloned through a temp dir so it is never half there."""

from __future__ import annotations

from .base import NEEDS_CHANGE, Param, Resource, q, qpath


class Git(Resource):
    type_name = "git"
    path_param = "dest"
    needs_root = True
    params = {"repo": Param((str,), required=True), "ref": Param((str,), required=True),
              "dest": Param((str,), required=True), "root": Param((bool,), default=None)}

    def describe(self) -> str:
        return f"check out {self.p['repo']} at {self.p['ref']} in {self.p['dest']}"


    def check(self) -> str:
        dest, ref = qpath(self.p["dest"]), q(self.p["ref"])
        # A checkout root owns, read by a non-root user: git refuses "dubious ownership" unless told it is safe.
        return (
            f"git() {{ command git -c safe.directory={dest} \"$@\"; }}\n"
            f"if [ ! -d {dest}/.git ]; then echo 'not cloned'; exit {NEEDS_CHANGE}; fi\n"
            f"head=$(git -C {dest} rev-parse HEAD 2>/dev/null)\n"
            f"want=$(git -C {dest} rev-parse --verify -q {ref}^{{commit}} 2>/dev/null)\n"
            f"url=$(git -C {dest} config --get remote.origin.url)\n"
            f"if [ \"$url\" != {q(self.p['repo'])} ]; then echo \"origin is $url\"; exit {NEEDS_CHANGE}; fi\n"
            f"if [ -n \"$want\" ] && [ \"$head\" = \"$want\" ]; then echo \"at \"{ref}\" ($head)\"; exit 0; fi\n"
            f"echo \"at ${{head:-nothing}}, want \"{ref}; exit {NEEDS_CHANGE}\n"
        )

    def apply(self) -> str:
        dest, ref, repo = qpath(self.p["dest"]), q(self.p["ref"]), q(self.p["repo"])
        return (
            "set -e\n"
            f"if [ ! -d {dest}/.git ] || [ \"$(git -C {dest} config --get remote.origin.url)\" != {repo} ]; then\n"
            f"  parent=$(dirname -- {dest}); mkdir -p -- \"$parent\"\n"
            "  tmp=$(mktemp -d \"$parent/.fleet-clone.XXXXXX\"); trap 'rm -rf -- \"$tmp\"' EXIT\n"
            f"  echo 'git clone '{repo}\n"
            f"  git clone -q --no-checkout {repo} \"$tmp/repo\"\n"
            f"  git -C \"$tmp/repo\" -c advice.detachedHead=false checkout -q {ref}\n"
            f"  rm -rf -- {dest}; mv -- \"$tmp/repo\" {dest}\n"
            "else\n"
            f"  git -C {dest} fetch -q --tags origin\n"
            f"  git -C {dest} -c advice.detachedHead=false checkout -q --force {ref}\n"
            "fi\n"
            f"echo 'checked out '{ref}\": $(git -C {dest} rev-parse HEAD)\"\n"
        )
