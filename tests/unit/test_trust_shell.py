"""fleet/shell.py's remote functions run by real bash: the trust judgement (TRUST_FN) where a tool it relies on
answers otherwise than on the lab (getfacl installed, stat failing), and the one retry of downloads (RETRY_FN).
Each stand-in prints what the real tool prints (getfacl(1) -c -p: `user:NAME:perms` with `#effective:` where the
mask takes a permission away; git's `error: RPC failed; curl 56 Recv failure: Connection reset by peer`)."""

from __future__ import annotations

import os
import struct
import subprocess
from pathlib import Path

from fleet.resources.pip import Pip
from fleet.shell import RETRY_FN, TRUST_FN
from resource_shell import apply_text, check_text


def bash(script: str, path_prefix: Path | None = None, env: dict | None = None) -> subprocess.CompletedProcess:
    full = {**os.environ, **(env or {})}
    if path_prefix:
        full["PATH"] = f"{path_prefix}:{full['PATH']}"
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=full, timeout=60)


def tool(bin_dir: Path, name: str, body: str) -> None:
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / name).write_text("#!/bin/bash\n" + body)
    (bin_dir / name).chmod(0o755)


def with_acl(path: Path, uid: int = 65534) -> None:
    """setfacl -m u:UID:rwx PATH, as setfacl writes it (system.posix_acl_access: version 2, tag/perm/id entries)."""
    entries = [(0x01, 7, 0xFFFFFFFF), (0x02, 7, uid), (0x04, 5, 0xFFFFFFFF), (0x10, 7, 0xFFFFFFFF),
               (0x20, 5, 0xFFFFFFFF)]
    os.setxattr(path, "system.posix_acl_access",
                struct.pack("<I", 2) + b"".join(struct.pack("<HHI", *e) for e in entries))


def test_an_acl_is_judged_by_what_getfacl_says_it_grants(tmp_path):
    shared = tmp_path / "shared"
    (shared / "venv").mkdir(parents=True)
    with_acl(shared)
    bin_dir = tmp_path / "bin"
    judge = f"{TRUST_FN}\nfleet_trust {shared}/venv/bin/python"
    # no getfacl (Ubuntu's base image): an ACL that cannot be read is refused
    assert bash(judge + " ; echo end").stdout.strip() == (
        f"{shared} has a POSIX ACL that cannot be read here (no getfacl: install the acl package)\nend")
    tool(bin_dir, "getfacl", "printf 'user::rwx\\nuser:alice:rwx\\t\\t#effective:r-x\\ngroup::r-x\\nmask::r-x\\n"
                             "other::r-x\\n'\n")
    assert bash(judge, bin_dir).stdout == ""            # the mask takes alice's write away: nothing to refuse
    tool(bin_dir, "getfacl", "printf 'user::rwx\\nuser:alice:rwx\\ngroup::r-x\\nmask::rwx\\nother::r-x\\n"
                             "default:group:staff:rwx\\n'\n")
    assert bash(judge, bin_dir).stdout.strip() == (
        f"{shared} is owned by root with mode 775 and a POSIX ACL granting write to "
        "user:alice:rwx,default:group:staff:rwx")


def test_what_stat_cannot_answer_for_is_refused(tmp_path):
    bin_dir = tmp_path / "bin"
    tool(bin_dir, "stat", "echo \"stat: cannot statx '$3': Input/output error\" >&2; exit 1\n")
    out = bash(f"{TRUST_FN}\nfleet_trust /usr/bin/python3; echo \"rc=$?\"", bin_dir).stdout
    assert out.startswith("/usr/bin/python3 cannot be examined (stat: cannot statx") and "Input/output error" in out
    assert bash(f"{TRUST_FN}\nfleet_trust /usr/bin/python3").stdout == ""          # the real stat: trusted


