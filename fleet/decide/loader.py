"""Which step of the loader's path to libcuda.so.1 is harmful on this host, by the rule the compat decision follows.

facts.loader (fleet/facts/loader.py) observes, for each kind of process (bare, ssh, interactive, login), the
libcuda.so.1 the real loader resolves and the step that put it first (LD_PRELOAD, /etc/ld.so.preload,
LD_LIBRARY_PATH and the startup line, the ld cache and its /etc/ld.so.conf* line), and every ld.so.conf and
ld.so.preload line. This module judges them with decide_compat's own answer, so the two never disagree:

- a stub libcuda (a .../stubs/ directory) reaching a process is always harmful: CUDA_ERROR_STUB_LIBRARY (34);
- a cuda-compat directory is harmful wherever compat is NOT decided (decide_compat: the kernel driver runs the
  target CUDA, or forward compatibility is refused here), with the error compat_harm names (803 when the compat
  libcuda is not newer than the kernel driver, 804 on GeForce, ...);
- where compat IS decided, fleet's own gated drop-in (/etc/ld.so.conf.d/000-fleet-cuda-compat.conf, the cuda_compat
  role's) is kept; a kind that loads some other libcuda lacks compat (the compat role's work, named here).

`aside` lists the ld.so.conf* and ld.so.preload lines the ld_aside resource takes out of effect (env_hooks' task),
and `dirs` the ERE of harmful directories that resource matches on the host itself.
"""

from __future__ import annotations

import functools

from fleet.decide.gpu import compat_harm
from fleet.knowledge.loader_paths import KINDS
from fleet.remote import loader_rules
from fleet.remote.loader_rules import COMPAT_DIR_ERE, STUB_DIR_ERE


# Kept per whole path (pure: two regular expressions over the path and its directory): every host names the same
# few libcuda and ld.so.conf paths, ~16 a decide (issue 46). Anything but text is asked afresh.
@functools.lru_cache(maxsize=2048)
def _stub(path: str) -> bool:
    return loader_rules.is_stub(path)


@functools.lru_cache(maxsize=2048)
def _compat(path: str) -> bool:
    return loader_rules.is_compat(path)


def is_stub(path) -> bool:
    return _stub(path) if type(path) is str else loader_rules.is_stub(path)


def is_compat(path) -> bool:
    return _compat(path) if type(path) is str else loader_rules.is_compat(path)

FLEET_COMPAT_CONF = "/etc/ld.so.conf.d/000-fleet-cuda-compat.conf"   # the cuda_compat role's gated drop-in
STUB_HARM = "a stub libcuda: CUDA_ERROR_STUB_LIBRARY (34)"


def harmful_dirs(*, compat: bool, stubs: bool = True) -> str:
    """The ERE (one directory, no anchors) of the directories that must not reach a process here."""
    parts = ([COMPAT_DIR_ERE] if compat else []) + ([STUB_DIR_ERE] if stubs else [])
    return "(" + "|".join("[^[:space:]:#]*" + p for p in parts) + ")"


def decide_loader(facts: dict, host, compat) -> dict:
    """-> {kinds: {kind: {libcuda, version, step, set_by, harm}}, harmful: [sentences], aside: [{file, line, text,
    harm}], dirs: ERE, keep: [files], says: [what the aside does, by file]}"""
    loader = facts.get("loader") if isinstance(facts.get("loader"), dict) else {}
    installed = host.compat or {}
    compat_off_harm = compat_harm(host.platform, [g.name for g in host.gpus], host.driver, installed.get("version"))

    def harm_of(path: str | None) -> str | None:
        if is_stub(path):
            return STUB_HARM
        if is_compat(path) and not compat.use:
            return compat_off_harm
        return None

    kinds: dict = {}
    harmful: list[str] = []
    for kind in KINDS:
        seen = (loader.get("kinds") or {}).get(kind)
        if not isinstance(seen, dict):
            continue
        lib = seen.get("libcuda")
        harm = harm_of(lib) or harm_of(seen.get("real"))
        if harm is None and compat.use and host.has_gpu and lib and not is_compat(lib) and not is_compat(seen.get("real")):
            harm = f"misses cuda-compat ({compat.path} is decided: the kernel driver {host.driver} is too old)"
        kinds[kind] = {"libcuda": lib, "version": seen.get("version"), "step": seen.get("step"),
                       "set_by": seen.get("set_by"), "harm": harm}
        if harm:
            by = f" by {seen.get('step')}" + (f" ({seen['set_by']})" if seen.get("set_by") else "")
            harmful.append(f"{kind}: {lib} (version {seen.get('version') or '?'}) first{by}: {harm}")

    # fleet's own drop-in belongs to the cuda_compat role's gate wherever that role runs (compat decided, or
    # installed and not decided: the gate then takes it away itself): never a second owner for one file
    keep = [FLEET_COMPAT_CONF] if compat.use or getattr(compat, "installed", False) else []
    aside = []
    for line in loader.get("conf") or []:
        harm = harm_of(line.get("dir"))
        if harm and line.get("file") not in keep:
            aside.append({"file": line["file"], "line": line.get("line"), "text": line.get("dir"), "harm": harm})
    for line in loader.get("preload") or []:
        entries = [e for e in str(line.get("entry") or "").replace(":", " ").split() if e]
        harm = next((h for h in map(harm_of, entries) if h), None)
        if harm:
            aside.append({"file": line.get("file") or "/etc/ld.so.preload", "line": line.get("line"),
                          "text": line.get("entry"), "harm": harm})
    says = [f"takes {a['file']}:{a['line']} ({a['text']}) out of the ld cache/preload: {a['harm']}" for a in aside]
    env = facts.get("env") if isinstance(facts.get("env"), dict) else {}
    lines = judged_lines(env.get("compat_lines") or [], compat_off_harm)
    return {"kinds": kinds, "harmful": harmful, "aside": aside, "keep": keep,
            "dirs": harmful_dirs(compat=not compat.use, stubs=True), "says": says, "lines": lines}


def judged_lines(lines: list[dict], harm: str) -> list[dict]:
    """facts.env.compat_lines (startup lines that put cuda-compat on LD_LIBRARY_PATH, observed) with what the compat
    rule says each breaks here: `harm`, and `says` (where, what it does, the harm) as env_hooks' why quotes it."""
    out = []
    for seen in lines:
        if not isinstance(seen, dict) or not seen.get("where"):
            continue
        said = seen.get("says") or f"{seen['where']} {seen.get('effect')}"   # what facts observed it to do
        # "neutralizes" only where no process keeps it after apply: fleet's hook runs last in every shell, but
        # pam_env also gives /etc/environment to PAM sessions that start no shell (cron jobs)
        pam = str(seen.get("file")) == "/etc/environment"
        claim = "overrides in every shell (cron and other PAM sessions without a shell still get it)" if pam \
            else "neutralizes"
        out.append({**seen, "harm": harm, "says": f"{said}: {harm}", "claim": claim})
    return out
