"""A CUDA toolkit laid out as NVIDIA's packages lay it out, as far as the shells' facts read it: bin/nvcc and the
version.json whose "cuda" entry names the release (fleet/facts/shells.py reads it instead of starting nvcc)."""

from pathlib import Path


def lay_toolkit(toolkit: Path, version: str) -> Path:
    (toolkit / "bin").mkdir(parents=True)
    (toolkit / "bin" / "nvcc").write_text("#!/bin/sh\n")
    (toolkit / "bin" / "nvcc").chmod(0o755)
    (toolkit / "version.json").write_text(f'{{\n "cuda" : {{\n  "name" : "CUDA SDK",\n  "version" : "{version}"\n }}\n}}\n')
    return toolkit
