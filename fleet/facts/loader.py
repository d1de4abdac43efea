"""Which libcuda.so.1 the dynamic loader gives each kind of process, and why: the loader's own answer.

Kinds of process (shared/DOMAIN.md, "Forward compatibility" and "Seen on a real H100"):

    bare         `env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=$HOME`, no startup file: services, cron,
                 a supervised Jupyter kernel, `docker exec`
    ssh          `ssh host cmd`: the non-interactive bash sshd starts (~/.bashrc up to its early return)
    interactive  `bash -i`
    login        `bash -l`: /etc/profile (+ /etc/profile.d/*.sh), then the FIRST of ~/.bash_profile,
                 ~/.bash_login, ~/.profile

The three shells are the ones fleet/facts/shells.py already starts and traces (one start per kind per probe):
`QUERY` runs at the end of each of them, in the environment its startup files left, and its lines ride in the
shells section (`@@ld...`). This module's own Source (`command`) asks for the bare kind and for what is the same
for every process: the ld cache's libcuda entries, the /etc/ld.so.conf* lines, /etc/ld.so.preload, and whether
sshd applies /etc/environment (UsePAM).

The question is put to the REAL loader, not a re-implementation of its search: `ld.so` in trace mode
(LD_TRACE_LOADED_OBJECTS, what ldd does: nothing runs, no constructor, no cuInit) with `libcuda.so.1` appended
to LD_PRELOAD (a name without a slash: the loader searches it exactly as dlopen would: LD_LIBRARY_PATH, the
ld cache, the system directories) and LD_DEBUG=libs, which says where it searched and why ("(LD_LIBRARY_PATH)",
"search cache=", "(system search path)"). An explicit preload that is a libcuda (LD_PRELOAD, /etc/ld.so.preload)
is already loaded when a program dlopens libcuda.so.1, so it wins: the parser says so from the same trace.

Facts only observe: "compat" (a directory named like cuda-compat's, /usr/local/cuda-X.Y/compat) and "stub" (a
file under .../stubs/, which answers CUDA_ERROR_STUB_LIBRARY, 34) describe what a path is; which of them is
harmful under this kernel driver is fleet.decide.loader's judgement. What a path is and which file:line put it
there are fleet/remote/loader_rules.py's rules, which the verify program carries to the host.
"""

from __future__ import annotations

import posixpath
import re

from fleet import remote
from fleet.knowledge.loader_paths import KINDS
from fleet.remote.loader_rules import is_compat, is_stub, version_of
from fleet.remote import loader_rules as rules

SHELL_KIND = {"noninteractive": "ssh", "interactive": "interactive", "login": "login"}   # shells.KINDS -> ours
BARE_PATH = "/usr/sbin:/usr/bin:/sbin:/bin"

# fleet_ldq, run inside a shell of one kind after its startup files: fleet/remote/loader_query.sh
QUERY = remote.program("loader_query")   # fleet/remote/loader_query.sh


# sshd's first UsePAM line (its drop-ins first, as sshd_config's Include reads them; the first value wins:
# sshd_config(5)) in $u, by builtins: what `cat FILES | grep -iE '^[[:space:]]*UsePAM[[:space:]]' | head -n 1` prints
# (four processes fewer; the shells' trace asks it too)
USEPAM = remote.program("usepam")   # fleet/remote/usepam.sh


def command() -> str:
    """The loader Source: the bare kind, then the ld cache, the ld.so.conf lines, /etc/ld.so.preload, UsePAM."""
    return "\n".join([
        "printf '@@kind bare\\n'",
        f'env -i PATH={BARE_PATH} HOME="$HOME" bash --norc --noprofile -c {_q(QUERY)} </dev/null 2>&1',
        remote.program("loader"),   # fleet/remote/loader.sh: the ld cache, ld.so.conf, ld.so.preload
        # sshd applies /etc/environment (pam_env) only with UsePAM yes; its first value wins (sshd_config(5))
        USEPAM, "u=${u##* }; printf '@@usepam %s\\n' \"${u,,}\"",
    ])


def _q(text: str) -> str:
    from fleet.shell import quote
    return quote(text)


