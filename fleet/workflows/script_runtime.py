"""What a `fleet script` decides on the host at RUN time, not when it is generated.

A script made for a pod template runs on the next pod too, and that pod's kernel driver may be newer. Whether
cuda-compat goes first on LD_LIBRARY_PATH depends on that driver: compat is needed only when the kernel driver
is older than the CUDA release needs, and a compat libcuda older than the kernel driver fails with error 803
(docs.nvidia.com/deploy/cuda-compatibility/forward-compatibility.html; CUDA release notes, table 3). So the
script carries the plan for both sides of that line, made by the same decisions from the same facts:

- "direct": the kernel driver runs the CUDA release natively (>= its minimum): no cuda-compat, compat kept off
  the path. Made from the facts with the driver raised to that minimum where it was lower;
- "compat": only where the facts' own driver is older than the minimum: cuda-compat first on the path. At run
  time it is used only on a driver of the SAME branch as the facts' one, since forward compatibility is
  supported per driver branch (the same documentation lists the branches per CUDA release).

Everything else the decisions read is frozen: the CPU architecture (`uname -m`) and the GPUs' compute
capability (which torch wheel, which architectures). The script refuses, with the reason, on a host whose
CPU or GPUs differ from the facts', on a host with a GPU where the facts had none, and the reverse.
"""

from __future__ import annotations

import copy
import shlex
from dataclasses import dataclass

from fleet import remote
from fleet.knowledge.cuda_table import min_driver_for, version_key
from fleet.knowledge import platforms
from fleet.errors import FleetError

# $fleet_driver, read as the facts probe does: fleet/remote/script_driver.sh
_READ_DRIVER = remote.program("script_driver")

# fleet_ge A B and fleet_refuse WHY: fleet/remote/script_version_ge.sh
_VERSION_GE = remote.program("script_version_ge")


@dataclass(frozen=True)
class Runtime:
    """What a script decides at run time, made once: the variants, the header lines saying what each puts on
    LD_LIBRARY_PATH, the guard that picks one on the host (or refuses), and whether it runs as root there (None:
    the caller says)."""
    plans: dict
    described: list
    guard: str
    root: bool | None = None


def runtime(plan, plans: dict, made_from: str, root: bool | None = None) -> Runtime:
    return Runtime(plans, describe(plans), guard(plan, plans, made_from), root)


def prepare(decide, plan, made_from: str, host) -> Runtime:
    """The variants of `plan` (variants) with their header and guard, for `host` (root: as its login user is)."""
    from fleet.shell import user_is_root

    return runtime(plan, variants(decide, plan), made_from, user_is_root(host))


def as_template(facts: dict) -> dict:
    """The facts as the template's NEXT pod may have them: a pod template's script runs on pods that have none of
    what this one was given, so whatever the platform does not ship itself (the CUDA toolkit on a dGPU pod; torch,
    CUTLASS and the hooks are planned whatever the facts say) is planned, and each task's check decides on the pod:
    a pod that has it shows `ok`, one that lacks it gets it. (A script made from a provisioned pod's facts once said
    `cuda_toolkit skipped` and left the next pod without nvcc.)"""
    fresh = dict(facts)
    row = platforms.platform(facts.get("platform"))
    cuda = facts.get("cuda")
    if row is not None and not row.cuda_shipped_by and isinstance(cuda, dict):
        fresh["cuda"] = {**cuda, "toolkits": []}     # JetPack and DGX OS ship the toolkit: that stays the image's
    if isinstance(facts.get("system"), dict) and "git" in facts["system"]:
        fresh["system"] = {**facts["system"], "git": False}               # cutlass: git, checked by dpkg there
    if isinstance(facts.get("python"), dict):
        fresh["python"] = {**facts["python"], "env_exists": False, "venv_module": False}   # torch: python3-venv
    return fresh


def variants(decide, plan) -> dict:
    """{'direct': Decided[, 'compat': Decided]} for the facts in `plan` (a fleet.engine.Decided); `decide(facts)`
    decides and renders for other facts (fleet.engine.decide_tasks with this host's roles)."""
    if not plan.decisions.compat.use:
        return {"direct": plan}                  # the facts' driver runs the CUDA release natively (or no GPU)
    raised = copy.deepcopy(plan.facts)
    raised["driver"]["version"] = _min_driver(plan)
    try:
        direct = decide(raised)
    except FleetError:
        return {"compat": plan}
    return {"compat": plan} if direct.decisions.refuse else {"direct": direct, "compat": plan}


