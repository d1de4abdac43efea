"""Real wheels and PEP 503 "simple" indexes for the stand-in mirror (pip installs them as it would
PyTorch's and PyPI's): the stand-in torch for each index, nvpl-blas, nvpl-lapack, nvidia-cudss-cu13 and -cu12."""

from __future__ import annotations

import base64
import hashlib
import html
import re
import zipfile
from pathlib import Path

TORCH_SOURCES = Path(__file__).parent / "standin_torch"
TORCH_VERSION = "2.11.0+cu130"

# torch.cuda.get_arch_list() per index and machine (shared/DOMAIN.md; the Jetson AI Lab's sbsa/cu130
# list is not published, the lab gives it Thor's and Spark's own targets).
ARCH_FLAGS = {
    ("cu130", "x86_64"): "sm_75 sm_80 sm_86 sm_90 sm_100 sm_120",
    ("cu130", "aarch64"): "sm_80 sm_90 sm_100 sm_110 sm_120",
    ("jetson-cu130", "aarch64"): "sm_87 sm_110 sm_121",
    # pypi.jetson-ai-lab.io/jp6/cu126: JetPack 6 builds for Orin (8.7) only; the index publishes no list either
    ("jetson-jp6-cu126", "aarch64"): "sm_87",
    # download.pytorch.org/whl/cpu: what fleet installs where it sees no GPU (no CUDA kernels at all)
    ("cpu", "x86_64"): "",
    ("cpu", "aarch64"): "",
}


# The CUDA each index's builds are for (torch.version.cuda); None: a CPU build.
INDEX_CUDA = {"cu130": "13.0", "jetson-cu130": "13.0", "jetson-jp6-cu126": "12.6", "cpu": None}


def torch_version(index: str) -> str:
    """The local version label names the build's CUDA, as PyTorch's wheels do (2.11.0+cu130, 2.11.0+cpu)."""
    cuda = INDEX_CUDA[index]
    return TORCH_VERSION.replace("+cu130", f"+cu{cuda.replace('.', '')}" if cuda else "+cpu")


def normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _record_hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def write_wheel(out_dir: Path, name: str, version: str, tag: str, files: dict[str, bytes],
                summary: str, requires: list[str] = ()) -> Path:
    """Write `name-version-tag.whl` holding `files` (archive path -> bytes) plus its .dist-info."""
    dist = f"{name.replace('-', '_')}-{version}"
    meta = [f"Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}", f"Summary: {summary}",
            "Author: fleet lab stand-in", "License: stand-in, no NVIDIA or PyTorch code"]
    meta += [f"Requires-Dist: {req}" for req in requires]
    wheel_meta = f"Wheel-Version: 1.0\nGenerator: fleet-lab\nRoot-Is-Purelib: false\nTag: {tag}\n"
    content = dict(files)
    content[f"{dist}.dist-info/METADATA"] = ("\n".join(meta) + "\n\n" + summary + "\n").encode()
    content[f"{dist}.dist-info/WHEEL"] = wheel_meta.encode()
    content[f"{dist}.dist-info/top_level.txt"] = (sorted({p.split("/")[0] for p in files})[0] + "\n").encode()
    record = [f"{path},{_record_hash(data)},{len(data)}" for path, data in content.items()]
    record.append(f"{dist}.dist-info/RECORD,,")
    content[f"{dist}.dist-info/RECORD"] = ("\n".join(record) + "\n").encode()
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{dist}-{tag}.whl"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for arc, data in content.items():
            info = zipfile.ZipInfo(arc, date_time=(2025, 1, 1, 0, 0, 0))
            info.external_attr = (0o755 if arc.endswith(".so") or ".so." in arc else 0o644) << 16
            info.compress_type = zipfile.ZIP_STORED if "fleet-lab-payload" in arc else zipfile.ZIP_DEFLATED
            zf.writestr(info, data)
    return path


def write_index(index_dir: Path, wheels: dict[str, list[Path]], files_url: str = "") -> None:
    """A PEP 503 index: index.html listing projects, <project>/index.html linking its wheels with sha256.
    The wheels already sit in index_dir/<project>/. `files_url` makes the links absolute, as PyPI's
    simple pages link https://files.pythonhosted.org/packages/..."""
    links = []
    for project, paths in sorted(wheels.items()):
        norm = normalize(project)
        links.append(f'<a href="{norm}/">{html.escape(norm)}</a><br/>')
        rows = []
        for path in sorted(paths):
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
            href = f"{files_url}{norm}/{path.name}" if files_url else path.name
            rows.append(f'<a href="{html.escape(href)}#sha256={digest}">{html.escape(path.name)}</a><br/>')
        (index_dir / norm / "index.html").write_text(_page(f"Links for {norm}", rows))
    (index_dir / "index.html").write_text(_page("fleet lab stand-in simple index", links))


def _page(title: str, rows: list[str]) -> str:
    body = "\n".join(rows)
    return f"<!DOCTYPE html>\n<html><head><title>{title}</title></head><body>\n<h1>{title}</h1>\n{body}\n</body></html>\n"


def torch_files(libs: dict[str, bytes], arch_flags: str, index: str) -> dict[str, bytes]:
    """The stand-in torch package: Python sources, _C extension and torch/lib/*.so."""
    files: dict[str, bytes] = {}
    for src in sorted(TORCH_SOURCES.rglob("*.py")):
        files["torch/" + src.relative_to(TORCH_SOURCES).as_posix()] = src.read_bytes()
    files["torch/version.py"] = (
        f'"""fleet lab stand-in torch ({index} index)."""\n__version__ = "{torch_version(index)}"\n'
        f'cuda = {INDEX_CUDA[index]!r}\n'
        f'git_version = "fleet-lab-standin"\nhip = None\ndebug = False\narch_flags = "{arch_flags}"\n').encode()
    files.update(libs)
    return files
