"""Shell text: the one module that writes the shell code fleet sends to a host.

- Quoting: every value reaches the remote shell through `quote` (shlex.quote), never spliced; `quote_path`
  lets a leading ~/ mean the user's home.
- `exports(env)`: environment variables as quoted `export` lines.
- `wrap_bash(script)`: the command line that runs a script in bash, with `stdin_for` carrying a script too long
  for one argument on stdin instead.
- Sudo: ONE rule (`needs_sudo`), fed by ONE answer to "does this host's user run as root" (`user_is_root`);
  `as_root` applies it to a snippet that is one section of a larger script.
- `write_file_script`: the remote atomic write (temp file in the same directory, fsync, rename).
- Trust, judged in the shell that runs the program, just before it runs (`TRUST_FN`, below): `trusted(...)`
  puts a program from a configured path (the venv's python, pip, uv, a helper fleet installed) behind the
  judgement; `trusted_python(...)` also starts Python isolated from its working directory and the user site.

Section framing (begin/end markers carrying each section's exit status) is fleet/sections.py, the one place
for it; this module holds what a single section's body is made of.
"""

from __future__ import annotations

import base64
import functools
import gzip
import os
import shlex
from typing import Iterable
from fleet import remote

# The last line of every script sent on stdin: a script without it arrived cut short and is never run.
_END_MARK = "# fleet: end of script"
# -n: never prompt (a prompt would hang a non-interactive command; sudo fails at once instead).
# -H: HOME is root's, so root's tools (pip's cache, python's user site) never write into the user's home.
SUDO = "sudo -n -H"

quote = shlex.quote


def quote_path(path: str) -> str:
    """Quote a path, letting a leading ~/ mean the connecting user's home (as a person means it)."""
    path = str(path)
    if path == "~":
        return '"$HOME"'
    if path.startswith("~/"):
        return '"$HOME"/' + quote(path[2:])
    return quote(path)


def join(words: Iterable[str]) -> str:
    """Words as one shell line, each quoted."""
    return shlex.join(list(words))


# -- sudo: one rule ------------------------------------------------------------------------------------------
def user_is_root(host) -> bool:
    """Whether commands on `host` run as root: its `user:` over SSH; this process's own user for a local host
    (`connection: local` runs as whoever runs fleet, whatever `user:` says)."""
    if getattr(host, "connection", "ssh") == "local":
        return os.geteuid() == 0
    return host.user == "root"


def needs_sudo(wants_root: bool, user_is_root: bool) -> bool:
    """The one sudo rule: sudo only where root is wanted and the user is not root already. A check never wants
    root (checks read as the user: a check that needed sudo would prompt, or fail, on every probe)."""
    return bool(wants_root) and not user_is_root


def sudo_prefix(needed: bool) -> str:
    """The words to put before a command that must run as root ("" when `needed` is false)."""
    return f"{SUDO} " if needed else ""


def as_root(snippet: str, *, wants_root: bool, user_is_root: bool, needs: Iterable[str] = ()) -> str:
    """`snippet` (one section of a larger script) under sudo when `needs_sudo` says so, else unchanged. Under sudo
    it runs in a bash of its own: the shared functions it calls (`needs`, FUNCTIONS) go with it."""
    if not needs_sudo(wants_root, user_is_root):
        return snippet
    snippet = define(needs) + snippet
    # Never as an argument (`sudo bash -c '<snippet>'` shows a token in it to every user in /proc/*/cmdline),
    # and this snippet is one section of a larger script, whose stdin is not ours to read: hand it to sudo as a
    # private temp file. printf is a builtin: its arguments are in no process's command line, and no argument
    # limit applies to it.
    packed = base64.b64encode(snippet.encode()).decode()
    # its status is the snippet's, as `sudo bash -c` gave, without leaving the script it is part of
    return ("if fleet_s=$(mktemp); then\n"
            f"printf '%s' '{packed}' | base64 -d > \"$fleet_s\"\n"
            f"{SUDO} bash \"$fleet_s\" </dev/null; fleet_s_rc=$?\n"
            "rm -f -- \"$fleet_s\"; (exit \"$fleet_s_rc\"); else false; fi")


