"""The environment of every shell people open, and the startup lines that shaped LD_LIBRARY_PATH.

Which startup files a shell reads decides which libcuda.so.1 loads (shared/DOMAIN.md, "Seen on a real H100").
Three ways people reach a host, each with its own files (bash manual, INVOCATION; Debian's bash also reads
/etc/bash.bashrc first when sshd starts a non-interactive shell, SYS_BASHRC + SSH_SOURCE_BASHRC in
debian/rules of the bash package):

    noninteractive  `ssh host cmd`   /etc/bash.bashrc, ~/.bashrc (up to its non-interactive return)
    interactive     `bash -i`        /etc/bash.bashrc, ~/.bashrc (all of it)
    login           `bash -l`        /etc/profile (+ /etc/profile.d/*.sh), the first of ~/.bash_profile,
                                     ~/.bash_login, ~/.profile (Ubuntu's sources ~/.bashrc)

Each starts from the environment sshd and PAM hand a new session: a clean one, plus /etc/environment where sshd
says `UsePAM yes` (pam_env reads it; it is parsed here, statically, as pam_env does: KEY=VALUE, no expansion). The
loader's own answer for each kind (fleet/facts/loader.py's QUERY) runs at the end of each traced shell. The container's
own environment (Docker ENV) is not passed by sshd, which is why RunPod images source /etc/rp_environment
from ~/.bashrc.

Tracing: bash ignores PS4 from the environment when run as root (bash 4.4, CVE-2016-7543), so each shell
sets PS4 itself and then sources the startup files in bash's own order. PS4 carries the file, the line and
LD_LIBRARY_PATH as it is BEFORE each traced command, so a line changed it when the next traced line shows a
different value. Only those lines leave the host (a startup file may export secrets on other lines).
"""

from __future__ import annotations

import re

from fleet.shell import quote
from fleet.facts import loader
from fleet.remote import loader_rules
from fleet.facts.scrub import scrub_text

KINDS = ("noninteractive", "interactive", "login")
VARS = ("LD_LIBRARY_PATH", "PATH", "CUDA_HOME")
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

# Trace lines -> only the ones after which LD_LIBRARY_PATH differs, with the chain of files that led there.
_AWK = r"""
/^\++@@/ {
  d = match($0, /[^+]/) - 1; rest = substr($0, d + 3)
  i = index(rest, "@@"); file = substr(rest, 1, i - 1); rest = substr(rest, i + 2)
  i = index(rest, "@@"); line = substr(rest, 1, i - 1); rest = substr(rest, i + 2)
  i = index(rest, "@@ "); ld = substr(rest, 1, i - 1); cmd = substr(rest, i + 3)
  gsub(/\t/, " ", cmd)
  if (have && ld != pld) {
    via = ""; for (k = 2; k < pd; k++) via = via (via == "" ? "" : ">") stack[k]
    printf "@@change\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", pd - 1, pf, pl, pld, ld, substr(pcmd, 1, 200), via
  }
  stack[d] = file ":" line; have = 1; pd = d; pf = file; pl = line; pld = ld; pcmd = cmd; next
}
/^@@(value|unset) / { print }
/^@@ld(var|find|obj|missing) / { print }
"""

_SHOW = ("set +x; for v in " + " ".join(VARS) + "; do if [ -n \"${!v+x}\" ]; then printf '@@value %s=%s\\n' "
         "\"$v\" \"${!v}\"; else printf '@@unset %s\\n' \"$v\"; fi; done")


