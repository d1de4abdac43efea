"""apt packages, with NVIDIA-style keyring .deb and repository, waiting for a busy dpkg instead of failing.

Fresh cloud VMs hold the dpkg lock for minutes (unattended-upgrades, cloud-init): `DPkg::Lock::Timeout`
makes apt wait. Pinned packages can be held so unattended-upgrades cannot swap libraries under a driver.
"""

from __future__ import annotations

from .base import FETCH, NEEDS_CHANGE, Param, Resource, plain_name_problem, q


class Apt(Resource):
    type_name = "apt"
    needs_root = True
    params = {
        "packages": Param((list,), required=True),
        "keyring_deb": Param((str,)),           # URL of a keyring package such as cuda-keyring_1.1-1_all.deb
        "keyring_package": Param((str,), default="cuda-keyring"),
        "repo": Param((str,)),                  # a one-line apt source, written to sources.list.d/<repo_name>.list
        "repo_name": Param((str,), default="fleet", check=plain_name_problem),
        "hold": Param((bool,), default=False),
        "lock_timeout": Param((int,), default=600),
    }

    def describe(self) -> str:
        return "install " + " ".join(self.p["packages"])

    def _source_file(self) -> str:
        return f"/etc/apt/sources.list.d/{self.p['repo_name']}.list"

    def check(self) -> str:
        wanted = list(self.p["packages"]) + ([self.p["keyring_package"]] if self.p["keyring_deb"] else [])
        lines = ["missing=''"]
        for pkg in wanted:
            lines.append(f"dpkg-query -W -f='${{Status}}' {q(pkg)} 2>/dev/null | grep -q 'ok installed' "
                         f"|| missing=\"$missing \"{q(pkg)}")
        lines.append(f"if [ -n \"$missing\" ]; then echo \"not installed:$missing\"; exit {NEEDS_CHANGE}; fi")
        if self.p["repo"]:
            lines.append(f"[ \"$(cat {q(self._source_file())} 2>/dev/null)\" = {q(self.p['repo'])} ] || "
                         f"{{ echo {q('apt source ' + self._source_file() + ' differs')}; exit {NEEDS_CHANGE}; }}")
        if self.p["hold"]:
            for pkg in self.p["packages"]:
                lines.append(f"apt-mark showhold 2>/dev/null | grep -qxF {q(pkg)} || "
                             f"{{ echo {q(pkg + ' installed but not held')}; exit {NEEDS_CHANGE}; }}")
        lines.append("echo 'installed" + (" and held" if self.p["hold"] else "") + "'")
        return "\n".join(lines)

    def apply(self) -> str:
        opts = f"-o DPkg::Lock::Timeout={int(self.p['lock_timeout'])}"
        lines = ["set -e", "export DEBIAN_FRONTEND=noninteractive", FETCH]
        if self.p["keyring_deb"]:
            pkg = q(self.p["keyring_package"])
            lines += [f"if ! dpkg-query -W -f='${{Status}}' {pkg} 2>/dev/null | grep -q 'ok installed'; then",
                      "  d=$(mktemp -d); trap 'rm -rf \"$d\"' EXIT",
                      f"  fleet_fetch {q(self.p['keyring_deb'])} \"$d/keyring.deb\"",
                      f"  apt-get {opts} install -y \"$d/keyring.deb\"",
                      "fi"]
        if self.p["repo"]:
            src = q(self._source_file())
            lines += [f"printf '%s\\n' {q(self.p['repo'])} > {src}.fleet-tmp && mv -f {src}.fleet-tmp {src}"]
        pkgs = " ".join(q(p) for p in self.p["packages"])
        lines += ["echo 'apt-get update'", f"apt-get {opts} update -q",
                  f"echo {q('apt-get install ' + ' '.join(self.p['packages']))}",
                  f"apt-get {opts} install -y -q --no-install-recommends {pkgs}"]
        if self.p["hold"]:
            lines.append(f"apt-mark hold {pkgs}")
        return "\n".join(lines)
