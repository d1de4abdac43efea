"""The shells' trace read in one place: what fleet.facts.shells' command prints for each kind of shell people open,
as data. The facts parse with it (fleet/facts/shells.py parse, which adds the loader's answer and scrubs what it
keeps), and the verify program carries this very text to the host (fleet/resources/verify.py bundles it), where it
names the startup file:line behind a failed kind of process from the same lines.

Standalone and stdlib only (it runs under the host's python, where fleet is not installed).

    @@home /root
    @@etcenv 3	LD_LIBRARY_PATH	/opt/x
    @@shell interactive
    @@change	1	/root/.bashrc	118	/usr/lib	/usr/local/cuda-13.0/compat:/usr/lib	. /root/pod_setup.sh	
    @@value LD_LIBRARY_PATH=/usr/local/cuda-13.0/compat:/usr/lib
    @@unset CUDA_HOME
    @@set	2	1	/root/.bashrc	4	export CUDA_HOME=/usr/local/cuda-12.4	
    @@cmd nvcc	/usr/local/cuda-12.4/bin/nvcc	/usr/local/cuda-12.4/bin/nvcc	12.4.1	path	
    @@def	1	/root/.bashrc	120	alias python3=/usr/bin/python3	
    @@cmd python3	/usr/bin/python3	/usr/bin/python3.12		alias	/usr/bin/python3
    @@py /opt/venv/bin/python3	/opt/venv	/opt/venv/lib/python3.12/site-packages/torch	0	-
    @@py /usr/bin/python3	/usr	/root/src/torch	1	PYTHONPATH
    @@fam NCCL_P2P_DISABLE=1
    @@famset	NCCL_P2P_DISABLE	1	/root/.bashrc	1	export NCCL_P2P_DISABLE=1	
    @@famunset	CUDA_LAUNCH_BLOCKING	1	/root/.bashrc	2	unset CUDA_LAUNCH_BLOCKING	
    @@limit nofile 256
    @@limset	nofile	1	/root/.bashrc	3	ulimit -n 256	
    @@nccl NCCL_NVLS_ENABLE=0	/etc/nccl.conf	1
    @@rc 0
-> {home: "/root", etc_environment: [{file, line, name, value}], accept_env: [{file, line, patterns}] (where sshd has any),
    limits_conf: [{file, line, type, item, value}] (pam_limits' nofile/memlock lines for the user, under UsePAM),
    interactive: {LD_LIBRARY_PATH: "...", PATH: ..., CUDA_HOME: None, ..., rc: 0,
                  families: {NCCL_P2P_DISABLE: "1", LD_LIBRARY_PATH: "...", ...},
                  unset_by: {CUDA_LAUNCH_BLOCKING: {file, line, depth, text, via}},
                  limits: {memlock: 8192 | "unlimited", nofile: 256}, limits_set_by: {nofile: {file, line, ...}},
                  nccl_conf: {NCCL_NVLS_ENABLE: {value: "0", file: "/etc/nccl.conf", line: 1}},
                  ld_changes: [{file, line, depth, text, before, after, via: ["/root/.bashrc:118"]}],
                  loader_lines: ["@@ld..."], set_by: {CUDA_HOME: {file, line, depth, text, via}},
                  commands: {nvcc: {path, real, version, how, by}, pip: {path, real, python, how, by},
                             python3: {path, real, how: "alias", by: {file, line, ...}, alias: "/usr/bin/python3"}},
                  pythons: {exe: {prefix, torch, externally_managed, ran, torch_from: {by: "PYTHONPATH"} | None}}}}
(how, by, alias/hashed and torch_from only from traces that carry them: fleet/remote/shells_commands.sh's resolution
fields, @@def lines, fleet/remote/shells_python.py's last field)
"""

import shlex

from . import families as fams, loader_rules

KINDS = ("noninteractive", "interactive", "login")
# Every variable that decides what CUDA, the loader, Python and torch see (shared/DOMAIN.md, "What a process sees
# beyond libcuda"): its value in each kind and the startup line that last set it. LD_LIBRARY_PATH's every change
# is kept too (ld_changes: the cuda-compat judgement reads them).
VARS = ("LD_LIBRARY_PATH", "PATH", "CUDA_HOME", "CUDA_PATH", "CUDACXX", "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER",
        "NVIDIA_VISIBLE_DEVICES", "LD_PRELOAD", "PYTHONPATH", "PYTHONHOME", "PYTHONNOUSERSITE", "PYTHONUSERBASE",
        "VIRTUAL_ENV", "CONDA_PREFIX", "PYTORCH_NVML_BASED_CUDA_CHECK")
