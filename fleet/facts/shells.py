"""The environment of every shell people open, and the startup lines that shaped LD_LIBRARY_PATH.

Which startup files a shell reads decides which libcuda.so.1 loads (shared/DOMAIN.md, "Seen on a real H100").
Three ways people reach a host, each with its own files (bash manual, INVOCATION; Debian's bash also reads
/etc/bash.bashrc first when sshd starts a non-interactive shell, SYS_BASHRC + SSH_SOURCE_BASHRC in
debian/rules of the bash package):

    noninteractive  `ssh host cmd`   /etc/bash.bashrc, ~/.bashrc (up to its non-interactive return)
    interactive     `bash -i`        /etc/bash.bashrc, ~/.bashrc (all of it)
    login           `bash -l`        /etc/profile (+ /etc/profile.d/*.sh), the first of ~/.bash_profile,
                                     ~/.bash_login, ~/.profile (Ubuntu's sources ~/.bashrc)

Each starts from the environment sshd and PAM hand a new session, in sshd's order (fleet/remote/shells_session.sh):
a clean one, ~/.ssh/environment where PermitUserEnvironment allows it, /etc/security/pam_env.conf and
/etc/environment where sshd says `UsePAM yes` (pam_env reads them; parsed here, statically: KEY=VALUE, no expansion),
then sshd's SetEnv, each read from the config of the sshd that serves the session. Every line of those that gives a
tracked or family variable is kept (etc_environment: {file, line, name, value}) and names its setter. The
loader's own answer for each kind (fleet/facts/loader.py's QUERY) runs at the end of each traced shell. The container's
own environment (Docker ENV) is not passed by sshd, which is why RunPod images source /etc/rp_environment
from ~/.bashrc.

Tracing: bash ignores PS4 from the environment when run as root (bash 4.4, CVE-2016-7543), so each shell
sets PS4 itself and then sources the startup files in bash's own order. PS4 carries the file, the line and
LD_LIBRARY_PATH as it is BEFORE each traced command, so a line changed it when the next traced line shows a
different value. Only those lines leave the host (a startup file may export secrets on other lines).
"""

from __future__ import annotations

import functools
import re

from fleet import remote
from fleet.programs import Program
from fleet.shell import quote
from fleet.facts import loader
from fleet.remote import families, loader_rules, trace
from fleet.remote.trace import KINDS, TRACKED, VARS
from fleet.facts.scrub import scrub_text

# KINDS, VARS (the variables traced in each kind) and TRACKED (VARS after LD_LIBRARY_PATH, in each trace line) are the
# trace reader's (fleet/remote/trace.py), which both sides read the trace with
COMMANDS = ("python3", "python", "pip", "nvcc")   # what a user types to reach the stack
# what PAM's pam_env reads for every session (the other session sources: ~/.ssh/environment, sshd's SetEnv lines)
SESSION_FILES = ("/etc/environment", "/etc/security/pam_env.conf")
HOOK_FILE = "/etc/fleet/env.sh"     # the env_hooks role's script: its changes are fleet's own
# A cuda-compat directory: /usr/local/cuda-13.0/compat, NGC's /usr/local/cuda/compat/lib (NVIDIA forward
# compatibility guide, "Deployment Considerations": the compat package installs under cuda-X.Y/compat).
COMPAT_DIR = re.compile(r"/cuda[^/:]*/compat(?:/lib(?:\.real)?)?/?$")

# How each kind of shell reads its startup files (see the module docstring). `$HOME` expands remotely.
_STARTUP = {
    "noninteractive": ("bash --norc --noprofile",
                       '[ -r /etc/bash.bashrc ] && . /etc/bash.bashrc; [ -r ~/.bashrc ] && . ~/.bashrc'),
    "interactive": ("bash --norc --noprofile +m -i",
                    '[ -r /etc/bash.bashrc ] && . /etc/bash.bashrc; [ -r ~/.bashrc ] && . ~/.bashrc'),
    "login": ("bash --norc --noprofile -l",
              '[ -r /etc/profile ] && . /etc/profile; '
              'if [ -r ~/.bash_profile ]; then . ~/.bash_profile; elif [ -r ~/.bash_login ]; then . ~/.bash_login; '
              'elif [ -r ~/.profile ]; then . ~/.profile; fi'),
}

