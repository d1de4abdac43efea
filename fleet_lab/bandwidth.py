"""The lab's bandwidth: its stand-ins carry real artifacts' sizes scaled down, and its mirror serves them at a
pod's link rate scaled down, so a first apply's wall time in the lab depends on bytes and concurrency as on a pod.

Sizes (real, then served at 1/SCALE; FLEET_LAB_SCALE changes the denominator, baked into the mirror's hash):

    artifact                        real size        where the real size comes from
    cuda-toolkit-13-0 (apt .debs)   ~3.0 GB          issue 27 ("the CUDA toolkit through apt (~3 GB of .debs)")
    torch cu130 wheel               ~900 MB          wheel-next packaging PEPs summary (PyTorch ships "~900MB fat
                                                     binaries"); exact cu130 figure: `pip download` on the H100
    nvidia-* wheels for cu130       ~3.5 GB total    issue 27 ("torch with its nvidia-* wheels (~3.5 GB for cu130)");
                                                     the split among the wheels below is an estimate
    CUTLASS clone                   ~300 MB          estimate of a full clone of github.com/NVIDIA/cutlass
                                                     (history + tags); confirm with `du -sh cutlass/.git`

Each scaled size is real payload the host downloads and verifies: a data member of the .deb (dpkg checks the
archive, `dpkg -V` the md5sums), a file inside the wheel (pip/uv check the RECORD's sha256 and the index's
hash), a blob in the git history (git checks every object's id).

Rates (FLEET_LAB_RATE): "pod" (the default for `fleet lab up`): a pod's 1 Gbit/s (125 MB/s) link scaled by
1/SCALE in bytes and by 1/TIME in time, i.e. 125 MB/s * TIME / SCALE per host; one connection gets
CONNECTION_SHARE of that (a CDN stream rarely fills a pod's link alone, so parallel downloads help as on a pod).
"off": no limit (the test suite's default, fleet_lab/testing.py, with FLEET_LAB_SCALE=1000 so its hosts stay fast).
A number: that many bytes per second per host.
"""

from __future__ import annotations

import os
import random

MB = 1_000_000
DEFAULT_SCALE = 100
TIME = 10                       # lab transfer time = real transfer time / TIME
POD_LINK = 125 * MB             # 1 Gbit/s
CONNECTION_SHARE = 0.4

# name -> real bytes (see the table above)
REAL = {
    "cuda-toolkit-13-0": 3000 * MB,
    "torch": 900 * MB,
    "cutlass": 300 * MB,
}
# torch cu130's nvidia-* requirements (their real names); together ~3.5 GB. The split is an estimate.
NVIDIA_WHEELS = {
    "nvidia-cudnn-cu13": 1000 * MB,
    "nvidia-cublas": 600 * MB,
    "nvidia-nccl-cu13": 350 * MB,
    "nvidia-cusparselt-cu13": 250 * MB,
    "nvidia-cusparse": 300 * MB,
    "nvidia-cufft": 250 * MB,
    "nvidia-cusolver": 250 * MB,
    "nvidia-nvshmem-cu13": 150 * MB,
    "nvidia-curand": 100 * MB,
    "nvidia-cuda-nvrtc": 100 * MB,
    "nvidia-nvjitlink": 80 * MB,
    "nvidia-cuda-cupti": 40 * MB,
    "nvidia-cuda-runtime": 30 * MB,
    "nvidia-cufile": 30 * MB,
    "nvidia-nvtx": 20 * MB,
}
NVIDIA_WHEEL_VERSION = "13.0.0"
PAYLOAD = {   # where each artifact's padding lives on the host once installed
    "cuda-toolkit-13-0": "/usr/local/cuda-13.0/share/fleet-lab-payload.bin",
    "torch": "torch/lib/fleet-lab-payload.bin",                 # inside site-packages
    "cutlass": "tools/fleet-lab-payload.bin",                   # inside the checkout
}


def scale() -> int:
    try:
        value = int(os.environ.get("FLEET_LAB_SCALE") or DEFAULT_SCALE)
    except ValueError:
        value = DEFAULT_SCALE
    return max(value, 1)


def size(name: str) -> int:
    """The bytes the lab's stand-in of `name` carries (a key of REAL or NVIDIA_WHEELS)."""
    real = REAL.get(name, NVIDIA_WHEELS.get(name))
    return real // scale()


def payload(name: str) -> bytes:
    """Deterministic incompressible bytes (the same on every build, so the mirror's hashes are stable)."""
    return random.Random(f"fleet-lab:{name}").randbytes(size(name))


def nvidia_package_path(name: str) -> str:
    """Where an nvidia-* stand-in's payload lands in site-packages (as NVIDIA's wheels: nvidia/<lib>/lib)."""
    lib = name.replace("nvidia-", "").replace("-cu13", "")
    return f"nvidia/{lib}/lib/fleet-lab-payload.bin"


def rate_setting() -> str:
    return (os.environ.get("FLEET_LAB_RATE") or "pod").strip().lower()


def host_rate(setting: str | None = None) -> int:
    """Bytes per second per host; 0: unlimited."""
    setting = rate_setting() if setting is None else setting
    if setting in ("off", "0", "none", ""):
        return 0
    if setting == "pod":
        return POD_LINK * TIME // scale()
    try:
        return max(int(float(setting)), 0)
    except ValueError:
        return POD_LINK * TIME // scale()


def connection_rate(per_host: int) -> int:
    return int(per_host * CONNECTION_SHARE)


def table() -> list[tuple[str, int, int]]:
    """(artifact, real bytes, lab bytes) for every padded stand-in."""
    rows = [(n, r, size(n)) for n, r in REAL.items()]
    rows += [(n, r, size(n)) for n, r in NVIDIA_WHEELS.items()]
    return rows