TRACKED = VARS[1:]       # carried in each trace line after LD_LIBRARY_PATH; @@set names them by position (1-based)
# Every other exported variable of the families a GPU job reads (fleet/remote/families.py) is listed at the end of each
# kind (@@fam), with the traced command that last set it (@@famset: shells_trace.awk reads the commands): `families`
# holds them and the VARS of the families that are set, `set_by` their lines.


def parse(text):
    """The trace's lines -> each kind's values, changes and setters, as the module's docstring shows. Lines before
    the first @@shell belong to no kind; a kind traced twice keeps its last trace. Never raises on a line."""
    out = {"home": None, "etc_environment": []}
    current = None
    defs: dict = {}     # each kind's @@def lines (alias, unalias, hash): read when its @@cmd lines come
    for raw in text.splitlines():
        if raw.startswith("@@home "):
            out["home"] = raw[7:]
        elif raw.startswith("@@etcenv "):
            out["etc_environment"].append(loader_rules.parse_etcenv(raw))
        elif raw.startswith("@@limconf "):     # pam_limits' lines for this user's nofile and memlock (limits.conf)
            line, kind, item, value, file = (raw[10:].split("\t") + [""] * 4)[:5]
            out.setdefault("limits_conf", []).append({"file": file, "line": int(line) if line.isdigit() else None,
                                                      "type": kind, "item": item, "value": value})
        elif raw.startswith("@@acceptenv "):   # sshd's AcceptEnv: the names a client may send into every session
            line, patterns, file = (raw[12:].split("\t") + ["", ""])[:3]
            out.setdefault("accept_env", []).append({"file": file, "line": int(line) if line.isdigit() else None,
                                                     "patterns": patterns.split()})
        elif raw.startswith("@@shell "):
            current = out[raw[8:].strip()] = {**{v: None for v in VARS}, "rc": None, "ld_changes": [],
                                              "loader_lines": [], "set_by": {}, "commands": {}, "pythons": {},
                                              "families": {}, "unset_by": {}, "limits": {},
                                              "limits_set_by": {}, "nccl_conf": {}}
        elif current is None:
            continue
        elif raw.startswith("@@ld"):
            current["loader_lines"].append(raw)
        elif raw.startswith("@@value "):
            name, _, value = raw[8:].partition("=")
            if name in VARS:
                current[name] = value
                if fams.is_family(name):
                    current["families"][name] = value
        elif raw.startswith("@@fam "):
            name, _, value = raw[6:].partition("=")
            if fams.is_family(name) and name not in VARS:
                current["families"][name] = value
        elif raw.startswith("@@famset\t"):
            name, depth, file, line, cmd, via = (raw.split("\t") + [""] * 7)[1:7]
            if fams.is_family(name) and name not in VARS:
                current["set_by"][name] = {
                    "file": file, "line": int(line) if line.isdigit() else None,
                    "depth": int(depth) if depth.isdigit() else 0, "text": cmd, "via": [v for v in via.split(">") if v]}
        elif raw.startswith("@@famunset\t"):   # a variable of the families a startup line unset (none set it after)
            name, depth, file, line, cmd, via = (raw.split("\t") + [""] * 7)[1:7]
            # (a name the kind has at its end was set again by a line the trace's reader could not read: not unset)
            if fams.is_family(name) and current.get(name) is None and name not in current["families"]:
                current["unset_by"][name] = {
                    "file": file, "line": int(line) if line.isdigit() else None,
                    "depth": int(depth) if depth.isdigit() else 0, "text": cmd, "via": [v for v in via.split(">") if v]}
        elif raw.startswith("@@limit "):      # `@@limit nofile 1024`: ulimit's answer in this kind
            key, _, value = raw[8:].partition(" ")
            value = value.strip()
            current["limits"][key] = int(value) if value.isdigit() else value or None
        elif raw.startswith("@@limset\t"):   # the startup line of this kind that last ran `ulimit -n/-l VALUE`
            key, depth, file, line, cmd, via = (raw.split("\t") + [""] * 7)[1:7]
            current["limits_set_by"][key] = {
                "file": file, "line": int(line) if line.isdigit() else None,
                "depth": int(depth) if depth.isdigit() else 0, "text": cmd, "via": [v for v in via.split(">") if v]}
        elif raw.startswith("@@nccl "):       # `@@nccl NAME=VALUE\tFILE\tLINE`: NCCL's config file gives NAME
            pair, file, line = (raw[7:].split("\t") + ["", ""])[:3]
            name, _, value = pair.partition("=")
            if fams.is_family(name):
                current["nccl_conf"][name] = {"value": value, "file": file,
                                              "line": int(line) if line.isdigit() else None}
        elif raw.startswith("@@rc "):
            current["rc"] = int(raw[5:]) if raw[5:].strip().lstrip("-").isdigit() else None
        elif raw.startswith("@@set\t"):
            index, depth, file, line, cmd, via = (raw.split("\t") + [""] * 7)[1:7]
            if index.isdigit() and 1 <= int(index) <= len(TRACKED):
                current["set_by"][TRACKED[int(index) - 1]] = {
                    "file": file, "line": int(line) if line.isdigit() else None,
                    "depth": int(depth) if depth.isdigit() else 0, "text": cmd, "via": [v for v in via.split(">") if v]}
        elif raw.startswith("@@def\t"):
            defs.setdefault(id(current), []).append(raw)
        elif raw.startswith("@@cmd "):
            fields = raw[6:].split("\t")
            name, path, real, extra = (fields + [""] * 4)[:4]
            current["commands"][name] = {"path": path or None, "real": real or None,
                                         **({"version": extra or None} if name == "nvcc" else {}),
                                         **({"python": extra or None} if name == "pip" else {})}
            if len(fields) > 4:     # how the name resolves (shells_commands.sh; traces before it say nothing)
                current["commands"][name].update(resolved(name, fields[4], fields[5] if len(fields) > 5 else "",
                                                          defs.get(id(current), [])))
        elif raw.startswith("@@py "):
            exe, _, answer = raw[5:].partition("\t")
            fields = answer.strip().split("\t")
            prefix, torch, managed = (fields + ["", "", ""])[:3]
            current["pythons"][exe] = {"prefix": prefix or None, "torch": None if torch in ("", "-") else torch,
                                       "externally_managed": managed == "1", "ran": bool(prefix)}
            if len(fields) > 3:     # why torch is found there (shells_python.py; traces before it say nothing)
                current["pythons"][exe]["torch_from"] = torch_from(fields[3])
        elif raw.startswith("@@change\t"):
            current["ld_changes"].append(loader_rules.parse_change(raw))
    return out


