"""apt packages, with NVIDIA-style keyring .deb and repository, waiting for a busy dpkg instead of failing.

Fresh cloud VMs hold the dpkg lock for minutes (unattended-upgrades, cloud-init, apt-daily): `DPkg::Lock::Timeout`
makes apt wait for the dpkg frontend lock (apt 1.9.11, commit de9762d5 "Add support for waiting on the dpkg
lock"), but not for the lists lock `apt-get update` takes (/var/lib/apt/lists/lock: "Could not get lock
/var/lib/apt/lists/lock ... Unable to lock directory"), so every apt command runs in a bounded retry loop that
waits while the failure is a lock. A dpkg run cut short (a dropped connection mid-install) leaves journal files in
/var/lib/dpkg/updates, and apt then refuses to install with "dpkg was interrupted, you must manually run 'dpkg
--configure -a'" (apt-pkg/deb/debsystem.cc checks that directory for digit-named files): the apply runs that
repair once and goes on. Pinned packages can be held so unattended-upgrades cannot swap libraries under a driver.
"""

from __future__ import annotations

from fleet import remote
from fleet.shell import write_file_script
from fleet.resources.archive import sha256_problem, verify_sha256
from fleet.resources.base import NEEDS_CHANGE, Param, Resource, plain_name_problem, q

# `fleet_apt SECONDS CMD...`, apt and dpkg run through their lock and an interrupted dpkg: fleet/remote/apt.sh
APT_RETRY = "\n" + remote.program("apt") + "\n"


# The check's fast path: dpkg's status file read once by one awk, instead of a dpkg-query per package and an
# `apt-mark showhold` (which builds apt's whole cache: most of the check's ~65 ms of CPU in a no-op probe). A
# status paragraph is `Package: NAME` ... `Status: WANT ok installed` (dpkg-query(1), "Status"; deb-control);
# `apt-mark hold` sets the dpkg selection to hold (apt-mark(8)), so a held package's status begins `hold`, which is
# what `apt-mark showhold` lists. It only answers "all installed (and held)"; any package missing, not held, named
# twice (multi-arch) or a status file it cannot read sends the check to dpkg-query and apt-mark as before.
DPKG_STATUS = "/var/lib/dpkg/status"
_FAST_AWK = remote.text("apt_fast.awk")


