"""A bare git repository standing in for github.com/NVIDIA/cutlass: real tags (v4.3.0, v4.7.0, and a
v4.2.1 backport tagged after them, so tags must be sorted by version, not date), include/cutlass/version.h
and include/cute/tensor.hpp."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from fleet.errors import LabError

from . import bandwidth

# (tag, commit date): v4.2.1 is a backport published after v4.3.0, as CUTLASS's are.
RELEASES = [("4.3.0", "2025-11-20T12:00:00Z"), ("4.7.0", "2026-08-14T12:00:00Z"), ("4.2.1", "2026-08-20T12:00:00Z")]

VERSION_H = """/* fleet lab stand-in for CUTLASS {v}: not NVIDIA's sources. */
#pragma once

#define CUTLASS_MAJOR {major}
#define CUTLASS_MINOR {minor}
#define CUTLASS_PATCH {patch}
#define CUTLASS_VERSION ((CUTLASS_MAJOR)*100 + (CUTLASS_MINOR)*10 + CUTLASS_PATCH)
"""


def _git(cwd: Path, *args: str, date: str | None = None) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "fleet lab", "GIT_AUTHOR_EMAIL": "lab@fleet.invalid",
           "GIT_COMMITTER_NAME": "fleet lab", "GIT_COMMITTER_EMAIL": "lab@fleet.invalid",
           "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}
    if date:
        env.update(GIT_AUTHOR_DATE=date, GIT_COMMITTER_DATE=date)
    proc = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise LabError(f"git {args[0]} failed while building the lab's CUTLASS stand-in: {proc.stderr.strip()}; "
                       "install git (apt-get install git)")


def build_cutlass(out: Path) -> None:
    if not shutil.which("git"):
        raise LabError("the lab's CUTLASS stand-in is a git repository and git is not installed; "
                       "run: apt-get install git")
    with tempfile.TemporaryDirectory(prefix="fleet-cutlass-") as tmp:
        work = Path(tmp)
        _git(work, "init", "-q", "-b", "main")
        for version, date in RELEASES:
            major, minor, patch = version.split(".")
            if version == "4.2.1":  # the backport branches from nothing newer than 4.2
                _git(work, "checkout", "-q", "--orphan", "release/4.2")
            files = {"include/cutlass/version.h": VERSION_H.format(v=version, major=major, minor=minor, patch=patch),
                     "include/cute/tensor.hpp": f"// fleet lab stand-in for cute/tensor.hpp (CUTLASS {version})\n"
                                                "#pragma once\n#include <cutlass/version.h>\n",
                     "README.md": f"# CUTLASS {version} (fleet lab stand-in)\n\nNot NVIDIA's CUTLASS: headers "
                                  "with the real layout and version macros, for rehearsals.\n"}
            for rel, text in files.items():
                (work / rel).parent.mkdir(parents=True, exist_ok=True)
                (work / rel).write_text(text)
            # a clone's real size (bandwidth.py): one blob every tag shares, so a clone fetches it once
            (work / bandwidth.PAYLOAD["cutlass"]).parent.mkdir(parents=True, exist_ok=True)
            (work / bandwidth.PAYLOAD["cutlass"]).write_bytes(bandwidth.payload("cutlass"))
            _git(work, "add", "-A")
            _git(work, "commit", "-q", "-m", f"CUTLASS {version} (fleet lab stand-in)", date=date)
            _git(work, "tag", "-a", f"v{version}", "-m", f"CUTLASS {version}", date=date)
        _git(work, "checkout", "-q", "main")
        out.parent.mkdir(parents=True, exist_ok=True)
        _git(work, "clone", "-q", "--bare", str(work), str(out))
        # served over dumb HTTP (static files, as github.com/NVIDIA/cutlass.git is cloned in the lab)
        _git(out, "update-server-info")
