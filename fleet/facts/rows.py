"""A facts record as rows, and what changed between two records of one host.

    flatten(record) -> {"system.arch": "x86_64", "gpus.0.compute_cap": "9.0", ...}   one cell per fact path
    drift(previous, current) -> [(path, before, after)]                              less what moves on its own

The one reading of a record as rows: `fleet facts` lays hosts side by side from it (fleet/report/compare.py), and
--drift and the history store's "nothing changed" digest (fleet/store/) compare a host's records with it. The facts
that move on their own (fleet/facts/readings.py) are no change of a host.
"""

from __future__ import annotations

import re

from fleet.facts.readings import moves_on_its_own

# Bookkeeping that always differs, or detail already summarised elsewhere in the table.
SKIP = {"host", "gathered_at", "fleet_version", "probe.raw", "probe.notes", "library_sources", "system.disks",
        "torch.warnings", "cuda.compat.all", "system.mem_available_mb", "shells.home", "verify.cuda",
        "verify.perf.look", "verify_fingerprint", "verify.verdict", "verify.was_passed"}
# Readings of a working GPU that move by the second (GPU health, issue 36), and the health's copy of each GPU's uuid:
# neither compared nor drift.
HEALTH_NOISE = re.compile(r"^health\.gpus\.\d+\.(power\.draw|clocks\.sm|uuid)$")
ABSENT = "-"


def show(value) -> str:
    """One cell: None -> "-", True -> "yes", ["sm_90", "sm_100"] -> "sm_90 sm_100"."""
    if value is None:
        return ABSENT
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        return " ".join(show(item) for item in value) if value else "none"
    return str(value)


def flatten(record: dict | None) -> dict[str, str]:
    """A record -> {"system.arch": "x86_64", "gpus.0.compute_cap": "9.0", "libraries.libcudss.so.0": "-", ...}.

    Nested dicts and lists of dicts are walked (gpus.0.name); lists of plain values become one cell.
    verify.checks is summarised as "3/4 passed" plus one row per failing check.
    """
    rows: dict[str, str] = {}
    _walk(record or {}, "", rows)
    return rows


# The paths summarised in a row of their own below: every other path goes straight to the plain walk (a record's ~550
# paths, each once a host at every run into the history store: its digest is this walk).
_SUMMARISED = {"verify", "verify.stale", "verify.checks", "env.compat_lines", "loader.kinds", "loader.conf",
               "loader.preload", "loader.cache"}
_LD_CHANGES = re.compile(r"shells\.\w+\.ld_changes")


_PLAIN = {str, int, float, bool}


def _walk(value, prefix: str, rows: dict[str, str]) -> None:
    if prefix in SKIP or (prefix.startswith("health.") and HEALTH_NOISE.match(prefix)):
        return
    if prefix in _SUMMARISED or prefix.endswith(".ld_changes"):
        if _summarised(value, prefix, rows):
            return
        if prefix == "verify" and isinstance(value, dict) and value.get("verdict") == "stale":
            # shown as passed only while its fingerprint holds: a stale verdict says "stale" and why, never "yes"
            value = {**value, "passed": "stale", "summary": f"stale (was: {value.get('summary')})"}
    if isinstance(value, str):      # most of a record: a row as it is
        rows[prefix] = value
    elif isinstance(value, dict):
        if not value and prefix:
            rows[prefix] = ABSENT
        for key, item in value.items():
            path = f"{prefix}.{key}" if prefix else str(key)
            if item is None or type(item) in _PLAIN:   # one row, unless skipped (none is summarised): no call
                if path not in SKIP and not (path.startswith("health.") and HEALTH_NOISE.match(path)):
                    rows[path] = item if type(item) is str else show(item)
            else:
                _walk(item, path, rows)
    elif isinstance(value, list) and any(isinstance(item, dict) for item in value):
        for index, item in enumerate(value):
            _walk(item, f"{prefix}.{index}", rows)
    else:
        rows[prefix] = show(value)


def _summarised(value, prefix: str, rows: dict[str, str]) -> bool:
    """The rows of a path summarised in its own way (True), or False: walk it as any other."""
    if prefix == "verify.stale" and isinstance(value, list):
        rows[prefix] = "; ".join(str(reason) for reason in value) if value else "no"
        return True
    if prefix == "verify.checks" and isinstance(value, list):
        passed = sum(1 for check in value if isinstance(check, dict) and check.get("passed"))
        rows[prefix] = f"{passed}/{len(value)} passed"
        for check in value:
            if isinstance(check, dict) and not check.get("passed"):
                rows[f"verify.failed.{check.get('name')}"] = show(check.get("detail"))
        return True
    if prefix == "env.compat_lines" and isinstance(value, list):   # one sentence per neutralized line
        rows[prefix] = str(len(value)) if value else "none"
        for i, line in enumerate(value):
            rows[f"{prefix}.{i}"] = show(line.get("says") if isinstance(line, dict) else line)
        return True
    if prefix == "loader.kinds" and isinstance(value, dict):   # one row per kind of process: its libcuda and why
        for kind, seen in value.items():
            if isinstance(seen, dict):
                rows[f"loader.{kind}"] = " ".join(str(part) for part in (
                    seen.get("libcuda") or "none", f"({seen['version']})" if seen.get("version") else "",
                    "stub" if seen.get("stub") else "", f"by {seen['step']}" if seen.get("step") else "",
                    seen.get("set_by") or "") if part)
        return True
    if prefix in ("loader.conf", "loader.preload") and isinstance(value, list):   # file:line dir, one cell
        rows[prefix] = " ".join(f"{c.get('file')}:{c.get('line')}={c.get('dir') or c.get('entry')}"
                                for c in value if isinstance(c, dict)) or "none"
        return True
    if prefix == "loader.cache" and isinstance(value, list):
        rows[prefix] = " ".join(f"{c.get('name')}={c.get('real')}" for c in value if isinstance(c, dict)) or "none"
        return True
    if _LD_CHANGES.fullmatch(prefix) and isinstance(value, list):   # file:line of each change
        rows[prefix] = " ".join(f"{c.get('file')}:{c.get('line')}" for c in value if isinstance(c, dict)) or "none"
        return True
    return False


def drift(previous: dict | None, current: dict | None) -> list[tuple[str, str, str]]:
    """What changed between two records of one host: [(path, before, after)] (a driver upgrade, a library gone).
    The facts that move on their own (fleet/facts/readings.py: the kernel log's length, temperatures, free disk)
    are no change of the host: left out."""
    before, after = flatten(previous), flatten(current)
    paths = list(dict.fromkeys([*before, *after]))
    return [(path, before.get(path, ABSENT), after.get(path, ABSENT)) for path in paths
            if not moves_on_its_own(path) and before.get(path, ABSENT) != after.get(path, ABSENT)]