def guard(plan, plans: dict, label: str) -> str:
    """Bash that sets $fleet_variant and $fleet_why for this host, or refuses (exit 3) with the reason. Every
    value from the facts reaches the shell as a shlex-quoted assignment, never spliced into code."""
    facts = plan.facts
    arch = (facts.get("system") or {}).get("arch")
    need, driver, cuda = _min_driver(plan), (facts.get("driver") or {}).get("version"), plan.decisions.cuda.wanted
    lines = [_VERSION_GE, _assign(made_from=label, cuda=cuda or "", need=need or "", facts_driver=driver or ""),
             'fleet_redo="generate a script from this host\'s own facts (fleet script, or --from-facts its record); '
             'this one was made from $fleet_made_from"']
    if arch:
        lines += [_assign(want_arch=arch), '[ "$(uname -m)" = "$fleet_want_arch" ] || fleet_refuse "this host\'s '
                  'CPU is $(uname -m), the script\'s decisions are for $fleet_want_arch: $fleet_redo"']
    lines.append(_READ_DRIVER)
    if not _has_gpu(facts):
        return "\n".join(lines + [
            '[ -z "$fleet_driver" ] || fleet_refuse "this host has an NVIDIA driver ($fleet_driver), the facts had '
            'no GPU: $fleet_redo"', "fleet_variant=direct fleet_why='no NVIDIA GPU: no CUDA, no cuda-compat'"])
    lines += [_gpu_check(facts), '[ -n "$fleet_driver" ] || fleet_refuse "no NVIDIA kernel driver found '
              '(/proc/driver/nvidia/version), the facts had driver $fleet_facts_driver: $fleet_redo"']
    if need is None or not driver:
        return "\n".join(lines + ["fleet_variant=direct fleet_why='the decisions as frozen'"])
    found = '"$fleet_driver"'
    row = platforms.platform(facts.get("platform"))
    if (row and row.driver_form == "branch") or facts.get("jetson"):   # Jetson drivers report the branch only
        found, need = '"${fleet_driver%%.*}"', str(version_key(need)[0])
        lines.append(_assign(need=need))
    lines.append(_assign(branch=str(version_key(driver)[0])))
    direct = ("fleet_variant=direct" if "direct" in plans else
              'fleet_refuse "kernel driver $fleet_driver >= $fleet_need runs CUDA $fleet_cuda natively, but the '
              'decisions for such a driver were refused: $fleet_redo"')
    compat = ("fleet_variant=compat" if "compat" in plans else
              'fleet_refuse "kernel driver $fleet_driver < $fleet_need needed by CUDA $fleet_cuda: cuda-compat would '
              'be needed, and the facts (driver $fleet_facts_driver) did not plan it: $fleet_redo"')
    lines += [f"if fleet_ge {found} \"$fleet_need\"; then",
              f"  {direct}   # kernel driver new enough: compat stays off the path (error 803 otherwise)",
              '  fleet_why="kernel driver $fleet_driver >= $fleet_need needed by CUDA $fleet_cuda: no cuda-compat, '
              'and none on LD_LIBRARY_PATH"',
              'elif [ "${fleet_driver%%.*}" = "$fleet_branch" ]; then',
              f"  {compat}",
              '  fleet_why="kernel driver $fleet_driver < $fleet_need needed by CUDA $fleet_cuda: cuda-compat first on '
              'LD_LIBRARY_PATH"',
              "else",
              '  fleet_refuse "kernel driver $fleet_driver < $fleet_need needed by CUDA $fleet_cuda, on a branch other '
              'than the facts\' r$fleet_branch: forward compatibility is supported per driver branch: $fleet_redo"',
              "fi"]
    return "\n".join(lines)


def describe(plans: dict) -> list[str]:
    """Header lines: what each run-time variant puts on LD_LIBRARY_PATH."""
    out = ["decided at run time from the kernel driver found there (cuda-compat only below the CUDA minimum):"]
    for name, plan in plans.items():
        path = ":".join(plan.decisions_json.get("ld_library_path") or []) or "(nothing)"
        out.append(f"  {name:<7} LD_LIBRARY_PATH {path}")
    return out


def _assign(**values: str) -> str:
    return " ".join(f"fleet_{name}={shlex.quote(str(value))}" for name, value in values.items())


def _gpu_check(facts: dict) -> str:
    gpus = facts.get("gpus") or []
    by_cap = all(g.get("compute_cap") for g in gpus)      # drivers around 470 reject compute_cap: then names
    field = "compute_cap" if by_cap else "name"
    want = " ".join(sorted({str(g.get(field)) for g in gpus}))
    query = (f"nvidia-smi --query-gpu={field} --format=csv,noheader 2>/dev/null | sed 's/^ *//;s/ *$//' "
             "| sort -u | paste -sd ' ' -")
    return (f"{_assign(want_gpus=want)}\nfleet_gpus=$({query})\n"
            f'[ "$fleet_gpus" = "$fleet_want_gpus" ] || fleet_refuse "this host\'s GPUs ({field}: '
            '${fleet_gpus:-none found by nvidia-smi}) are not those of the facts ($fleet_want_gpus): $fleet_redo"')


def _min_driver(plan) -> str | None:
    cuda = plan.decisions.cuda.wanted
    try:
        return min_driver_for(cuda) if cuda else None
    except (KeyError, ValueError):
        return None


def _has_gpu(facts: dict) -> bool:
    row = platforms.platform(facts.get("platform"))
    return bool(facts.get("gpus")) and (row is None or row.has_gpu)