def parse_query(lines: list[str]) -> dict:
    """One kind's @@ld lines -> what the loader resolved and the step that put it first (no file:line yet).

    -> {libcuda, real, version, stub, compat, step: LD_PRELOAD|/etc/ld.so.preload|LD_LIBRARY_PATH|ld cache|
        system path|None, entry (the LD_LIBRARY_PATH entry or the directory), ld_library_path, ld_preload,
        searched: [LD_DEBUG's lines]}"""
    out: dict = {"libcuda": None, "real": None, "version": None, "stub": False, "compat": False, "step": None,
                 "entry": None, "ld_library_path": None, "ld_preload": None, "searched": []}
    objects: list[tuple[str, str]] = []
    for raw in lines:
        if raw.startswith("@@ldvar "):
            name, _, value = raw[8:].partition("=")
            key = {"LD_PRELOAD": "ld_preload", "LD_LIBRARY_PATH": "ld_library_path"}.get(name)
            if key:
                out[key] = None if value == "@unset@" else value
        elif raw.startswith("@@ldfind "):
            out["searched"].append(raw[9:].strip())
        elif raw.startswith("@@ldobj "):
            path, _, real = raw[8:].partition("\t")
            objects.append((path.strip(), real.strip() or path.strip()))
    user_preload = [p for p in re.split(r"[\s:]+", out["ld_preload"] or "") if p]
    chosen = None
    # An explicit preload of a libcuda (a path) is loaded before any dlopen: it wins by its soname.
    for path, real in objects:
        if "/" in path and path in user_preload:
            chosen, out["step"] = (path, real), "LD_PRELOAD"
            break
    if chosen is None:
        # our own preload by name is the first libcuda object; a later libcuda path is /etc/ld.so.preload's
        found = _found_by_search(out["searched"])
        if found not in {p for p, _ in objects}:
            found = None
        for path, real in objects:
            if found and path != found and "libcuda" in posixpath.basename(path) and not _same(path, found, objects):
                chosen, out["step"] = (path, real), "/etc/ld.so.preload"
                break
        if chosen is None and found:
            chosen = next(((p, r) for p, r in objects if p == found), (found, found))
            if "(LD_LIBRARY_PATH)" in _search_line_for(out["searched"], found):
                out["step"] = "LD_LIBRARY_PATH"
            elif "search cache=" in _search_line_for(out["searched"], found):
                out["step"] = "ld cache"
            elif "(RUNPATH" in _search_line_for(out["searched"], found):
                out["step"] = "RUNPATH"
            else:
                out["step"] = "system path"
        elif chosen is None and objects:
            chosen, out["step"] = objects[0], "loaded already"
    if chosen:
        path, real = chosen
        out.update(libcuda=path, real=real, version=version_of(real), stub=is_stub(path) or is_stub(real),
                   compat=is_compat(path) or is_compat(real), entry=posixpath.dirname(path))
    return out


def _found_by_search(searched: list[str]) -> str | None:
    """The file the loader took: the last `trying file=` of the libcuda.so.1 search (it stops at the first that
    opens), when the search did not end in failure."""
    tried = [line.split("trying file=", 1)[1].strip() for line in searched if "trying file=" in line]
    return tried[-1] if tried else None


def _search_line_for(searched: list[str], found: str) -> str:
    """The `search ...` line under which the loader tried `found`."""
    current = ""
    for line in searched:
        if line.startswith("search ") or line.startswith(" search") or "search path=" in line or "search cache=" in line:
            current = line
        if "trying file=" in line and line.split("trying file=", 1)[1].strip() == found:
            return current
    return current


def _same(path: str, found: str, objects: list[tuple[str, str]]) -> bool:
    reals = dict(objects)
    return reals.get(path) is not None and reals.get(path) == reals.get(found)