# -- one command ---------------------------------------------------------------------------------------------
def exports(env: dict[str, str] | None) -> str:
    """`export NAME='value'` lines (values quoted); a name that is not an identifier is refused."""
    if not env:
        return ""
    for name in env:
        if not name.isidentifier():
            raise ValueError(f"environment variable name {name!r} is not valid")
    return "".join(f"export {name}={quote(str(value))}\n" for name, value in env.items())


# Every command fleet sends starts with this assignment: the login shell sshd starts sees it in its command string
# ($BASH_EXECUTION_STRING) while it reads ~/.bashrc, and the shells the command starts inherit FLEET_REMOTE=1.
# fleet's env.sh reads it: in fleet's own commands the cuda-compat gate is asked, never run, so a probe or
# --check changes nothing on the host (the cuda_compat role's compat_gate task runs it, in the plan).
REMOTE_MARK = "FLEET_REMOTE=1 "


def wrap_bash(script: str, *, sudo: bool = False, remote: bool = False, compress: bool = True) -> str:
    """The command line that runs `script` in bash (under `sudo -n` when asked); the script itself on stdin.

    A script never travels as an argument: a command line is in /proc/*/cmdline for every user of the host (a
    token in a repo URL, pip credentials, a file's content), and one argument is capped at 128 KiB. It travels
    on stdin (see `stdin_for`), base64-encoded so no locale can mangle it, ending in a marker so a script cut
    short in transit is refused, never run. A script over COMPRESS_OVER bytes travels gzipped (a converged
    host's probe: ~135 KB of shell, ~37 KB gzipped); a host without gzip says NO_GZIP before reading any of it,
    and Connection.run sends it again as it is.
    """
    mark = REMOTE_MARK if remote else ""        # the command line sshd hands the login shell (Connection.run)
    prefix = mark + sudo_prefix(sudo)
    packed, gzipped = _payload(script, compress)
    # head -c: the payload's exact length, so this never waits for an end-of-file that may not come. One simple
    # command, so the login shell execs it: the script's $$ is the session's process group, as a lock records it.
    unpack = f"head -c {len(packed)} | base64 -d" + (" | gzip -dc" if gzipped else "")
    check = f'command -v gzip >/dev/null 2>&1 || {{ echo "{NO_GZIP}" >&2; exit 125; }}; ' if gzipped else ""
    # the first thing the command does, once the login shell's startup files let it start: the connection's
    # first-output deadline waits for this line (fleet/connection/ssh.py), and Connection.run drops it
    started = f"echo {STARTED} >&2; " if remote else ""
    reader = (f'{started}{check}s=$({unpack}) && [ "${{s%{_END_MARK}}}" != "$s" ] || '
              '{ echo "fleet: the script arrived truncated; not running it" >&2; exit 125; }; eval "$s"')
    return f"{prefix}bash -c {quote(reader)}"


def stdin_for(script: str, *, compress: bool = True) -> str | None:
    """What `wrap_bash(script)` expects on stdin: the script (gzipped when long) in base64, ending in a marker."""
    return _payload(script, compress)[0]


# What every remote command prints first on stderr (wrap_bash): the login shell has run its startup files.
STARTED = "@@fleet:started@@"

# Below this many bytes of script gzip saves less than it costs (a process on the host, CPU on the controller).
COMPRESS_OVER = 16 << 10
NO_GZIP = "fleet: no gzip on this host to unpack the script"


@functools.lru_cache(maxsize=64)
def _payload(script: str, compress: bool) -> tuple[str, bool]:
    """(the base64 text sent on stdin, whether it is gzipped); wrap_bash and stdin_for ask for the same script one
    after the other, and hosts in the same state are sent the same script: each is packed once."""
    data = f"{script}\n{_END_MARK}\n".encode()
    gzipped = compress and len(data) > COMPRESS_OVER
    if gzipped:
        data = gzip.compress(data, compresslevel=1, mtime=0)   # level 1: 3.6x on a probe at a third of 6's CPU
    return base64.encodebytes(data).decode(), gzipped