def test_a_group_writable_root_directory_counts_only_while_root_s_group_is_root_alone(tmp_path):
    shared = tmp_path / "g"
    shared.mkdir()
    shared.chmod(0o775)                                       # root:root 775
    etc = tmp_path / "etc"
    etc.mkdir()
    (etc / "group").write_text("root:x:0:alice\n")
    fn = TRUST_FN.replace("< /etc/group", f"< {etc}/group")   # the same function, reading a group file with a member
    assert bash(f"{TRUST_FN}\nfleet_trust {shared}/x").stdout == ""
    assert bash(f"{fn}\nfleet_trust {shared}/x").stdout.strip() == f"{shared} is owned by root with mode 775"


def test_a_transient_download_failure_is_retried_and_named_a_persistent_one_is_not(tmp_path):
    bin_dir = tmp_path / "bin"
    tool(bin_dir, "fetcher", f"""echo run >> {tmp_path}/runs
if [ "$(wc -l < {tmp_path}/runs)" -lt 2 ]; then
  echo 'error: RPC failed; curl 56 Recv failure: Connection reset by peer' >&2; echo 'fatal: early EOF' >&2; exit 128
fi
echo fetched
""")
    run = bash(f"{RETRY_FN}\nfleet_retry 'git clone' fetcher", bin_dir)
    assert run.returncode == 0 and (tmp_path / "runs").read_text() == "run\nrun\n"
    assert ("fleet: git clone failed with a network error (fatal: early EOF); retry 2 of 5 in 1 s"
            in run.stdout), run.stdout
    assert run.stdout.rstrip().endswith("fetched")
    tool(bin_dir, "missing", f"echo run >> {tmp_path}/runs404\n"
                             "echo 'curl: (22) The requested URL returned error: 404' >&2; exit 22\n")
    run = bash(f"{RETRY_FN}\nfleet_retry 'download of x.deb' missing", bin_dir)
    assert run.returncode == 22 and (tmp_path / "runs404").read_text() == "run\n"
    assert "retry" not in run.stdout and "error: 404" in run.stdout


def test_pip_gets_its_index_credentials_in_its_environment_never_in_argv(tmp_path):
    """The venv's python is a stand-in that records its argv and the index pip would read (PIP_INDEX_URL)."""
    venv = tmp_path / "venv"
    site = venv / "lib" / "python3.12" / "site-packages"
    (site / "pip-24.0.dist-info").mkdir(parents=True)
    (site / "pip-24.0.dist-info" / "RECORD").write_text("pip/__init__.py,,\n")
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (venv / "bin").mkdir()
    (venv / "bin" / "activate").write_text("")
    tool(venv / "bin", "python", f'printf "%s\\n" "$*" >> {tmp_path}/argv; '
                                 'case "$*" in *"-m pip install"*) k=install;; *) k=other;; esac; '
                                 f'printf "%s %s %s\\n" "$k" "$PIP_INDEX_URL" "$PIP_EXTRA_INDEX_URL" >> {tmp_path}/env\n')
    res = Pip(Pip.validate({"packages": ["torch==2.11.0"], "venv": str(venv),
                            "index_url": "https://u:tok-3f9@mirror.example/simple",
                            "extra_index_url": "https://u:tok-3f9@extra.example/simple"}, "role.yaml:1"))
    run = bash(apply_text(res))
    assert run.returncode == 0, run.stdout + run.stderr
    assert "tok-3f9" not in (tmp_path / "argv").read_text()
    assert "-I -m pip install" in (tmp_path / "argv").read_text()          # started -I (isolated, from /)
    # each call of the venv's python, the environment it had: only pip's install gets the index's credentials (the
    # check that drops a broken dist-info first reads no index and gets none)
    calls = (tmp_path / "env").read_text().splitlines()
    assert [c for c in calls if c.startswith("install ")] == [
        "install https://u:tok-3f9@mirror.example/simple https://u:tok-3f9@extra.example/simple"], calls
    assert all(c.strip() == "other" for c in calls if not c.startswith("install ")), calls