def resolved(name, how, detail, defs):
    """How `name` resolves in this kind (@@cmd's fifth and sixth fields) -> {"how": "alias" | "function" | "hash" |
    "path", "by": {file, line, depth, text, via} | None, "alias": its text | "hashed": PATH's own answer}. The line is
    the last @@def line that made it: the trace's (`alias python3=...`, `hash -p PATH python3`), or for a function
    the commands' own (bash's declare -F under extdebug: `python3() { ... }` at FILE:LINE)."""
    out = {"how": how or None, "by": None}
    if how == "alias":
        out["alias"] = detail
    elif how == "hash":
        out["hashed"] = detail or None
    for raw in defs:
        depth, file, line, cmd, via = (raw.split("\t") + [""] * 6)[1:6]
        if defines(cmd, name, how):
            out["by"] = {"file": file, "line": int(line) if line.isdigit() else None,
                         "depth": int(depth) if depth.isdigit() else 0, "text": cmd,
                         "via": [v for v in via.split(">") if v]}
    return out


def defines(cmd, name, how):
    """Whether a traced `alias ...` (how "alias"), `hash -p PATH NAME` (how "hash") or the commands' own
    `NAME() { ... }` line (how "function": bash's declare -F) makes `name` so."""
    if how == "function":
        return cmd == f"{name}() {{ ... }}"
    try:
        words = shlex.split(cmd)
    except ValueError:
        words = cmd.split()
    if how == "alias":
        return bool(words) and words[0] == "alias" and any(w.split("=", 1)[0] == name for w in words[1:] if "=" in w)
    return len(words) >= 4 and words[:2] == ["hash", "-p"] and name in words[3:]


def torch_from(field):
    """shells_python.py's last field -> None (site-packages, or no torch) | {"by": "PYTHONPATH" | "user"} |
    {"by": "pth", "file": the .pth file, "line": n}."""
    if field.startswith("pth:"):
        file, _, line = field[4:].rpartition(":")
        return {"by": "pth", "file": file, "line": int(line) if line.isdigit() else None}
    return {"by": field} if field in ("PYTHONPATH", "user") else None
