"""The local connection: a real child bash on this machine."""

import os
import stat

import pytest

from fleet.connection import ConnectOptions, LocalConnection, connect
from fleet.shell import stdin_for, wrap_bash
from fleet.errors import HostError
from fleet.inventory import Host


@pytest.fixture
def local():
    conn = connect(Host("here", connection="local"), ConnectOptions())
    assert isinstance(conn, LocalConnection)
    yield conn
    conn.close()


def test_run_stdout_exit_and_count(local):
    first = local.run("echo hello; echo world")
    assert (first.exit, first.stdout, first.stderr, first.ok) == (0, "hello\nworld\n", "", True)
    assert local.run("exit 7").exit == 7
    assert local.remote_commands == 2


def test_stderr_is_kept_apart(local):
    res = local.run("echo out; echo err >&2; exit 1")
    assert (res.exit, res.stdout, res.stderr, res.ok) == (1, "out\n", "err\n", False)


def test_runs_in_bash_with_stdin_closed(local):
    res = local.run('echo "$BASH_VERSION" | cut -c1; cat; echo done')
    assert res.stdout.split() == [res.stdout[0], "done"] and res.stdout[0].isdigit()


ODD_VALUES = {
    "SPACES": "a b  c",
    "QUOTES": "it's \"quoted\"",
    "DOLLAR": "$HOME ${PATH} $(id -u) `id -u`",
    "NEWLINE": "one\ntwo",
    "EMPTY": "",
    "GLOB": "*",
}


def test_env_values_reach_the_script_literally(local, tmp_path):
    canary = tmp_path / "pwned"
    env = dict(ODD_VALUES, INJECT=f"'; touch {canary}; '")
    script = "".join(f'printf "%s\\0" "${name}"\n' for name in env)
    res = local.run(script, env=env)
    assert res.exit == 0
    assert res.stdout.split("\0")[:-1] == list(env.values())
    assert not canary.exists()


def test_bad_env_name_is_refused(local):
    with pytest.raises(ValueError, match="environment variable name"):
        local.run("true", env={"NOT-A-NAME": "x"})


def test_timeout_exits_124_and_kills_the_whole_group(local, tmp_path):
    marker = tmp_path / "survived"
    res = local.run(f"echo started; (sleep 0.6; touch {marker}) & sleep 30", timeout=0.3)
    assert res.exit == 124
    assert res.stdout == "started\n"
    assert "timed out after 0.3s" in res.stderr
    # the background child was in the same process group: it died too
    assert local.run("sleep 0.6").exit == 0 and not marker.exists()


def test_on_output_streams_lines_while_the_script_runs(local, tmp_path):
    go = tmp_path / "go"
    seen = []

    def on_line(line):
        seen.append(line)
        if line == "waiting":
            go.touch()  # the script only finishes once it sees this: proves lines arrive before the end

    script = f"echo waiting; for i in $(seq 100); do [ -e {go} ] && break; sleep 0.1; done; [ -e {go} ]; echo -n last"
    res = local.run(script, on_output=on_line)
    assert res.exit == 0
    assert seen == ["waiting", "last"]
    assert res.stdout == "waiting\nlast"


def test_write_file_atomic_with_mode(local, tmp_path):
    path = tmp_path / "deep" / "dir" / "hello.txt"
    local.write_file(str(path), "first\n", mode=0o600)
    assert path.read_text() == "first\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    inode = path.stat().st_ino
    local.write_file(str(path), "second ünïcode\n", mode=0o755)
    assert path.read_text() == "second ünïcode\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o755
    assert path.stat().st_ino != inode  # replaced by rename, never rewritten in place
    assert sorted(os.listdir(path.parent)) == ["hello.txt"]  # no temp file left behind
    assert local.remote_commands == 2


def test_write_file_with_odd_path(local, tmp_path):
    path = tmp_path / "it's a $dir" / "f `x`"
    local.write_file(str(path), b"\x00\x01binary\xff")
    assert path.read_bytes() == b"\x00\x01binary\xff"
    assert stat.S_IMODE(path.stat().st_mode) == 0o644


def test_write_file_failure_is_a_host_error(local, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(HostError, match="could not write"):
        local.write_file(str(blocker / "under-a-file"), "x")


def test_large_content_takes_the_stdin_path(local, tmp_path):
    data = bytes(range(256)) * 1200  # 300 kB of every byte value: well over one argument's limit
    path = tmp_path / "big.bin"
    local.write_file(str(path), data, mode=0o640)
    assert path.read_bytes() == data
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert sorted(os.listdir(tmp_path)) == ["big.bin"]


def test_large_script_keeps_env_exit_status_and_stdin_closed(local):
    padding = "# " + "'\"$x" * 40_000 + "\n"   # quotes and dollars that must survive untouched
    script = padding + 'echo "$GREETING"; cat; echo "ünï"; exit 5\n'
    assert stdin_for(script) is not None and len(wrap_bash(script)) < 1000
    res = local.run(script, env={"GREETING": "hi there"})
    assert (res.exit, res.stdout, res.stderr) == (5, "hi there\nünï\n", "")


def test_a_truncated_large_script_is_not_run(tmp_path):
    """The stdin path refuses a script cut short in transit (a dropped connection), never runs half of it."""
    marker = tmp_path / "ran"
    script = f"touch {marker}\n" + "#" * 200_000 + "\n"
    command, payload = wrap_bash(script), stdin_for(script)
    local = LocalConnection(Host("here", connection="local"))
    res = local._exec(command, stdin=payload[: len(payload) // 2], timeout=30, on_output=None)
    assert res.exit == 125 and "arrived truncated" in res.stderr
    assert not marker.exists()


def test_sudo_wraps_only_when_not_root(local, monkeypatch):
    assert wrap_bash("id -u", sudo=True).startswith("sudo -n -H bash -c 's=$(head -c 41 | base64 -d) && ")
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    res = local.run("echo $((1 + 1))", sudo=True)  # as root: no sudo (which may not even be installed)
    assert (res.exit, res.stdout) == (0, "2\n")


def _long(tail: str) -> str:
    return "".join(f"# line {i} of a long probe\n" for i in range(2000)) + tail


def test_a_long_script_travels_gzipped_and_runs(local):
    import base64

    script = _long('echo "ünï $((6 * 7))"; exit 3\n')
    raw = base64.encodebytes(script.encode())
    assert len(stdin_for(script)) * 4 < len(raw)          # what travels is a fraction of the script
    assert "gzip -dc" in wrap_bash(script) and "gzip" not in wrap_bash("echo short")
    res = local.run(script)
    assert (res.exit, res.stdout, res.stderr) == (3, "ünï 42\n", "")
    assert local.remote_commands == 1


def test_a_host_without_gzip_is_sent_the_script_as_it_is(tmp_path, monkeypatch):
    """busybox images may lack gzip: the host says so before reading the script, and it is sent again
    uncompressed, then never compressed again on that connection."""
    import shutil

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("bash", "head", "base64", "cat", "touch"):
        (bin_dir / tool).symlink_to(shutil.which(tool))
    monkeypatch.setenv("PATH", str(bin_dir))
    conn = LocalConnection(Host("here", connection="local"))
    assert conn.run("command -v gzip || echo none").stdout == "none\n"   # this "host" really has no gzip
    ran = tmp_path / "ran"
    res = conn.run(_long(f"touch {ran}; echo once\n"))
    assert (res.exit, res.stdout) == (0, "once\n") and ran.exists()
    assert conn.remote_commands == 3 and conn.gzip is False      # the refused gzipped try counts
    assert conn.run(_long("echo again\n")).stdout == "again\n"
    assert conn.remote_commands == 4
