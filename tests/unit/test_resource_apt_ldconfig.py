"""apt and ldconfig resources would change this machine, so their snippets run against stand-in commands.

The real `apt-get`, `dpkg-query`, `apt-mark` and `ldconfig` are replaced (PATH) by small bash scripts that
keep their state under tmp_path and log every argv, and the files under /etc these resources write are
redirected into tmp_path by a subclass. The snippets themselves are the real ones. The lab tests run the
same resources against real apt/dpkg and ld.so.
"""

from __future__ import annotations

import pytest

from fleet.resources.apt import Apt
from fleet.resources.ldconfig import Ldconfig
from resource_shell import apply_text, check_text, sh, syntax_ok

FAKE_APT = {
    "dpkg-query": """
pkg="${@: -1}"
[ -e "$FAKE/installed/$pkg" ] || exit 1
case "$*" in *Version*) cat "$FAKE/installed/$pkg" ;; *) printf 'install ok installed' ;; esac
""",
    "apt-get": """
[ "$1 $2" = "-o DPkg::Lock::Timeout=$FAKE_TIMEOUT" ] || { echo "apt-get without the lock timeout: $*" >&2; exit 100; }
shift 2
[ "$1" = install ] || exit 0
for arg in "$@"; do
  case "$arg" in
    -*) ;;
    install) ;;
    */*.deb) touch "$FAKE/installed/$(cat "$arg")" ;;  # the test's keyring .deb holds its package name
    *=*) [ ! -e "$FAKE/held/${arg%%=*}" ] || { echo "E: Held packages were changed" >&2; exit 100; }
         printf '%s' "${arg#*=}" > "$FAKE/installed/${arg%%=*}" ;;   # name=version: that version
    *) touch "$FAKE/installed/$arg" ;;
  esac
done
""",
    "apt-mark": """
case "$1" in
  hold) shift; for p in "$@"; do touch "$FAKE/held/$p"; done ;;
  unhold) shift; for p in "$@"; do rm -f "$FAKE/held/$p"; done ;;
  showhold) ls "$FAKE/held" ;;
esac
""",
    "ldconfig": """
if [ "$1" = -p ]; then cat "$FAKE/cache" 2>/dev/null; exit 0; fi
: > "$FAKE/cache"
for conf in "$FAKE"/conf.d/*.conf; do
  while IFS= read -r dir; do
    for lib in "$dir"/*; do [ -e "$lib" ] && printf '\\t%s (libc6,AArch64) => %s\\n' "${lib##*/}" "$lib" >> "$FAKE/cache"; done
  done < "$conf"
done
""",
}


