"""What a GPU is: its compute capability, its class (for forward compatibility), and
whether a list of compiled architectures runs on it.

Capabilities and names: developer.nvidia.com/cuda-gpus. Which kinds of GPU may use forward
compatibility (data-center GPUs and Jetson; never GeForce, error 804; never Thor, error 803) is the
kinds table in fleet/knowledge/platforms.py; shared/DOMAIN.md.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from fleet.knowledge import platforms

# First match wins, so the longer names (GH200, GB200, A100) come before those they contain.
_CAPABILITY_BY_NAME: tuple[tuple[str, str], ...] = (
    (r"\bThor\b", "11.0"), (r"\bOrin\b", "8.7"), (r"\bGB10\b", "12.1"),
    (r"\bGB300\b|\bB300\b", "10.3"), (r"\bGB200\b|\bB200\b|\bB100\b", "10.0"),
    (r"\bGH200\b|\bH200\b|\bH100\b|\bH800\b|\bH20\b", "9.0"),
    (r"\bL40S?\b|\bL4\b|\bL20\b|RTX 6000 Ada|RTX 40\d0", "8.9"),
    (r"\bA100\b|\bA800\b|\bA30\b", "8.0"),
    (r"\bA40\b|\bA10G?\b|\bA16\b|\bA2\b|RTX A\d000|RTX 30\d0", "8.6"),
    (r"RTX PRO \d000 Blackwell|RTX 50\d0", "12.0"),
    (r"\bT4\b|RTX 20\d0|TITAN RTX|GTX 16\d0", "7.5"),
    (r"\bV100\b|TITAN V\b", "7.0"),
    (r"\bP100\b", "6.0"), (r"\bP40\b|\bP4\b|GTX 10\d0", "6.1"),
)

@dataclass(frozen=True)
class Gpu:
    name: str
    capability: str | None       # "9.0", from nvidia-smi or, failing that, from the name
    capability_source: str       # "reported" | "from the name" | "unknown"
    kind: str                    # data-center | geforce | thor | jetson | spark | workstation | unknown

    @property
    def label(self) -> str:
        """'H100 80GB HBM3' rather than 'NVIDIA H100 80GB HBM3': shorter in reasons."""
        return self.name.removeprefix("NVIDIA ").strip() or "GPU"


def read_gpu(entry: dict, platform: str) -> Gpu:
    name = str(entry.get("name") or "unknown GPU")
    reported = entry.get("compute_cap")
    if isinstance(reported, (str, int, float)) and re.fullmatch(r"\d+\.\d+", str(reported)):
        capability, source = str(reported), "reported"
    else:
        capability = capability_from_name(name)
        source = "from the name" if capability else "unknown"
    return Gpu(name, capability, source, platforms.gpu_kind(name, platform))


def capability_from_name(name: str) -> str | None:
    for pattern, capability in _CAPABILITY_BY_NAME:
        if re.search(pattern, name):
            return capability
    return None


def forward_compat_refusal(gpu: Gpu) -> str | None:
    """Why this GPU may not use cuda-compat, or None where it may (its kind's row, fleet/knowledge/platforms.py)."""
    return platforms.kind(gpu.kind).refusal


def compat_harm(platform: str | None, gpu_names: list[str], driver: str | None, compat_version: str | None) -> str:
    """What a cuda-compat directory that something other than fleet put on LD_LIBRARY_PATH does on this host,
    by the rule decide_compat follows (the kinds table): on a GPU whose kind forward compatibility excludes,
    that kind's error; a compat libcuda not newer than the kernel driver, 803. fleet/decide/loader.py puts it
    beside each such startup line (facts.env.compat_lines, observed by facts/shells.py) and each ld cache entry."""
    gpus = [read_gpu({"name": name}, platform or "") for name in gpu_names if name]
    row = platforms.platform(platform)
    if not gpus and row and row.gpu_kind:   # the platform fixes its GPU's kind (Thor, Spark): no name needed
        gpus = [Gpu("", None, "unknown", row.gpu_kind)]
    harm = next((platforms.kind(g.kind).harm for g in gpus if platforms.kind(g.kind).harm), None)
    if harm:
        return harm
    if driver and compat_version and _loose_key(compat_version) <= _loose_key(driver):
        return f"error 803 under driver {driver} (cuda-compat {compat_version} is not newer)"
    if driver and compat_version:
        return f"compat {compat_version} over driver {driver}: fleet alone decides where it goes on the path"
    return "a compat libcuda placed by hand: fleet alone decides where it goes on the path"


def _loose_key(version: str) -> tuple:
    return tuple(int(p) if p.isdigit() else 0 for p in version.split("."))


# ---------------------------------------------------------------- architectures

_ARCH = re.compile(r"^(sm|compute)_(\d+)(\d)([a-z]?)$")


def parse_arch(entry: str) -> tuple[str, int, int, str] | None:
    """'sm_90a' -> ('sm', 9, 0, 'a'); 'compute_120' -> ('compute', 12, 0, '')."""
    match = _ARCH.match(entry.strip())
    if not match:
        return None
    kind, major, minor, suffix = match.groups()
    return kind, int(major), int(minor), suffix


def runs_on(arch_list: list[str], capability: str) -> str | None:
    """The entry of `arch_list` that runs on `capability`, or None.

    A cubin runs on the same major with an equal or lower minor (sm_120 on 12.1); an
    arch-specific cubin ('a': sm_90a) only on exactly its own capability; PTX (compute_XY)
    is JIT-compiled for any capability at or above XY.
    """
    major, minor = (int(part) for part in capability.split(".")[:2])
    for entry in arch_list:
        parsed = parse_arch(entry)
        if not parsed:
            continue
        kind, a_major, a_minor, suffix = parsed
        if kind == "sm" and a_major == major and (a_minor == minor or (a_minor < minor and suffix != "a")):
            return entry
        if kind == "compute" and (a_major, a_minor) <= (major, minor):
            return entry
    return None


def arch_entries(spec: str) -> list[str]:
    """DOMAIN's '7.5 8.0 12.0+PTX' -> ['sm_75', 'sm_80', 'sm_120', 'compute_120']."""
    entries = []
    for item in spec.split():
        ptx = item.endswith("+PTX")
        digits = item.removesuffix("+PTX").replace(".", "")
        entries.append(f"sm_{digits}")
        if ptx:
            entries.append(f"compute_{digits}")
    return entries
