"""Whether a path fleet runs from or writes into as root is safe from the host's other users, asked on the host.

A path is trusted when it and every existing parent are owned by root or the connecting user and no one else
can write them: a directory writable by group (not root's) or by others is refused, unless it is sticky and the
entry under it on the path already exists (then that entry's own owner is what counts). A symlink is judged by
its owner and then its target is judged too. A venv under a 1777 /workspace that `nobody` planted, or one in a
group-writable directory, fails: fleet then never executes it, and apply refuses the host naming owner and mode.

    TRUST_FN          bash defining fleet_trust PATH: prints nothing when trusted, else one line
                      `<path> <owner> <mode>` naming the first component that fails
    command(paths)    per path: `path<TAB><path><TAB>ok` or `path<TAB><path><TAB><component> <owner> <mode>`
    parse(text)       -> {path: None (trusted) or "<component> is owned by <owner> with mode <mode>"}
"""

from __future__ import annotations

import shlex

TRUST_FN = r"""fleet_trust() {  # one stat for every component of the path (a probe pays ~1-2 ms for each process)
  local fleet_p=$1 fleet_c fleet_below fleet_u fleet_n fleet_g fleet_m fleet_t fleet_f fleet_link= fleet_all=()
  fleet_c=$fleet_p
  while [ -n "$fleet_c" ] && [ "$fleet_c" != / ]; do fleet_all+=("$fleet_c"); fleet_c=${fleet_c%/*}; done
  fleet_all+=(/); fleet_below=
  while IFS=$'\t' read -r fleet_u fleet_n fleet_g fleet_m fleet_t fleet_f; do
    if [ "$fleet_u" != 0 ] && [ "$fleet_u" != "$EUID" ]; then echo "$fleet_f $fleet_n $fleet_m"; return; fi
    if [ "$fleet_t" = "symbolic link" ]; then fleet_link=yes
    else
      fleet_m=$((8#$fleet_m))
      if { [ $((fleet_m & 2)) != 0 ] || { [ $((fleet_m & 16)) != 0 ] && [ "$fleet_g" != 0 ]; }; } &&
         { [ $((fleet_m & 512)) = 0 ] || [ -z "$fleet_below" ]; }; then
        printf '%s %s %o\n' "$fleet_f" "$fleet_n" "$fleet_m"; return; fi
    fi
    fleet_below=yes
  done < <(stat -c $'%u\t%U\t%g\t%a\t%F\t%n' -- "${fleet_all[@]}" 2>/dev/null)
  # a symlink on the way: its target is judged too
  if [ -n "$fleet_link" ] && [ "${2-}" != resolved ]; then fleet_trust "$(readlink -m -- "$fleet_p")" resolved; fi
}"""


def command(paths) -> str:
    lines = [TRUST_FN]
    for path in dict.fromkeys(paths):
        lines.append(f"r=$(fleet_trust {shlex.quote(path)}); printf 'path\\t%s\\t%s\\n' {shlex.quote(path)} \"${{r:-ok}}\"")
    return "\n".join(lines) + "\n"


def reason(line: str) -> str:
    """`<component> <owner> <mode>` -> the sentence's middle."""
    path, owner, mode = line.rsplit(" ", 2)
    return f"{path} is owned by {owner} with mode {mode}"


def parse(text: str) -> dict:
    """path\t/opt/fleet/venv\tok / path\t/workspace/tmp\t/workspace nobody 1777 ->
    {"/opt/fleet/venv": None, "/workspace/tmp": "/workspace is owned by nobody with mode 1777"}"""
    out: dict = {}
    for line in text.splitlines():
        parts = line.split("\t")
        if len(parts) == 3 and parts[0] == "path":
            out[parts[1]] = None if parts[2] == "ok" else reason(parts[2])
    if not out:
        raise ValueError("no path lines")
    return out


def refusal(name: str, path: str, why: str) -> str:
    return (f"{name} {path} is not safe to run as root: {why}, so another user could plant what fleet runs there; "
            f"make it and each parent owned by root and not writable by others, or set {name} elsewhere")
