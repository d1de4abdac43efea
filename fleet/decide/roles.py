"""Which roles act on a host, in order, each with the reason it does or does not."""
from __future__ import annotations

from fleet.decide.host import Host
from fleet.decide.model import ROLE_ORDER, Decisions, RoleDecision


def decide_roles(host: Host, d: Decisions) -> list[RoleDecision]:
    if d.refuse:
        return [RoleDecision(name, False, f"not run: the host is refused ({d.refuse})") for name in ROLE_ORDER]
    gpu = host.has_gpu
    no_gpu = "no NVIDIA GPU"
    table = {
        "cuda_toolkit": (gpu, d.cuda.reason),
        "cuda_compat": (d.compat.use, d.compat.reason),
        "nvpl": (d.nvpl.needed, d.nvpl.reason),
        "cudss": (d.cudss.needed, d.cudss.reason),
        "env_hooks": (bool(d.ld_library_path), _env_hooks_reason(d)),
        "cutlass": (gpu, "header-only CUTLASS for CUDA builds" if gpu else f"{no_gpu}: CUTLASS kernels need CUDA"),
        "torch": (True, d.torch.reason),
        "verify": (True, "checks that torch imports and every shared object it links resolves (ldd)"
                         + (", that it sees the GPU and runs a matmul" if gpu else "")),
    }
    return [RoleDecision(name, *table[name]) for name in ROLE_ORDER]


def _env_hooks_reason(d: Decisions) -> str:
    if not d.ld_library_path:
        return "nothing to put on LD_LIBRARY_PATH"
    reason = ("LD_LIBRARY_PATH for interactive shells and `ssh host cmd` alike: "
              + ":".join(d.ld_library_path))
    installed = d.compat.installed
    if installed and not d.compat.use:
        reason += f"; keeps {d.compat.path} off it (error 803)"
    return reason