def command() -> str:
    """The probe section: /etc/environment, then each kind of shell traced from a fresh session's environment."""
    lines = [
        "printf '@@home %s\\n' \"$HOME\"",
        # The session sshd + PAM start: a clean environment, sshd's default PATH, then /etc/environment.
        'base=(HOME="$HOME" USER="${USER:-$(id -un)}" LOGNAME="${LOGNAME:-$(id -un)}" SHELL="${SHELL:-/bin/bash}"'
        ' TERM=dumb PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'
        ' SSH_CLIENT="${SSH_CLIENT:-127.0.0.1 22 22}" SSH_CONNECTION="${SSH_CONNECTION:-127.0.0.1 22 127.0.0.1 22}")',
        # fleet's own command (fleet.shell.REMOTE_MARK): the shells it starts only observe (env.sh asks the
        # cuda-compat gate and runs it in no shell fleet starts, so --check and the probe change nothing)
        '[ -n "${FLEET_REMOTE-}" ] && base+=(FLEET_REMOTE="$FLEET_REMOTE")',
        # sshd applies /etc/environment (pam_env) only with UsePAM yes (sshd_config(5): the first value wins)
        "u=$(cat /etc/ssh/sshd_config.d/*.conf /etc/ssh/sshd_config 2>/dev/null | grep -iE '^[[:space:]]*UsePAM[[:space:]]' | head -n 1)",
        "case $(printf '%s' \"${u##* }\" | tr 'A-Z' 'a-z') in yes) pam=1;; *) pam=;; esac",
        "if [ -n \"$pam\" ] && [ -r /etc/environment ]; then n=0",
        "  while IFS= read -r l || [ -n \"$l\" ]; do n=$((n+1)); l=${l#\"${l%%[![:space:]]*}\"}; l=${l#export }",
        "    case $l in ''|'#'*) continue;; esac; case $l in *=*) ;; *) continue;; esac",
        "    k=${l%%=*}; v=${l#*=}",
        "    case $k in ''|*[!A-Za-z0-9_]*) continue;; esac",
        "    case $v in \\\"*\\\") v=${v#\\\"}; v=${v%\\\"};; \\'*\\') v=${v#\\'}; v=${v%\\'};; esac",
        "    base+=(\"$k=$v\")",
        f"    case $k in {'|'.join(VARS)}) printf '@@etcenv %s\\t%s\\t%s\\n' \"$n\" \"$k\" \"$v\";; esac",
        "  done < /etc/environment",
        "fi",
        "to=; command -v timeout >/dev/null 2>&1 && to='timeout -k 2 15'",
        # setsid: no controlling terminal, so an interactive bash can never stop on SIGTTOU or read a tty
        "ss=; command -v setsid >/dev/null 2>&1 && ss='setsid -w'",
        f"awkp={quote(_AWK)}",
    ]
    ps4 = "PS4='+@@${BASH_SOURCE:-}@@${LINENO}@@${LD_LIBRARY_PATH-@unset@}@@ '; set -x; "
    for kind in KINDS:
        flags, startup = _STARTUP[kind]
        # then the loader's own answer in the environment those files left (fleet/facts/loader.py)
        body = ps4 + startup + "; " + _SHOW + "\n" + loader.QUERY
        lines.append(f"printf '@@shell {kind}\\n'")
        lines.append(f"env -i \"${{base[@]}}\" $to $ss {flags} -c {quote(body)} </dev/null 2>&1 | awk \"$awkp\"")
        lines.append("printf '@@rc %s\\n' \"${PIPESTATUS[0]}\"")
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
    """The shells section -> {home, etc_environment: [...], noninteractive|interactive|login: {...}}.

        @@home /root
        @@etcenv 3	LD_LIBRARY_PATH	/opt/x
        @@shell interactive
        @@change	1	/root/.bashrc	118	/usr/lib	/usr/local/cuda-13.0/compat:/usr/lib	. /root/pod_setup.sh	
        @@value LD_LIBRARY_PATH=/usr/local/cuda-13.0/compat:/usr/lib
        @@unset CUDA_HOME
        @@rc 0
    -> interactive: {LD_LIBRARY_PATH: "...", PATH: ..., CUDA_HOME: None, rc: 0,
                     ld_changes: [{file, line, depth, text, before, after, via: ["/root/.bashrc:118"]}]}
    """
    out: dict = {"home": None, "etc_environment": []}
    current = None
    for raw in text.splitlines():
        if raw.startswith("@@home "):
            out["home"] = raw[7:]
        elif raw.startswith("@@etcenv "):
            out["etc_environment"].append(loader_rules.parse_etcenv(raw))
        elif raw.startswith("@@shell "):
            current = out[raw[8:].strip()] = {**{v: None for v in VARS}, "rc": None, "ld_changes": [], "_ld": []}
        elif current is None:
            continue
        elif raw.startswith("@@ld"):
            current["_ld"].append(raw)
        elif raw.startswith("@@value "):
            name, _, value = raw[8:].partition("=")
            if name in VARS:
                current[name] = value
        elif raw.startswith("@@rc "):
            current["rc"] = int(raw[5:]) if raw[5:].strip().lstrip("-").isdigit() else None
        elif raw.startswith("@@change\t"):
            change = loader_rules.parse_change(raw)
            current["ld_changes"].append({**change, "text": scrub_text(change["text"])})
    for kind in KINDS:
        if kind in out:
            lines = out[kind].pop("_ld")
            out[kind]["loader"] = loader.parse_query(lines) if lines else None
    missing = [k for k in KINDS if k not in out]
    if missing:
        raise ValueError("no trace for the " + ", ".join(missing) + " shell")
    return out


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


def _tilde(where: str, home: str) -> str:
    return "~" + where[len(home):] if home and home != "/" and where.startswith(home + "/") else where