# -- a remote command that ends with its connection -------------------------------------------------------------
# A watchdog that ends the command's session once its sshd is gone: fleet/remote/stop_with_connection.sh (why, there).
STOP_WITH_CONNECTION = remote.program("stop_with_connection") + "\n"


@functools.lru_cache(maxsize=64)
def ends_with_connection(script: str, *, local: bool) -> str:
    """`script` with STOP_WITH_CONNECTION first, for a command on an SSH host (`local`: this machine's child bash,
    which fleet ends itself: `script` unchanged). Kept for the script: hosts sent the same one (a probe's, ~50 KB)
    send the same text, which _payload then finds without reading it again."""
    return script if local else STOP_WITH_CONNECTION + script


# -- files ---------------------------------------------------------------------------------------------------
def write_file_script(path: str, content: str | bytes, *, mode: int = 0o644, owner: str | None = None,
                      path_word: str | None = None) -> str:
    """Shell that replaces `path` atomically (fleet/remote/write_file.sh: a temp file in the same directory, synced,
    then renamed over the old one). `path_word`: the path as a shell word already (a ~/ path, "$HOME"/...)."""
    data = content.encode() if isinstance(content, str) else content
    packed = base64.b64encode(data).decode()
    return (f"fleet_wf_path={path_word or quote(path)} fleet_wf_data={quote(packed)} fleet_wf_mode={mode:o} "
            f"fleet_wf_owner={quote(owner or '')}\n" + remote.program("write_file") + "\n")


# -- trust: judged where a program is run, in the same shell, just before it runs ---------------------------------
# TRUST_FN defines fleet_trust, fleet_judge, fleet_judged, fleet_trusted and fleet_trusted_python, for any snippet that
# runs a program from a configured path (a bash of its own under sudo or timeout(1) included: each snippet that
# runs one carries the text). The program and what "safe" means: fleet/remote/trust.sh, in its comments.
TRUST_REFUSED = 126
TRUST_FN = remote.program("trust")
# fleet_trust_prime: only a probe's script defines it (fleet/remote/trust_prime.sh)
TRUST_PRIME = remote.program("trust_prime") + "\n"


def trusted(program: str) -> str:
    """`program` (a shell word, quoted) as the words that run it behind fleet_trusted (TRUST_FN must be defined)."""
    return f"fleet_trusted {program}"


def trusted_python(python: str) -> str:
    """`python` (a shell word, quoted) as the words that run it judged, with -s, from / (TRUST_FN must be defined)."""
    return f"fleet_trusted_python {python}"


# -- downloads: one retry for a transient failure, in every snippet that downloads -------------------------------
# RETRY_FN defines `fleet_retry WHAT COMMAND...`: runs COMMAND (its output streamed, and kept); where it fails with
# what a network blip says (a connection reset, refused or timed out, a name that could not be resolved for now, an
# HTTP 5xx or 429, an early EOF: the lines of git, curl, pip, uv and apt in TRANSIENT), it says so, naming the cause,
# and runs it again after 1, 2, 4 and 8 s (5 runs in all); a failure of any other kind (a 404, a wrong pin, a bad
# certificate) returns at once with its status, and the last transient one says it gave up. git, pip/uv, apt and
# curl are all run through it (fleet/resources: git, pip, apt, FETCH). A tool that retried by itself and says it
# ran out of its own retries (pip's last "Retrying (Retry(total=0, ...", uv's "failed after N retries": the lines
# in SELF_RETRIED) is not retried again: retries on retries made a blocked index cost 25 pip runs and ~52 s a
# command; the tool's own count (pip --retries, UV_HTTP_RETRIES) is then the one that holds.
TRANSIENT = ("Connection reset by peer", "Connection refused", "Connection timed out", "Operation timed out",
             "timed out", "Temporary failure in name resolution", "Could not resolve host", "early EOF",
             "RPC failed", "unexpected disconnect", "Recv failure", "Empty reply from server",
             "The requested URL returned error: 5", "The requested URL returned error: 429", "Remote end closed",
             "IncompleteRead", "ReadTimeoutError", "ProtocolError", "502 Bad Gateway", "503 Service Unavailable",
             "504 Gateway Time", "500 Internal Server Error", "Too Many Requests", "Hash Sum mismatch",
             "Connection failed", "Network is unreachable", "Could not connect to", "error sending request")
