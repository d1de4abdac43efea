"""fleet/shell.py: the one sudo rule, the one "is this user root", and the shell text it writes, run in real bash."""

from __future__ import annotations

import os
import subprocess

import pytest

from fleet import shell
from fleet.engine import hostlock
from fleet.connection import Connection, LocalConnection, Result
from fleet.inventory import Host


class Recording(Connection):
    """A connection whose commands are recorded, not run: what `run` hands to the transport."""

    def __init__(self, host: Host):
        super().__init__(host)
        self.commands: list[str] = []

    def _exec(self, command, *, stdin, timeout, on_output) -> Result:
        self.commands.append(command)
        return Result(0, "", "")


@pytest.mark.parametrize("wants_root, user_is_root, expected", [
    (True, False, True),     # a task wanting root, on a host where fleet logs in as ubuntu: sudo
    (True, True, False),     # the same task as root: no sudo (a pod has no sudo at all)
    (False, False, False),   # the user's own file (~/.bashrc), or a check: never sudo
    (False, True, False),
])
def test_needs_sudo_is_one_rule(wants_root, user_is_root, expected):
    assert shell.needs_sudo(wants_root, user_is_root) is expected


def test_user_is_root_over_ssh_is_the_login_user():
    assert shell.user_is_root(Host("pod", user="root"))
    assert not shell.user_is_root(Host("spark", user="ubuntu"))


def test_user_is_root_on_this_machine_is_fleets_own_user():
    """`connection: local` runs as whoever runs fleet: `user:` (default root) says nothing about it."""
    here = os.geteuid() == 0
    assert shell.user_is_root(Host("here", connection="local")) is here
    assert shell.user_is_root(Host("here", connection="local", user="ubuntu")) is here
    assert LocalConnection(Host("here", connection="local")).is_root is here


def test_connections_take_the_rule_from_shell():
    for user, sudo, wrapped in [("ubuntu", True, True), ("ubuntu", False, False), ("root", True, False)]:
        conn = Recording(Host("h", user=user))
        assert conn.is_root is (user == "root")
        conn.run("id -u", sudo=sudo)
        # every command fleet sends carries its mark (env.sh then never runs the cuda-compat gate)
        assert conn.commands[-1].startswith(shell.REMOTE_MARK)
        assert conn.commands[-1].startswith(shell.REMOTE_MARK + "sudo -n -H bash -c ") is wrapped, (user, sudo)
        conn.write_file("/etc/fleet/x", "x", sudo=sudo)
        assert conn.commands[-1].startswith(shell.REMOTE_MARK + "sudo -n -H bash -c ") is wrapped, (user, sudo)


def test_as_root_leaves_a_snippet_alone_unless_the_rule_says_sudo():
    snippet = "echo hi"
    assert shell.as_root(snippet, wants_root=False, user_is_root=False) == snippet   # checks never sudo
    assert shell.as_root(snippet, wants_root=True, user_is_root=True) == snippet
    assert shell.as_root(snippet, wants_root=True, user_is_root=False) == (      # never in sudo's argv
        "if fleet_s=$(mktemp); then\nprintf '%s' 'ZWNobyBoaQ==' | base64 -d > \"$fleet_s\"\n"
        "sudo -n -H bash \"$fleet_s\" </dev/null; fleet_s_rc=$?\n"
        "rm -f -- \"$fleet_s\"; (exit \"$fleet_s_rc\"); else false; fi")
    assert shell.sudo_prefix(False) == "" and shell.sudo_prefix(True) == "sudo -n -H "


def _fake_sudo(tmp_path) -> dict:
    """A `sudo` first on PATH that logs its arguments and runs the command (this test must not need sudoers)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "sudo").write_text('#!/bin/bash\necho "sudo $*" >> "$SUDO_LOG"\n'
                                  'while [[ "$1" == -* ]]; do shift; done\nexec "$@"\n')
    (bin_dir / "sudo").chmod(0o755)
    return dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}", SUDO_LOG=str(tmp_path / "sudo.log"),
                TMPDIR=str(tmp_path))


@pytest.mark.parametrize("size", [10, 200_000])
def test_as_root_runs_the_very_snippet_under_sudo_short_or_long(tmp_path, size):
    """Short: one `bash -c` argument. Long (past the argument limit): a private temp file, removed afterwards."""
    payload = "x" * size + " it's \"quoted\" $HOME `x`"
    snippet = f"printf '%s' {shell.quote(payload)} > {shell.quote(str(tmp_path / 'out'))}"
    env = _fake_sudo(tmp_path)
    # On stdin, as one section of a larger script travels (a long one could not be an argument of this bash)
    done = subprocess.run(["bash", "-s"], input=shell.as_root(snippet, wants_root=True, user_is_root=False),
                          env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "out").read_text() == payload
    assert (tmp_path / "sudo.log").read_text().startswith("sudo -n -H bash ")
    assert not [p for p in tmp_path.iterdir() if p.name.startswith("tmp")]   # the long form's temp file is gone


def test_exports_quote_every_value_and_refuse_a_bad_name():
    env = {"A": "it's $HOME; rm -rf /", "B": "two\nlines"}
    script = shell.exports(env) + 'printf "%s|%s" "$A" "$B"'
    assert subprocess.run(["bash", "-c", script], capture_output=True, text=True).stdout == f"{env['A']}|{env['B']}"
    with pytest.raises(ValueError, match="not valid"):
        shell.exports({"A;B": "x"})


def test_write_file_script_replaces_the_file_whole_and_leaves_no_temp(tmp_path):
    target = tmp_path / "dir with space" / "it's.conf"
    for content in ("first\n", "second, longer than the first\n"):
        done = subprocess.run(["bash", "-c", shell.write_file_script(str(target), content, mode=0o600)],
                              capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        assert target.read_text() == content and (target.stat().st_mode & 0o777) == 0o600
    assert sorted(p.name for p in target.parent.iterdir()) == ["it's.conf"]


def test_the_apply_lock_is_roots_whoever_connects_over_ssh():
    """One lock per host for what root changes (issue 49): root over SSH takes /var/lib/fleet's itself, another
    user takes the same one through sudo -n (its own ~/.cache/fleet only where sudo is refused, on the host); this
    machine (connection: local): the user's own ~/.cache/fleet."""
    as_root = hostlock.wrap("true", Recording(Host("pod", user="root")))
    assert "fleet_lock_dir=/var/lib/fleet;" in as_root and "fleet_sudo=\n" in as_root
    as_user = hostlock.wrap("true", Recording(Host("spark", user="ubuntu")))
    assert "fleet_lock_dir=/var/lib/fleet;" in as_user and "fleet_sudo=sudo\n" in as_user
    here = LocalConnection(Host("here", connection="local"))
    assert 'fleet_lock_dir="$HOME"/.cache/fleet;' in hostlock.wrap("true", here)


def test_quote_path_expands_only_a_leading_tilde(tmp_path):
    home = str(tmp_path / "a home")
    cases = {"~": home, "~/it's here": f"{home}/it's here", "/etc/x y": "/etc/x y", "a/~/b": "a/~/b",
             "~root/x": "~root/x"}
    for path, expected in cases.items():
        done = subprocess.run(["bash", "-c", f"printf '%s' {shell.quote_path(path)}"], capture_output=True,
                              text=True, env=dict(os.environ, HOME=home))
        assert done.stdout == expected, path