def parse(text: str) -> dict:
    """The loader section -> {bare: {...}, cache: [...], conf: [...], preload: [...], use_pam: bool|None}.

        @@kind bare
        @@ldvar LD_PRELOAD=@unset@
        @@ldfind  search cache=/etc/ld.so.cache
        @@ldfind   trying file=/usr/lib/x86_64-linux-gnu/libcuda.so.1
        @@ldobj /usr/lib/x86_64-linux-gnu/libcuda.so.1	/usr/lib/x86_64-linux-gnu/libcuda.so.580.159.04
        @@cache libcuda.so.1	/usr/local/cuda-13.0/compat/libcuda.so.1	/usr/local/cuda-13.0/compat/libcuda.so.580.95.05
        @@conf /etc/ld.so.conf.d/000-cuda-compat.conf	1	/usr/local/cuda-13.0/compat
        @@preload 1	/usr/local/cuda/lib64/stubs/libcuda.so
        @@usepam yes
    """
    bare: list[str] = []
    out: dict = {"cache": [], "conf": [], "preload": [], "use_pam": None}
    in_bare = False
    for raw in text.splitlines():
        if raw.startswith("@@kind "):
            in_bare = raw[7:].strip() == "bare"
        elif raw.startswith("@@ld"):
            if in_bare:
                bare.append(raw)
        elif raw.startswith("@@cache "):
            name, path, real = (raw[8:].lstrip(" \t").split("\t") + ["", ""])[:3]
            out["cache"].append({"name": name.strip(), "path": path, "real": real or path,
                                 "version": version_of(real or path), "dir": posixpath.dirname(path),
                                 "compat": is_compat(path), "stub": is_stub(path) or is_stub(real)})
        elif raw.startswith("@@conf "):
            file, line, value = (raw[7:].split("\t") + ["", ""])[:3]
            out["conf"].append({"file": file, "line": int(line) if line.isdigit() else None, "dir": value,
                                "compat": is_compat(value), "stub": is_stub(value)})
        elif raw.startswith("@@preload "):
            line, _, value = raw[10:].partition("\t")
            out["preload"].append({"file": "/etc/ld.so.preload", "line": int(line) if line.isdigit() else None,
                                   "entry": value.strip(), "compat": is_compat(value.strip()),
                                   "stub": is_stub(value.strip()), "libcuda": "libcuda" in value})
        elif raw.startswith("@@usepam"):
            value = raw[8:].strip()
            out["use_pam"] = True if value == "yes" else False if value == "no" else None
    if not any(line.startswith("@@ld") for line in bare) and "@@kind bare" not in text:
        raise ValueError("no answer from the loader for a bare process")
    out["bare"] = parse_query(bare)
    return out


def explain(loader_facts: dict | None, shell_facts: dict | None) -> dict:
    """Each kind's libcuda with the step that put it first, named by file:line: the LD_LIBRARY_PATH entry and the
    startup line that set it (facts.shells' trace), the ld cache entry and the /etc/ld.so.conf* line that listed its
    directory, the /etc/ld.so.preload line. Observation only (no harm): fleet.decide.loader judges.

    -> {bare|ssh|interactive|login: {libcuda, real, version, stub, compat, step, entry, set_by, ...}}"""
    loader_facts = loader_facts or {}
    shell_facts = shell_facts or {}
    home = shell_facts.get("home") or ""
    kinds: dict = {}
    for kind in KINDS:
        if kind == "bare":
            seen = loader_facts.get("bare")
            changes: list = []
        else:
            shell = next((v for k, v in shell_facts.items() if SHELL_KIND.get(k) == kind and isinstance(v, dict)), {})
            seen = shell.get("loader")
            changes = shell.get("ld_changes") or []
        if not seen:
            continue
        row = dict(seen)
        row["set_by"] = _set_by(row, changes, loader_facts, shell_facts, home)
        kinds[kind] = row
    return kinds


def _set_by(row: dict, changes: list, loader_facts: dict, shell_facts: dict, home: str) -> str | None:
    step, entry = row.get("step"), (row.get("entry") or "").rstrip("/")
    if step == "LD_LIBRARY_PATH":
        return (rules.startup_line(changes, entry, home)
                or rules.etc_environment_line(shell_facts.get("etc_environment"), entry)
                or "the environment the process started with")
    if step == "ld cache":
        conf = rules.conf_row(loader_facts.get("conf"), entry)
        return f"{conf['file']}:{conf['line']}" if conf else \
            "/etc/ld.so.cache (no /etc/ld.so.conf* line lists it: a cache older than its files)"
    if step == "/etc/ld.so.preload":
        for line in loader_facts.get("preload") or []:
            if "libcuda" in line["entry"]:
                return f"/etc/ld.so.preload:{line['line']}"
        return "/etc/ld.so.preload"
    if step == "LD_PRELOAD":
        return "LD_PRELOAD"
    return None
