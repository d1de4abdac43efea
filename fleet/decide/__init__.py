"""GPU-stack decisions: pure functions from a host's facts and the wanted stack to what the
host needs, each with a one-line reason (the knowledge in shared/DOMAIN.md). No I/O here.

    decisions = decide(facts, {"cuda_version": "13.0"})
    decisions.refuse          # None, or why this host cannot have the stack
    decisions.to_json()       # what `fleet decide --json` prints per host
"""
from __future__ import annotations

import re
from dataclasses import replace

from fleet.decide.cuda import decide_compat, decide_cuda
from fleet.decide.fabric import decide_fabric
from fleet.decide.health import decide_health, parse_expect
from fleet.decide.host import FactsError, host_refusal, jetson_refusal, read_host
from fleet.decide.loader import decide_loader
from fleet.decide.offers import repo_refusal, repo_release, repo_serves
from fleet.decide.shells import judge as judge_shells
from fleet.decide.libs import decide_cudss, decide_nvpl, ld_library_path, missing_providers
from fleet.knowledge import platforms
from fleet.decide.model import CompatDecision, CudaDecision, Decisions, LibraryDecision, TorchDecision, as_dict
from fleet.decide.torch_wheel import decide_torch, index_cuda
from fleet.decide.variables import DEFAULTS, VariableError, resolve
from fleet.decide.versions import MIN_DRIVER, known_releases
from fleet.knowledge.cuda_table import newer_family, planned_release

__all__ = ["decide", "Decisions", "FactsError", "VariableError", "DEFAULTS"]


def decide(facts: dict, vars: dict | None = None) -> Decisions:
    """Raises FactsError for a record decisions cannot read, VariableError for a bad variable."""
    v = resolve(vars or {})
    host = read_host(facts)
    if host.jetson and host.jetson.cuda and "cuda_version" not in v.explicit:
        v = replace(v, cuda_version=host.jetson.cuda)  # CUDA per JetPack, unless the user asks for one
    old = jetson_refusal(host)
    if old:
        return _not_decided(facts, host, v, old)
    default = v.cuda_version
    if "cuda_version" not in v.explicit and not repo_serves(host, v, v.cuda_version) and repo_release(host):
        v = replace(v, cuda_version=repo_release(host))   # CUDA per distribution's repository, unless asked for one
    # a host the driver refuses (NVML out of step) is answered by that refusal, decided as before
    unplanned = _unplanned_cuda(host, v) or (None if host_refusal(host) else repo_refusal(host, v))
    if unplanned:
        return _not_decided(facts, host, v, unplanned)
    cuda = decide_cuda(host, v)
    if v.cuda_version != default and not host.jetson:
        row = host.apt_distro
        cuda = replace(cuda, reason=f"{cuda.reason} (the default CUDA {default} is not in NVIDIA's {row.repo} "
                                    f"repository, which starts at {row.first_cuda}: its first release that runs here)")
    compat = decide_compat(host, v)
    torch = decide_torch(host, v, compat)
    nvpl, cudss = decide_nvpl(host, v, torch), decide_cudss(host, v, torch)
    # The first refusal is the root cause: a GPU that NVML cannot reach before anything is planned for it
    # (host_refusal); then the toolkit (a GPU CUDA dropped, a JetPack without it) before compat (the driver),
    # compat before torch (a torch refusal may follow from either).
    refuse = host_refusal(host) or next((d.refuse for d in (cuda, compat, torch, nvpl, cudss) if d.refuse), None)
    if refuse and refuse != torch.refuse and not _OFFER.search(refuse) and _OFFER.search(torch.reason):
        # the root cause's fix is outside fleet's variables (a driver to install): the torch decision, judged on a
        # stack that cannot be, offers no variables of its own beside it (one fix per answer, issue 24)
        note = "not decided: the refusal above comes first, and its fix is outside fleet's variables"
        torch = replace(torch, supported=False, reason=note, refuse=note)
    path = ld_library_path(compat, cuda, nvpl, cudss)
    return Decisions(
        host=host.name, refuse=refuse, cuda=cuda, compat=compat, torch=torch, nvpl=nvpl, cudss=cudss,
        ld_library_path=path,
        missing_providers=missing_providers(host, v, compat, torch, nvpl, cudss),
        gpu=host.has_gpu, env_reason=env_reason(path, compat), platform=host.row.as_json(),
        loader=decide_loader(facts, host, compat), fabric=as_dict(decide_fabric(facts)),
        health=decide_health(facts, parse_expect(v.expect_gpus)).to_json(),
        shells=judge_shells(facts, cuda.path, v.python_env,
                            (facts.get("torch") or {}).get("path") if isinstance(facts.get("torch"), dict) else None),
    )