SELF_RETRIED = (r"Retry\(total=0,", r"failed after [0-9]+ retr")   # extended regular expressions (grep -E)
RETRY_FN = remote.program("retry")   # its case patterns are TRANSIENT, its grep -e ones SELF_RETRIED (tested)


def git_guard(dest: str) -> str:
    """Bash defining `git` for a checkout at `dest` (a shell word, quoted or "$d"), and $fleet_git_owner:
    fleet/remote/git_guard.sh (why, in its comments). Its `git` calls fleet_trusted: a body holding it needs
    ("trust",) (FUNCTIONS)."""
    return f"fleet_gd={dest}\n" + remote.program("git_guard") + "\n"


# -- shared functions: declared by what calls them, written once per shell ----------------------------------------
# name -> (the names it calls in turn, the programs of fleet/remote/ that define it). A fact source or a resource
# declares the names its shell calls (`needs=("trust",)`); whoever builds the script writes each once (define()): at
# the top of a probe (fleet/sections.py together: every section's subshell sees the script's functions), at the top
# of `fleet script`'s file, and inside each body that runs in a bash of its own (sections.bounded's, as_root's under
# sudo), which sees none of them. "bin": fleet_bin_trusted and fleet_bin_ok (fleet/programs.py: a helper program in
# /var/lib/fleet/bin judged right before it runs); "program": fleet_program (the same, with its text riding along).
FUNCTIONS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "trust": ((), ("trust",)),
    "retry": ((), ("retry",)),
    "fetch": (("retry",), ("fetch",)),
    "bin": (("trust",), ("bin_trusted", "bin_ok")),
    "program": (("bin",), ("program_run",)),
    "block": ((), ("block.awk", "block_top_run.awk", "block_early", "block_check")),
}
# the ~/.bashrc's early return for non-interactive shells (fleet/resources/block.py EARLY_RETURN), an ERE: Ubuntu's
# `case $- in ... *) return;; esac`, Debian's and others' `[ -z "$PS1" ] && return`, `[[ $- != *i* ]] && return`,
# `if [[ $- != *i* ]]; then return; fi`
EARLY_RETURN = (r'^[[:space:]]*(case[[:space:]]+"?\$-"?[[:space:]]+in'
                r'|\[\[?[[:space:]].*(\$-|PS1).*\]\]?[[:space:]]*(&&|\|\|)[[:space:]]*return'
                r'|if[[:space:]].*(\$-|PS1).*then[[:space:]]*return)')


def _definition(part: str) -> str:
    """One part of a shared function's definition: fleet/remote/NAME.sh as shipped; an awk program
    (fleet/remote/NAME.awk) as the variable fleet_awk_NAME holding its text; block_early, EARLY_RETURN's variable."""
    if part.endswith(".awk"):
        return f"fleet_awk_{part[:-4]}={quote(remote.text(part))}"
    if part == "block_early":
        return f"fleet_block_early={quote(EARLY_RETURN)}"
    return remote.program(part)


def needed(needs: Iterable[str]) -> tuple[str, ...]:
    """`needs` with what each calls in turn, in FUNCTIONS' order (each once); an unknown name is refused."""
    wanted: set[str] = set()

    def add(name: str) -> None:
        if name not in FUNCTIONS:
            raise ValueError(f"no shared shell function {name!r} (fleet.shell.FUNCTIONS: {', '.join(FUNCTIONS)})")
        if name not in wanted:
            wanted.add(name)
            for inner in FUNCTIONS[name][0]:
                add(inner)

    for name in needs:
        add(name)
    return tuple(name for name in FUNCTIONS if name in wanted)


def define(needs: Iterable[str]) -> str:
    """Shell defining the shared functions `needs` names (and those they call), each once; "" for none."""
    return "".join(_definition(part) + "\n" for name in needed(needs) for part in FUNCTIONS[name][1])