# Trace lines -> only the ones after which LD_LIBRARY_PATH differs, with the chain of files that led there; and for
# each other tracked variable the LAST line after which it differed (@@set, printed at the end).
_AWK = remote.text("shells_trace.awk")
# a traced command that may set a family variable: a name of the families at a word's start (the awk reads it whole)
_FAMW = "(^|[ '])(" + "|".join(families.PREFIXES) + ")"
_AWK_VARS = '-v fam="$fleet_fam" -v famw="$fleet_famw" -v secret="$fleet_secret"'

_SHOW = ("set +x; for v in " + " ".join(VARS) + "; do if [ -n \"${!v+x}\" ]; then printf '@@value %s=%s\\n' "
         "\"$v\" \"${!v}\"; else printf '@@unset %s\\n' \"$v\"; fi; done")
# ... then every other exported variable of the families a GPU job reads (fleet/remote/families.py), by prefix, a name
# that looks like a secret's never printed: `@@fam NAME=VALUE` (fleet/remote/shells_families.sh)
_FAMS = (f"fleet_prefixes=({' '.join(families.PREFIXES)}) fleet_secret={quote(families.SECRET_ERE)} "
         f"fleet_tracked={quote(' ' + ' '.join(VARS) + ' ')}\n" + remote.program("shells_families"))

# What each user command resolves to in each kind, and where each python finds torch:
# fleet/remote/shells_commands.sh, handed COMMANDS as the array fleet_cmds.
# Each python is asked by fleet/remote/shells_python.py's text (its comment lines left here), as $fleet_pyq.
_PYQ = "\n".join(line for line in remote.text("shells_python.py").splitlines() if not line.startswith("#"))
_CMDS = (f"fleet_cmds=({' '.join(map(quote, COMMANDS))})\nfleet_pyq={quote(_PYQ)}\n"
         + remote.program("shells_commands"))


def command() -> str:
    """The probe section: /etc/environment, then each kind of shell traced from a fresh session's environment."""
    lines = [
        loader.USEPAM,
        # the families' names (/etc/environment's lines of them; shells_trace.awk: who set each, by its commands)
        f"fleet_fam={quote(families.FAMILY_ERE)} fleet_famw={quote(_FAMW)} fleet_secret={quote(families.SECRET_ERE)}",
        f"fleet_vars={quote(' '.join(VARS))}\n" + remote.program("shells_session"),   # remote/shells_session.sh
        f"awkp={quote(_AWK)}",
    ]
    tracked = "@%".join("${%s-@unset@}" % v for v in TRACKED)
    ps4 = "PS4='+@@${BASH_SOURCE:-}@@${LINENO}@@${LD_LIBRARY_PATH-@unset@}@@" + tracked + "@@ '; set -x; "
    # every kind at once, each into a pipe of its own (an fd in a variable), printed in order as each ends: the time
    # of the slowest kind, not the sum (each starts a bash, reads its startup files and asks its python)
    runs = {}
    for kind in KINDS:
        flags, startup = _STARTUP[kind]
        # then the user's commands, and the loader's own answer in the environment those files left (loader.py)
        body = ps4 + startup + "; " + _SHOW + "\n" + _FAMS + "\n" + _CMDS + "\n" + loader.QUERY
        runs[kind] = f"env -i \"${{base[@]}}\" $to $ss {flags} -c {quote(body)}"
    # bare: a process that reads no startup file (a service, cron, `env -i`), as fleet.facts.loader's bare kind
    runs["bare"] = (f"env -i PATH={loader.BARE_PATH} HOME=\"$HOME\" $to bash --norc --noprofile -c "
                    f"{quote(_SHOW + chr(10) + _FAMS + chr(10) + _CMDS)}")
    for kind, run in runs.items():
        lines.append(f"exec {{fleet_sh_{kind}}}< <({run} </dev/null 2>&1 | awk {_AWK_VARS} \"$awkp\"; "
                     "printf '@@rc %s\\n' \"${PIPESTATUS[0]}\")")
    for kind in runs:
        lines.append(f"printf '@@shell {kind}\\n'; mapfile -u \"$fleet_sh_{kind}\" fleet_sh; exec {{fleet_sh_{kind}}}<&-; "
                     'printf %s "${fleet_sh[@]}"')
    return "\n".join(lines)


# The traced shells' output, kept in one variable of the probe script (probe.parts, sections.background keep_in): the
# facts.shells section prints it, and the verify gate's fingerprint reads each shell's LD_LIBRARY_PATH from it, so one
# probe starts each kind of shell once.
CAPTURED = "fleet_shells_out"