# "NAME=" for a variable decisions read: what a text proposes to set
_OFFER = re.compile(r"\b(" + "|".join(sorted(DEFAULTS, key=len, reverse=True)) + r")=")


def _unplanned_cuda(host, v) -> str | None:
    """A CUDA release `cuda_version` may name only because a JetPack ships it (11.4: JetPack 5's), on a host fleet
    plans for: fleet installs no CUDA older than its driver table (12.0). The fix: this JetPack's own CUDA, else
    the CUDA of the torch index the user named, else the default (each of which the torch decision then matches)."""
    if not host.has_gpu or planned_release(v.cuda_version):
        return None
    index = index_cuda(v.torch_index_url) if "torch_index_url" in v.explicit else None
    offer = (host.jetson.cuda if host.jetson else None) or (index if index in MIN_DRIVER else None) \
        or DEFAULTS["cuda_version"]
    if newer_family(v.cuda_version):
        newest = known_releases().split(", ")[-1]
        return (f"CUDA {v.cuda_version} is a major release newer than any fleet knows: its driver table ends at "
                f"{newest} (CUDA release notes), and no minor-version compatibility rule of a CUDA "
                f"{v.cuda_version.split('.')[0]}.x family is known to say which driver runs it: "
                f"set cuda_version={offer}")
    return (f"CUDA {v.cuda_version} is the CUDA JetPack {_shipped_by(v.cuda_version)} ships, and fleet plans CUDA "
            f"{known_releases().split(', ')[0]} or newer on this host: set cuda_version={offer}")


def _shipped_by(cuda: str) -> str:
    return " and ".join(r.jetpack + (".x" if "." not in r.jetpack else "")
                        for r in platforms.JETPACK_RELEASES if r.cuda == cuda)


def _not_decided(facts: dict, host, v, refuse: str) -> Decisions:
    """A Jetson release fleet does not plan for (JetPack 5), a CUDA it does not plan, or a distribution whose NVIDIA
    repository does not serve the toolkit (issue 47): nothing is decided, so no other text offers a fix beside the
    refusal's (one fix per answer, issue 24)."""
    note = "not decided: fleet does not plan for this (see the refusal)"
    compat = CompatDecision(False, note, None, None, host.compat)
    return Decisions(
        host=host.name, refuse=refuse,
        cuda=CudaDecision(None, False, "none", None, None, None, None, None, note),
        compat=compat,
        torch=TorchDecision("", v.torch_version, "jetson" if host.jetson else "official", None, False, note, None,
                            refuse=refuse),
        nvpl=LibraryDecision(False, None, [], None, [], None, note),
        cudss=LibraryDecision(False, None, [], None, [], None, note),
        ld_library_path=[], missing_providers={}, gpu=host.has_gpu, env_reason=note,
        platform=host.row.as_json(), loader=decide_loader(facts, host, compat),
        health=decide_health(facts, parse_expect(v.expect_gpus)).to_json(),
    )


def env_reason(path: list[str], compat) -> str:
    if not path:
        return "nothing to put on LD_LIBRARY_PATH"
    reason = "LD_LIBRARY_PATH for interactive shells and `ssh host cmd` alike: " + ":".join(path)
    if compat.installed and not compat.use:
        reason += f"; keeps {compat.path} off it (error 803)"
    return reason
