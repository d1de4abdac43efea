"""The facts probe: ONE bash script of `facts.<source>` sections, and the pure parse of what it printed.

`script(vars)` and `parse(sections, host_name)` are the primitive API: the engine appends its own check
sections to the script, runs the lot as one remote command, and hands the sections back here.
Everything the script does is read-only. Values from vars reach the shell through shlex.quote only.
"""

from __future__ import annotations

import posixpath
from datetime import datetime, timezone

from .. import __version__
from ..sections import Section, background, together
from . import cuda, gpu, shells, software, system
from .record import assemble

DEFAULTS = {"python_env": "/opt/fleet/venv", "cutlass_dir": "/opt/cutlass"}


def _settings(vars: dict | None) -> dict:
    merged = {**DEFAULTS, **{k: v for k, v in (vars or {}).items() if v is not None}}
    for name in ("python_env", "cutlass_dir"):
        if not str(merged[name]).startswith("/"):
            raise ValueError(f"{name} must be an absolute path, not {merged[name]!r}")
    return merged


def disk_dirs(vars: dict | None) -> list[str]:
    """Where roles write: the venv's parent (torch is GBs), the CUTLASS checkout, / and /workspace."""
    settings = _settings(vars)
    python_parent = posixpath.dirname(str(settings["python_env"]).rstrip("/")) or "/"
    # /workspace: a pod's volume disk, where fleet.decide.storage puts the venv when it is its own mount
    return list(dict.fromkeys([python_parent, str(settings["cutlass_dir"]), "/", "/workspace"]))


def bodies(vars: dict | None = None) -> dict[str, str]:
    """Source name -> shell body, in the order the script runs them (cheap first, torch last)."""
    settings = _settings(vars)
    return {
        "uname": system.UNAME,
        "os_release": system.OS_RELEASE,
        "identity": system.IDENTITY,
        "cpu": system.CPU,
        "meminfo": system.MEMINFO,
        "df": system.df_command(disk_dirs(settings)),
        "driver": gpu.DRIVER,
        "kernel_gpus": gpu.KERNEL_GPUS,
        "tegra": gpu.TEGRA,
        "dt_model": gpu.DT_MODEL,
        "nvidia_smi": gpu.NVIDIA_SMI,
        "nvidia_smi_header": gpu.NVIDIA_SMI_HEADER,
        "cuda_toolkits": cuda.TOOLKITS.strip(),
        "cuda_compat": cuda.COMPAT.strip(),
        "libraries": cuda.libraries_command(),
        "env": software.ENV,
        "shells": shells.command(),
        "python": software.python_command(str(settings["python_env"])),
        "cutlass": software.cutlass_command(str(settings["cutlass_dir"])),
        "verify": software.VERIFY,
        "torch": software.torch_command(str(settings["python_env"])),
    }


def parts(vars: dict | None = None) -> list[tuple[str, str]]:
    """The probe as background sections (sections.background), one per source, for sections.together: read-only
    sources that need nothing from each other, so they all start at once and are printed in order as each ends.
    The probe takes the time of its slowest source, not the sum (on the real H100 the sum was ~150 ms of a 245 ms
    probe, the slowest ~37 ms: tests/data/h100-device/issue14-s4). What each prints is unchanged."""
    # LC_ALL=C: parsers read English tool output whatever locale the user's shell set. Set inside each
    # section (a subshell), so check sections the engine appends to this script keep the user's locale.
    # The shells' trace is kept at the top level too: the verify gate the engine runs after the background sections
    # reads each shell's LD_LIBRARY_PATH from it (its frame lines are ignored), starting no shell of its own.
    return [background(f"facts.{name}", f"export LC_ALL=C\n{body}", keep_in=shells.CAPTURED if name == "shells" else None)
            for name, body in bodies(vars).items()]


def script(vars: dict | None = None) -> str:
    """The whole probe as one bash script: one `facts.<source>` section per source, all running at once."""
    return together(parts(vars))


def parse(sections: dict[str, Section], host_name: str, *, now: datetime | None = None) -> dict:
    """Framed probe output -> the facts record (docs/ARCHITECTURE.md). Pure: never raises for host output."""
    gathered = (now or datetime.now(timezone.utc)).astimezone(timezone.utc)
    outputs = {name[len("facts."):]: sec.output for name, sec in sections.items() if name.startswith("facts.")}
    record = assemble(outputs, expected=list(bodies().keys()))
    return {
        "host": host_name,
        "gathered_at": gathered.isoformat(timespec="seconds").replace("+00:00", "Z"),
        "fleet_version": __version__,
        **record,
    }