def capture() -> str:
    """Shell that runs command() (read-only, LC_ALL=C) into $fleet_shells_out where this script has not already: the
    verify gate's check can run in a command of its own, without the probe (the engine's checks-only command)."""
    return f'[ -n "${{{CAPTURED}+x}}" ] || {CAPTURED}=$( ( export LC_ALL=C\n{command()}\n) 2>&1 </dev/null )'


def parse(text: str) -> dict:
    """The shells section -> {home, etc_environment: [...], noninteractive|interactive|login: {...}}: the trace as
    fleet/remote/trace.py reads it (the verify program reads it there too), each kind's loader answer parsed, each
    variable's setter settled, and the text of every kept line scrubbed (fleet.facts.scrub).

        @@home /root
        @@shell interactive
        @@change	1	/root/.bashrc	118	/usr/lib	/usr/local/cuda-13.0/compat:/usr/lib	. /root/pod_setup.sh	
        @@value LD_LIBRARY_PATH=/usr/local/cuda-13.0/compat:/usr/lib
        @@unset CUDA_HOME
        @@rc 0
    -> interactive: {LD_LIBRARY_PATH: "...", PATH: ..., CUDA_HOME: None, rc: 0, loader: {...} | None,
                     ld_changes: [{file, line, depth, text, before, after, via: ["/root/.bashrc:118"]}]}
    """
    out = trace.parse(text)
    etc = {e["name"]: e for e in out["etc_environment"]}
    for kind in KINDS + ("bare",):
        if kind in out:
            shell = out[kind]
            for said in (shell["ld_changes"] + list(shell["set_by"].values()) + list(shell["unset_by"].values())
                         + list(shell["limits_set_by"].values())):
                said["text"] = scrub_text(said["text"])
            for cmd in shell["commands"].values():   # an alias's text, the line that made it (issue 45)
                if cmd.get("by"):
                    cmd["by"]["text"] = scrub_text(cmd["by"]["text"])
                if cmd.get("alias"):
                    cmd["alias"] = scrub_text(cmd["alias"])
            lines = shell.pop("loader_lines")
            shell["loader"] = loader.parse_query(lines) if lines else None
            _settled(shell, etc)
    missing = [k for k in KINDS if k not in out]
    if missing:
        raise ValueError("no trace for the " + ", ".join(missing) + " shell")
    return out


def _settled(shell: dict, etc: dict) -> None:
    """set_by for every variable set in this kind: the last startup line that changed it (LD_LIBRARY_PATH's from its
    changes), else /etc/environment's line where the session got it there; a variable this kind does not have, or
    that only fleet's own hook set, keeps the line all the same (the hook is a file:line too)."""
    if shell["ld_changes"]:
        last = shell["ld_changes"][-1]
        shell["set_by"]["LD_LIBRARY_PATH"] = {k: last[k] for k in ("file", "line", "depth", "text", "via")}
    for name in [*VARS, *(n for n in shell.get("families", {}) if n not in VARS)]:
        value = shell.get(name) if name in VARS else shell["families"][name]
        if name not in shell["set_by"] and name in etc and value is not None:
            e = etc[name]
            setenv = "SetEnv " if e["file"] not in SESSION_FILES and not e["file"].endswith("/.ssh/environment") else ""
            shell["set_by"][name] = {"file": e["file"], "line": e["line"], "depth": 0,
                                     "text": scrub_text(f"{setenv}{name}={e['value']}"), "via": []}
    for name, value in list(shell.items()):
        if name in VARS and name not in ("PATH", "LD_LIBRARY_PATH") and isinstance(value, str):
            shell[name] = scrub_text(value)
    shell["families"] = {name: value if name in ("PATH", "LD_LIBRARY_PATH") else scrub_text(value)
                         for name, value in shell.get("families", {}).items()}
    for row in shell.get("nccl_conf", {}).values():
        row["value"] = scrub_text(row["value"])


def where(setter: dict | None, home: str = "") -> str | None:
    """A set_by entry as a person edits it: "~/.bashrc:1", or the outermost line that led there ("~/.bashrc:9
    (via /root/pod_setup.sh:2)")."""
    if not setter or not setter.get("file"):
        return None
    origin = _tilde(f"{setter['file']}:{setter['line']}", home)
    via = [_tilde(v, home) for v in setter.get("via") or []]
    return f"{via[0]} (via {origin})" if via else origin


def compat_dirs(path: str | None) -> list[str]:
    return [d for d in (path or "").split(":") if COMPAT_DIR.search(d)]


