"""The variables decisions read, their public defaults, and their validation.

Every source is a variable with the real public default, so a mirror or the lab can
replace it (shared/DESIGN.md). Values may come from YAML (typed: `cuda_version: 13.0`
is a float) or from `--set NAME=VALUE` (text), so everything is normalised to text here.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from fleet.decide.versions import MIN_DRIVER, known_releases, major_minor

DEFAULTS: dict[str, str] = {
    "cuda_version": "13.0",
    "cuda_apt_repo": "https://developer.download.nvidia.com/compute/cuda/repos/{distro}/{arch}/",
    "torch_version": "2.11.0",
    "torch_index_url": "https://download.pytorch.org/whl/cu130",
    "torch_source": "official",
    "jetson_torch_index_url": "https://pypi.jetson-ai-lab.io/sbsa/cu130",
    "torch_cuda": "",  # CUDA of the torch index when its URL does not say (a mirror); "" = read the URL
    "nvpl_source": "pypi",
    "cudss_source": "pypi",
    "python_env": "/opt/fleet/venv",
    "nvpl_redist_url": "https://developer.download.nvidia.com/compute/nvpl/redist/",
    "cudss_redist_url": "https://developer.download.nvidia.com/compute/cudss/redist/",
    "nvpl_home": "/opt/nvidia/nvpl",
    "cudss_home": "/opt/nvidia/cudss",
}

CHOICES: dict[str, tuple[str, ...]] = {
    "torch_source": ("official", "jetson"),
    "nvpl_source": ("pypi", "apt", "tarball"),
    "cudss_source": ("pypi", "apt", "tarball"),
}

_TORCH_VERSION = re.compile(r"^\d+\.\d+(\.\d+)?$")


class VariableError(ValueError):
    """A variable's value cannot be used; the message is one sentence with the fix."""


@dataclass(frozen=True)
class Vars:
    cuda_version: str
    cuda_apt_repo: str
    torch_version: str
    torch_index_url: str
    torch_source: str
    jetson_torch_index_url: str
    torch_cuda: str
    nvpl_source: str
    cudss_source: str
    python_env: str
    nvpl_redist_url: str
    cudss_redist_url: str
    nvpl_home: str
    cudss_home: str

    @property
    def cuda_dashed(self) -> str:
        """'13.0' -> '13-0', as in the package names cuda-toolkit-13-0 and cuda-compat-13-0."""
        return self.cuda_version.replace(".", "-")

    @property
    def cuda_major(self) -> str:
        return self.cuda_version.split(".")[0]


def resolve(values: dict) -> Vars:
    """Defaults overlaid with `values` (unknown names are left to the roles that read them)."""
    merged = {name: _text(values.get(name, default)) for name, default in DEFAULTS.items()}
    for name, allowed in CHOICES.items():
        if merged[name] not in allowed:
            raise VariableError(f"{name}={merged[name]!r} is not one of {', '.join(allowed)}: set one of those.")
    merged["cuda_version"] = _cuda_version(merged["cuda_version"])
    if not _TORCH_VERSION.match(merged["torch_version"]):
        raise VariableError(f"torch_version={merged['torch_version']!r} is not a version like 2.11.0: set one.")
    if merged["torch_cuda"]:
        merged["torch_cuda"] = _cuda_version(merged["torch_cuda"], name="torch_cuda")
    if not merged["python_env"].startswith("/"):
        raise VariableError(f"python_env={merged['python_env']!r} is not an absolute path: "
                            f"set one like /opt/fleet/venv.")
    return Vars(**merged)


def _text(value) -> str:
    return "" if value is None else str(value).strip()


def _cuda_version(value: str, name: str = "cuda_version") -> str:
    try:
        release = major_minor(value)
    except ValueError:
        raise VariableError(f"{name}={value!r} is not a CUDA release like 13.0: "
                            f"set one of {known_releases()}.") from None
    if name == "cuda_version" and release not in MIN_DRIVER:
        raise VariableError(f"{name}={value!r} is not a CUDA release fleet knows the driver for: "
                            f"set one of {known_releases()}.")
    return release
