"""What a GPU is: its compute capability, its class (for forward compatibility), and
whether a list of compiled architectures runs on it.

Capabilities and names: developer.nvidia.com/cuda-gpus. Forward compatibility is allowed
on data-center GPUs and Jetson, never on GeForce (error 804), never on Thor (its JetPack
driver is new enough and compat breaks it: error 803); shared/DOMAIN.md.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

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

# Data-center parts that may use cuda-compat (forward compatibility's "NVIDIA Data Center GPUs").
_DATA_CENTER = re.compile(
    r"\b(GH200|GB200|GB300|B300|B200|B100|H200|H100|H800|H20|A100|A800|A40|A30|A16|A10G?|A2|"
    r"L40S?|L20|L4|T4|V100|P100|P40|P4)\b|\bTesla\b")
_GEFORCE = re.compile(r"GeForce|\bTITAN\b|\bGTX\b")


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
    return Gpu(name, capability, source, gpu_kind(name, platform))


def capability_from_name(name: str) -> str | None:
    for pattern, capability in _CAPABILITY_BY_NAME:
        if re.search(pattern, name):
            return capability
    return None


def gpu_kind(name: str, platform: str) -> str:
    if platform == "jetson-thor" or re.search(r"\bThor\b", name):
        return "thor"
    if platform == "jetson-orin" or re.search(r"\b(Orin|Xavier|Tegra)\b", name):
        return "jetson"
    if platform == "dgx-spark" or re.search(r"\bGB10\b", name):
        return "spark"
    if _GEFORCE.search(name):
        return "geforce"
    if _DATA_CENTER.search(name):
        return "data-center"
    if re.search(r"\b(RTX|Quadro)\b", name):
        return "workstation"
    return "unknown"


def forward_compat_refusal(gpu: Gpu) -> str | None:
    """Why this GPU may not use cuda-compat, or None where it may."""
    if gpu.kind in ("data-center", "jetson"):
        return None
    return {
        "geforce": "forward compatibility is not supported on GeForce GPUs (error 804)",
        "thor": "cuda-compat breaks CUDA on Jetson Thor (error 803)",
        "spark": "the DGX Spark's GB10 is neither a data-center GPU nor a Jetson, the only GPUs forward "
                 "compatibility supports (error 804 otherwise)",
        "workstation": "forward compatibility covers only select NGC-ready RTX boards, and fleet "
                       "does not know this one to be one (error 804 otherwise)",
    }.get(gpu.kind, "fleet does not know this GPU to be a data-center GPU, and forward "
                    "compatibility works only on those (error 804 otherwise)")


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