def test_a_checkout_whose_git_config_others_can_write_is_not_trusted_by_git(tmp_path):
    """root's checkout, its .git/config writable by others (a credential.helper planted there would run as root
    at the next fetch): git is not told it is safe, the check says why and the apply refuses it, untouched."""
    from fleet.resources.git import Git

    work = tmp_path / "co"
    subprocess.run(["git", "init", "-q", str(work)], check=True)
    subprocess.run(["git", "-C", str(work), "-c", "user.name=t", "-c", "user.email=t@e", "commit", "-q",
                    "--allow-empty", "-m", "c"], check=True)
    subprocess.run(["git", "-C", str(work), "remote", "add", "origin", "https://example.invalid/r.git"], check=True)
    (work / ".git" / "config").chmod(0o666)
    res = Git(Git.validate({"repo": "https://example.invalid/r.git", "ref": "HEAD", "dest": str(work)}, "role.yaml:1"))
    check = bash(check_text(res))
    assert check.returncode == 10 and f"{work}/.git/config is owned by root with mode 666" in check.stdout, check.stdout
    apply = bash(apply_text(res))
    assert apply.returncode == 3 and "refusing to use" in apply.stdout, apply.stdout


def test_curl_gets_the_url_on_stdin_never_in_argv(tmp_path):
    """fleet_fetch hands curl its URL in a -K config on stdin (curl(1): `url = "..."`, backslash and quote escaped)."""
    from fleet.shell import define

    FETCH = define(("fetch",))

    bin_dir = tmp_path / "bin"
    tool(bin_dir, "curl", f'printf "%s\\n" "$*" > {tmp_path}/argv; cat > {tmp_path}/config; : > "${{@: -1}}"\n')
    url = 'https://u:tok-3f9@mirror.example/a"b\\\\c.deb'
    run = bash(f"{FETCH}\nfleet_fetch '{url}' {tmp_path}/out", bin_dir)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "tok-3f9" not in (tmp_path / "argv").read_text() and "-K -" in (tmp_path / "argv").read_text()
    assert (tmp_path / "config").read_text() == 'url = "https://u:tok-3f9@mirror.example/a\\"b\\\\\\\\c.deb"\n'


def test_a_tool_that_ran_out_of_its_own_retries_is_not_retried_again(tmp_path):
    """pip retries a refused connection itself (5 times, with backoff); its lines, as pip 25 printed them on the
    lab with the index unreachable. fleet's retry on top made that 25 runs: it runs the tool once and says why."""
    bin_dir = tmp_path / "bin"
    refused = ("after connection broken by 'NewConnectionError('<pip._vendor.urllib3.connection.HTTPSConnection "
               "object at 0x7f128934ba10>: Failed to establish a new connection: [Errno 111] Connection refused')'"
               ": /whl/cu130/torch/")
    lines = "".join(f"echo \"WARNING: Retrying (Retry(total={n}, connect=None, read=None, redirect=None, "
                    f"status=None)) {refused}\" >&2\n" for n in range(4, -1, -1))
    tool(bin_dir, "pip", f"echo run >> {tmp_path}/runs\n{lines}"
                         "echo 'ERROR: Could not find a version that satisfies the requirement torch==2.11.0 "
                         "(from versions: none)' >&2; exit 1\n")
    run = bash(f"{RETRY_FN}\nfleet_retry 'pip install' pip", bin_dir)
    assert run.returncode == 1 and (tmp_path / "runs").read_text() == "run\n"
    assert "fleet: pip install failed with a network error after its own retries, not retried again" in run.stdout
    assert "retry 2 of 5" not in run.stdout
    tool(bin_dir, "uv", f"echo run >> {tmp_path}/uvruns\n"
                        "echo 'error: Request failed after 3 retries' >&2; "
                        "echo '  Caused by: error sending request for url (https://pypi.org/simple/torch/)' >&2; exit 2\n")
    run = bash(f"{RETRY_FN}\nfleet_retry 'uv pip install' uv", bin_dir)
    assert run.returncode == 2 and (tmp_path / "uvruns").read_text() == "run\n"
