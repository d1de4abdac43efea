"""Compile the stand-in shared objects and programs (fleet_lab/native/*.c) with the system C compiler.

Every object carries the real soname and the real DT_NEEDED entries, so the real loader, `ldd` and
`ldconfig` treat it as they treat NVIDIA's. The code inside is small and says it is a stand-in.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from fleet.errors import LabError

SOURCES = Path(__file__).parent / "native"


@dataclass
class SharedObject:
    source: str                                   # file in fleet_lab/native/
    soname: str | None = None
    defines: dict[str, str] = field(default_factory=dict)
    needed: list[str] = field(default_factory=list)   # sonames to link against, in DT_NEEDED order
    runpath: str | None = None                    # e.g. "$ORIGIN"


def compiler() -> str:
    for name in ("cc", "gcc"):
        if shutil.which(name):
            return name
    raise LabError("the lab builds its stand-in libraries with a C compiler and none is installed; "
                   "run: apt-get install gcc")


def build(obj: SharedObject, out: Path, link_dir: Path | None = None) -> Path:
    """Compile `obj` into `out`; `link_dir` holds the libraries named in `needed` (by soname)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    cmd = [compiler(), "-shared", "-fPIC", "-O1", "-w", "-o", str(out), str(SOURCES / obj.source)]
    for name, value in obj.defines.items():
        cmd.append(f"-D{name}={value}")
    if obj.soname:
        cmd.append(f"-Wl,-soname,{obj.soname}")
    if obj.runpath:
        cmd.append(f"-Wl,--enable-new-dtags,-rpath,{obj.runpath}")
    if obj.needed:
        # --no-as-needed keeps every library in DT_NEEDED, in this order, as the real builds have them.
        cmd += [f"-L{link_dir}", "-Wl,--no-as-needed"] + [f"-l:{soname}" for soname in obj.needed]
    if obj.source == "uname_override.c":
        cmd.append("-ldl")
    return _compile(cmd, out)


def build_program(source: str, out: Path) -> Path:
    """Compile fleet_lab/native/`source` into the executable `out`: a stand-in command such as nvidia-smi,
    a C program as NVIDIA's is, so that calling it costs what calling the real one costs (no interpreter)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    return _compile([compiler(), "-O2", "-w", "-o", str(out), str(SOURCES / source), "-ldl"], out)


def _compile(cmd: list[str], out: Path) -> Path:
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise LabError(f"building the stand-in {out.name} failed ({shlex.join(cmd)}): {proc.stderr.strip()}")
    return out


def c_string(text: str) -> str:
    """A -D value that the C preprocessor sees as a string literal."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