def fake_tools(root, lock_timeout="600"):
    """A PATH prefix with the stand-ins, each logging its argv to $FAKE/log."""
    bin_dir = root / "bin"
    for sub in ("bin", "installed", "held", "conf.d", "sources.list.d"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    for name, body in FAKE_APT.items():
        path = bin_dir / name
        path.write_text(f'#!/bin/bash\nprintf "%s\\0" {name} "$@" >> "$FAKE/log"; printf "\\1" >> "$FAKE/log"\n{body}')
        path.chmod(0o755)
    return {"path_prefix": bin_dir, "env": {"FAKE": str(root), "FAKE_TIMEOUT": lock_timeout}}


def calls(root) -> list[list[str]]:
    """Every logged argv, the command's name first (arguments NUL-separated, calls \\1-separated)."""
    text = (root / "log").read_text() if (root / "log").exists() else ""
    return [call.split("\0")[:-1] for call in text.split("\1")[:-1]]


class LocalApt(Apt):
    """apt whose sources.list.d is under tmp_path."""

    root = None

    def _source_file(self):
        return f"{self.root}/sources.list.d/{self.p['repo_name']}.list"

    @property
    def status_file(self):   # dpkg's status file, which the check's fast path reads (absent: dpkg-query answers)
        return f"{self.root}/status"


class LocalLdconfig(Ldconfig):
    root = None

    def _conf(self):
        return f"{self.root}/conf.d/{self.p['name']}.conf"


def local(cls, root, **params):
    cls.root = root
    return cls(cls.validate(params, "role.yaml:3"))


def run_check(res, tools):
    rc, out = sh(check_text(res), **tools)
    return res.parse(rc, out)


def test_apt_installs_keyring_repo_and_packages_then_holds_them(tmp_path):
    tools = fake_tools(tmp_path)
    deb = tmp_path / "cuda-keyring_1.1-1_all.deb"
    deb.write_text("cuda-keyring")
    res = local(LocalApt, tmp_path, packages=["cuda-toolkit-13-0"], keyring_deb=f"file://{deb}", hold=True,
                repo="deb [signed-by=/usr/share/keyrings/cuda.gpg] https://example.invalid/ /", repo_name="cuda")
    first = run_check(res, tools)
    assert (first.in_state, first.reason) == (False, "not installed: cuda-toolkit-13-0 cuda-keyring")
    rc, out = sh(apply_text(res), **tools)
    assert rc == 0, out
    assert run_check(res, tools).reason == "installed and held"
    assert (tmp_path / "sources.list.d" / "cuda.list").read_text() == res.p["repo"] + "\n"
    apt_calls = [c[1:] for c in calls(tmp_path) if c[0] == "apt-get"]
    assert apt_calls[-1] == ["-o", "DPkg::Lock::Timeout=600", "install", "-y", "-q", "--no-install-recommends",
                             "cuda-toolkit-13-0"]
    assert [c for c in calls(tmp_path) if c[0] == "apt-mark" and c[1] == "hold"] == [
        ["apt-mark", "hold", "cuda-toolkit-13-0"]]


def test_apt_check_notices_a_missing_hold_and_a_changed_source(tmp_path):
    tools = fake_tools(tmp_path)
    (tmp_path / "installed" / "cuda-compat-13-0").touch()
    res = local(LocalApt, tmp_path, packages=["cuda-compat-13-0"], hold=True)
    assert run_check(res, tools).reason == "cuda-compat-13-0 installed but not held"
    (tmp_path / "held" / "cuda-compat-13-0").touch()
    assert run_check(res, tools).in_state
    res2 = local(LocalApt, tmp_path, packages=["cuda-compat-13-0"], repo="deb https://mirror.invalid/ /")
    assert run_check(res2, tools).reason == f"apt source {tmp_path}/sources.list.d/fleet.list differs"


STATUS = """Package: cuda-compat-13-0
Status: {compat} ok installed
Architecture: amd64

Package: cuda-keyring
Status: install ok installed
Architecture: all

Package: nvpl
Status: deinstall ok config-files
"""


@pytest.mark.parametrize("compat, calls_tools", [("hold", False), ("install", True)])
def test_apt_check_reads_dpkgs_status_file_once_and_asks_the_tools_only_when_it_cannot_vouch(tmp_path, compat,
                                                                                            calls_tools):
    """Installed and held per /var/lib/dpkg/status: in state with no dpkg-query and no apt-mark; not held there:
    the tools answer as before (their stand-ins here say held, so the reason shows who answered)."""
    tools = fake_tools(tmp_path)
    (tmp_path / "status").write_text(STATUS.format(compat=compat))
    for pkg in ("cuda-compat-13-0", "cuda-keyring"):
        (tmp_path / "installed" / pkg).touch()
    (tmp_path / "held" / "cuda-compat-13-0").touch()
    res = local(LocalApt, tmp_path, packages=["cuda-compat-13-0"], keyring_deb="https://x.invalid/k.deb", hold=True)
    result = run_check(res, tools)
    assert (result.in_state, result.reason) == (True, "installed and held")
    assert bool([c for c in calls(tmp_path) if c[0] in ("dpkg-query", "apt-mark")]) == calls_tools
    for pkg in ("nvpl", "cuda-absent"):   # removed (config files left) or never there: dpkg-query answers
        other = local(LocalApt, tmp_path, packages=[pkg])
        assert run_check(other, tools).reason == f"not installed: {pkg}"


def test_apt_waits_for_a_busy_dpkg_with_the_timeout_asked_for(tmp_path):
    tools = fake_tools(tmp_path, lock_timeout="1200")
    res = local(LocalApt, tmp_path, packages=["nvpl"], lock_timeout="1200")  # as a rendered template gives it
    rc, out = sh(apply_text(res), **tools)
    assert rc == 0, out
    assert [c[1:3] for c in calls(tmp_path) if c[0] == "apt-get"] == [["-o", "DPkg::Lock::Timeout=1200"]] * 2


def test_ldconfig_registers_a_directory_and_notices_a_stale_cache(tmp_path):
    tools = fake_tools(tmp_path)
    libdir = tmp_path / "usr lib" / "cudss"
    libdir.mkdir(parents=True)
    (libdir / "libcudss.so.0").touch()
    res = local(LocalLdconfig, tmp_path, path=str(libdir), name="fleet-cudss")
    assert run_check(res, tools).reason == "not registered"
    rc, out = sh(apply_text(res), **tools)
    assert rc == 0, out
    assert (tmp_path / "conf.d" / "fleet-cudss.conf").read_text() == f"{libdir}\n"
    assert run_check(res, tools).reason == "registered"
    (tmp_path / "cache").write_text("")  # someone ran ldconfig with another config
    assert run_check(res, tools).reason == "registered but loader cache is stale"


@pytest.mark.parametrize("res, system_file", [
    (Apt(Apt.validate({"packages": ["a", "b"], "keyring_deb": "https://x/k.deb", "repo": "deb x /", "hold": True},
                      "r:1")), "/etc/apt/sources.list.d/fleet.list"),
    (Apt(Apt.validate({"packages": ["a"]}, "r:1")), None),
    (Ldconfig(Ldconfig.validate({"path": "/opt/nvidia/cudss/lib", "name": "fleet-cudss"}, "r:1")),
     "/etc/ld.so.conf.d/fleet-cudss.conf"),
], ids=["apt-everything", "apt-plain", "ldconfig"])
def test_the_real_snippets_parse_and_name_the_system_files(res, system_file):
    syntax_ok(check_text(res))
    syntax_ok(apply_text(res))
    if system_file:  # what the stand-in subclasses above redirect into tmp_path
        assert system_file in res.check() and system_file in res.apply()


def test_apt_pinned_version_one_behind_is_replaced_and_held_again(tmp_path):
    """`name=version` (the fabric manager at the driver's exact version, issue 28): a held package one version
    behind is not in state; apply unholds, installs the pinned version and holds it; then it is in state."""
    tools = fake_tools(tmp_path)
    (tmp_path / "installed" / "nvidia-fabricmanager-570").write_text("570.124.06-1")
    (tmp_path / "held" / "nvidia-fabricmanager-570").touch()
    res = local(LocalApt, tmp_path, packages=["nvidia-fabricmanager-570=570.133.20-1"], hold=True)
    first = run_check(res, tools)
    assert (first.in_state, first.reason) == (False, "not installed: nvidia-fabricmanager-570=570.133.20-1")
    rc, out = sh(apply_text(res), **tools)
    assert rc == 0, out
    assert (tmp_path / "installed" / "nvidia-fabricmanager-570").read_text() == "570.133.20-1"
    assert (tmp_path / "held" / "nvidia-fabricmanager-570").exists()
    assert run_check(res, tools).reason == "installed and held"


def test_apt_pinned_package_not_installed_is_named_once_with_its_version(tmp_path):
    """The lab's NVSwitch board without a fabric manager (tests/lab/test_fabric_lab.py) was told "not installed:
    nvidia-fabricmanager-580 ... nvidia-fabricmanager-580=580.159.04-1": each missing pinned package twice."""
    tools = fake_tools(tmp_path)
    res = local(LocalApt, tmp_path, packages=["nvidia-fabricmanager-570=570.133.20-1", "libnvidia-nscq-570=570.133.20-1"],
                hold=True)
    assert run_check(res, tools).reason == ("not installed: nvidia-fabricmanager-570=570.133.20-1 "
                                            "libnvidia-nscq-570=570.133.20-1")


def test_a_failed_pinned_install_puts_back_the_hold_it_dropped(tmp_path):
    """The fabric manager's pin: unheld to move it, the install fails (the pinned version is not there), and the
    hold it had is back (the stand-in apt-mark keeps holds as files, as dpkg's selections keep them)."""
    tools = fake_tools(tmp_path)
    (tmp_path / "installed" / "nvidia-fabricmanager-570").write_text("570.124.06-1")
    (tmp_path / "held" / "nvidia-fabricmanager-570").touch()
    (tmp_path / "bin" / "apt-get").write_text('#!/bin/bash\n[ "$3" = install ] || exit 0\n'
                                            'echo "E: Version \'570.133.20-1\' for \'nvidia-fabricmanager-570\' was not '
                                            'found" >&2; exit 100\n')
    res = local(LocalApt, tmp_path, packages=["nvidia-fabricmanager-570=570.133.20-1"], hold=True)
    rc, out = sh(apply_text(res), **tools)
    assert rc == 100 and "the hold on nvidia-fabricmanager-570 is restored" in out, out
    assert (tmp_path / "held" / "nvidia-fabricmanager-570").exists()
    assert (tmp_path / "installed" / "nvidia-fabricmanager-570").read_text() == "570.124.06-1"
    # not held before: nothing to put back, and no hold is invented
    (tmp_path / "held" / "nvidia-fabricmanager-570").unlink()
    rc, out = sh(apply_text(res), **tools)
    assert rc == 100 and "restored" not in out and not (tmp_path / "held" / "nvidia-fabricmanager-570").exists()