class Apt(Resource):
    type_name = "apt"
    needs_root = True
    apply_needs = ("fetch",)
    status_file = DPKG_STATUS    # a test points it at its own status file
    params = {
        "packages": Param((list,), required=True),
        "keyring_deb": Param((str,)),           # URL of a keyring package such as cuda-keyring_1.1-1_all.deb
        "keyring_package": Param((str,), default="cuda-keyring"),
        # checked on the host before the keyring is installed; "" = none known (roles pass the pin or nothing:
        # fleet/decide/keyring.py)
        "keyring_sha256": Param((str,), check=lambda v: None if v == "" else sha256_problem(v)),
        "repo": Param((str,)),                  # a one-line apt source, written to sources.list.d/<repo_name>.list
        "repo_name": Param((str,), default="fleet", check=plain_name_problem),
        "hold": Param((bool,), default=False),
        "lock_timeout": Param((int,), default=600),
    }

    def locks(self) -> frozenset[str]:
        # dpkg's own lock, and the ld cache: dpkg's triggers run ldconfig, whose temp file (ld.so.cache~) two
        # ldconfigs at once would write together
        return frozenset({"dpkg", "ldcache"})

    def describe(self) -> str:
        return "install " + " ".join(self.p["packages"])

    def deadline(self) -> int:
        # three apt runs may each wait lock_timeout for another apt's lock, then download and unpack
        return 3 * int(self.p["lock_timeout"]) + 1800

    def _source_file(self) -> str:
        return f"/etc/apt/sources.list.d/{self.p['repo_name']}.list"

    def _names(self) -> list[str]:
        """The packages' names: `name=version` pins a version (apt-get's own syntax), as the fabric manager must
        be exactly the driver's (roles/fabric_manager)."""
        return [str(p).split("=", 1)[0] for p in self.p["packages"]]

    def check(self) -> str:
        wanted = self._names() + ([self.p["keyring_package"]] if self.p["keyring_deb"] else [])
        held = self._names() if self.p["hold"] else []
        lines = [f"fleet_want={q(' '.join(wanted))} fleet_hold={q(' '.join(held))} awk {q(_FAST_AWK)} "
                 f"{q(self.status_file)} 2>/dev/null; fleet_fast=$?",
                 "missing=''"]
        pins = {str(p).split("=", 1)[0]: str(p) for p in self.p["packages"] if "=" in str(p)}
        for pkg in wanted:   # a pinned package not installed is named once, with the version it needs
            lines.append(f"[ $fleet_fast = 0 ] || dpkg-query -W -f='${{Status}}' {q(pkg)} 2>/dev/null | grep -q 'ok installed' "
                         f"|| missing=\"$missing \"{q(pins.get(pkg, pkg))}")
        for name, pin in pins.items():   # the fast path proves no version
            version = pin.split("=", 1)[1]
            lines.append(f"case \"$missing \" in *\" \"{q(pin)}\" \"*) ;; *) "
                         f"[ \"$(dpkg-query -W -f='${{Version}}' {q(name)} 2>/dev/null)\" = {q(version)} ] "
                         f"|| missing=\"$missing \"{q(pin)};; esac")
        lines.append(f"if [ -n \"$missing\" ]; then echo \"not installed:$missing\"; exit {NEEDS_CHANGE}; fi")
        if self.p["repo"]:
            lines.append(f"[ \"$(cat {q(self._source_file())} 2>/dev/null)\" = {q(self.p['repo'])} ] || "
                         f"{{ echo {q('apt source ' + self._source_file() + ' differs')}; exit {NEEDS_CHANGE}; }}")
        if self.p["hold"]:
            for pkg in self._names():
                lines.append(f"[ $fleet_fast = 0 ] || apt-mark showhold 2>/dev/null | grep -qxF {q(pkg)} || "
                             f"{{ echo {q(pkg + ' installed but not held')}; exit {NEEDS_CHANGE}; }}")
        lines.append("echo 'installed" + (" and held" if self.p["hold"] else "") + "'")
        return "\n".join(lines)

    def apply(self) -> str:
        wait = int(self.p["lock_timeout"])
        opts = f"-o DPkg::Lock::Timeout={wait}"
        retry = f"fleet_apt {wait}"
        # LC_ALL=C: fleet_apt reads apt's messages, which a pod's locale would translate.
        lines = ["set -e", "export DEBIAN_FRONTEND=noninteractive LC_ALL=C", APT_RETRY]
        if self.p["keyring_deb"]:
            pkg = q(self.p["keyring_package"])
            lines += [f"if ! dpkg-query -W -f='${{Status}}' {pkg} 2>/dev/null | grep -q 'ok installed'; then",
                      "  d=$(mktemp -d); trap 'rm -rf \"$d\"' EXIT",
                      f"  fleet_fetch {q(self.p['keyring_deb'])} \"$d/keyring.deb\"",
                      verify_sha256('"$d/keyring.deb"', self.p["keyring_sha256"], self.p["keyring_deb"]),
                      f"  {retry} apt-get {opts} install -y \"$d/keyring.deb\"",
                      "  rm -rf -- \"$d\"; trap - EXIT",
                      "fi"]
        if self.p["repo"]:
            # In a subshell: the atomic write's EXIT trap must not replace the keyring's temp-dir cleanup.
            lines += [f"(\n{write_file_script(self._source_file(), self.p['repo'] + chr(10))})"]
        pkgs = " ".join(q(p) for p in self.p["packages"])
        names = " ".join(q(p) for p in self._names())
        if self.p["hold"] and names != pkgs:   # a held package moves to its pinned version only once unheld
            # The holds dropped here are put back however the install ends (its failure, a TERM from the deadline
            # or the connection's end): a failed pinned install never leaves the driver's fabric manager unheld.
            lines += ["fleet_rehold=$(apt-mark showhold 2>/dev/null | grep -xF"
                      + "".join(f" -e {q(n)}" for n in self._names()) + " | tr '\\n' ' ') || fleet_rehold=",
                      "fleet_put_back() { [ -n \"${fleet_rehold// /}\" ] || return 0; "
                      "apt-mark hold $fleet_rehold >/dev/null 2>&1 && "
                      "echo \"fleet: the install did not complete; the hold on ${fleet_rehold% } is restored\" >&2; }",
                      "trap 'fleet_put_back' EXIT; trap 'exit 143' TERM; trap 'exit 130' INT; trap 'exit 129' HUP",
                      f"apt-mark unhold {names} >/dev/null 2>&1 || true"]
        lines += ["echo 'apt-get update'", f"fleet_retry 'apt-get update' {retry} apt-get {opts} update -q",
                  f"echo {q('apt-get install ' + ' '.join(self.p['packages']))}",
                  f"fleet_retry 'apt-get install' {retry} apt-get {opts} install -y -q --no-install-recommends {pkgs}"]
        if self.p["hold"]:
            lines.append(f"apt-mark hold {names}")
            if names != pkgs:
                lines.append("fleet_rehold=; trap - EXIT")
        return "\n".join(lines)