def effect(change: dict) -> str | None:
    """What one change did to cuda-compat on the path, in words; None where it left compat alone."""
    before, after = compat_dirs(change["before"]), compat_dirs(change["after"])
    first_after = (change["after"] or "").split(":")[0]
    # A line that prepends compat where it is first already still puts it first (a second copy): named too,
    # so the list does not depend on what ran before the line (fleet's hook, after an apply).
    grew = len(after) > len(before)
    if first_after in after and (grew or (change["before"] or "").split(":")[0] != first_after):
        return f"puts {first_after} first"
    added = [d for d in after if d not in before]
    if added or grew:
        return f"adds {(added or after)[0]}"
    removed = [d for d in before if d not in after]
    if removed:
        return f"takes {removed[0]} off"
    return None


def compat_lines(shells: dict | None) -> list[dict]:
    """Every startup line (not fleet's hook) that puts a cuda-compat directory on LD_LIBRARY_PATH: what was seen,
    no verdict (fleet.decide.loader.judged_lines adds what the compat rule makes of it).

    -> [{where: "~/.bashrc:118", origin: "/root/pod_setup.sh:3", file, line, text, effect: "puts ... first",
         shells: ["interactive", ...]}]
    """
    if not shells:
        return []
    home = shells.get("home") or ""
    found: dict[tuple, dict] = {}
    sources = [("etc", {"file": e["file"], "line": e["line"], "text": f"{e['name']}={e['value']}", "before": None,
                        "after": e["value"], "via": []}) for e in shells.get("etc_environment", [])
               if e["name"] == "LD_LIBRARY_PATH"]
    for kind in KINDS:
        sources += [(kind, c) for c in (shells.get(kind) or {}).get("ld_changes", [])]
    for kind, change in sources:
        if change["file"] == HOOK_FILE or not change["file"]:
            continue
        what = effect(change)
        if what is None or what.startswith("takes"):
            continue
        # name the outermost startup line (the one a person edits: ~/.bashrc:118), and where it led
        origin = _tilde(f"{change['file']}:{change['line']}", home)
        via = [_tilde(v, home) for v in change.get("via", [])]
        entry = found.setdefault((change["file"], change["line"]), {
            "where": via[0] if via else origin, "origin": origin, "file": change["file"], "line": change["line"],
            "text": change["text"], "effect": what, "shells": [], "via": bool(via)})
        name = "all (/etc/environment)" if kind == "etc" else kind
        if name not in entry["shells"]:
            entry["shells"].append(name)
    return list(found.values())


def observed(lines: list[dict]) -> list[dict]:
    """The lines in the record's words, without a verdict: `says` is what the line does (fleet.decide.loader adds
    what it breaks under this driver)."""
    out = []
    for seen in lines:
        line = {k: v for k, v in seen.items() if k != "via"}
        via = f" (via {line['origin']})" if seen.get("via") else ""
        out.append({**line, "says": f"{line['where']}{via} {line['effect']}"})
    return out


_tilde = loader_rules.tilde   # "/root/.bashrc:3" -> "~/.bashrc:3"


def reached_by(shell_facts: dict | None, torch_path: str | None) -> dict:
    """Which of python3/python each kind's user types finds this torch (facts.torch.path), and every other torch a
    python of any kind finds: {"kinds": {kind: ["python3", "python"]}, "others": [{"python", "torch", "kinds"}]}."""
    out: dict = {"kinds": {}, "others": []}
    if not isinstance(shell_facts, dict) or not torch_path:
        return out
    others: dict = {}
    for kind in KINDS:
        shell = shell_facts.get(kind) or {}
        found = []
        for name in ("python3", "python"):
            path = ((shell.get("commands") or {}).get(name) or {}).get("path")
            torch = ((shell.get("pythons") or {}).get(path or "") or {}).get("torch")
            if torch and torch == torch_path:
                found.append(name)
            elif torch:
                others.setdefault((path, torch), []).append(kind)
        out["kinds"][kind] = found
    out["others"] = [{"python": p, "torch": t, "kinds": k} for (p, t), k in others.items()]
    return out


@functools.lru_cache(maxsize=None)
def trace_program() -> Program:
    """The trace of the startup files (`command`), as a helper program (fleet/programs.py): what the probe runs
    from /var/lib/fleet/bin once the host has it, and what the verify program runs as `bash PATH`."""
    return Program("fleet-shell-trace", command() + "\n")
