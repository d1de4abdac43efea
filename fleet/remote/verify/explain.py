"""A failed CUDA start in words: the driver API's code and name, the libcuda loaded, the cause (each code's, from
NVIDIA's guides) and the fix, at the step of the loader that put that libcuda first (loader.py); and why a command a
kind of shell runs is not what verify proved (command_cause: the facts' own rules, resolve_rules.py)."""

import os
import sys

from . import gpus, loader
from .. import loader_rules, resolve_rules
from .cuda import kernel_driver


def explain(run, r, step=None):
    """A failed CUDA start in words: the driver API's code and name, the libcuda loaded, the cause, the step of
    the loader that put it first (loader_step) and the fix of that step."""
    if r.get("load_error"):
        return (f"libcuda.so.1 could not be loaded ({r['load_error']}): the driver's user-space library is not on "
                "the loader path; fix: install the NVIDIA driver's libraries (or run the container with --gpus)")
    code, lib = r.get("code"), r.get("libcuda") or "libcuda.so.1"
    real, ver = r.get("libcuda_real") or lib, r.get("libcuda_version")
    head = f"CUDA error {code} {r.get('name') or ''} ({r.get('text') or 'no text'}) from {real}"
    kd = kernel_driver()
    compat = "/compat/" in real or "/compat/" in lib
    stub = r.get("stub") or code == 34
    where = os.path.dirname(lib)
    put = f"; loaded because {step['says']}" if step and step.get("mechanism") != "default" else ""
    by_step = step.get("fix") if step and step.get("mechanism") != "default" else None
    anyway = (f"find what puts {where} first (LD_PRELOAD, /etc/ld.so.preload, LD_LIBRARY_PATH, the ld cache) and "
              "take it out")
    if code == 803 and compat:
        cause = (f"the cuda-compat libcuda {ver} was loaded over kernel driver {kd}; compat works only from an older "
                 "kernel driver (NVIDIA forward compatibility guide)")
        fix = by_step or anyway
    elif code == 803:
        cause = (f"the user-space driver library {ver} does not match the loaded kernel module {kd}: the driver was "
                 "upgraded without a reboot")
        fix = "reboot, or reload the nvidia kernel modules (rmmod nvidia_uvm nvidia_drm nvidia_modeset nvidia; modprobe nvidia)"
    elif code == 802 and any(os.path.exists(m) for m in ("/.dockerenv", "/run/.containerenv")):
        # a container: its GPUs' fabric is set up by the provider's host (NVIDIA Fabric Manager User Guide)
        cause = (f"the NVSwitch fabric is not up (kernel driver {kd}) and this is a container: the fabric manager "
                 "runs on the provider's host, not in this pod")
        fix = "the provider's: ask them, or restart the pod on a healthy host (nothing in the pod can set it up)"
    elif code == 802:   # cudaErrorSystemNotReady / CUDA_ERROR_SYSTEM_NOT_READY (NVIDIA Fabric Manager User Guide)
        cause = (f"the NVSwitch fabric is not up (kernel driver {kd}): the fabric manager is missing, stopped, or not "
                 "the driver's exact version")
        fix = "apply role fabric_manager (nvidia-fabricmanager at the driver's version, service running)"
    elif code == 804:
        cause = "forward compatibility (cuda-compat) was attempted on a GPU that does not support it"
        fix = by_step or anyway
    elif stub:
        head = f"CUDA error {code} {r.get('name') or ''} ({r.get('text') or 'no text'}) from the stub {real}"
        cause = "a stub libcuda (the toolkit's link-time stand-in, lib64/stubs) was loaded instead of the driver's"
        fix = by_step or anyway
    elif code == 35:
        cause = f"the driver (libcuda {ver}, kernel {kd}) is older than this CUDA runtime needs"
        fix = "on a data-center GPU let fleet put cuda-compat first (role cuda_compat); else upgrade the driver"
    elif code == 999:
        cause = "CUDA_ERROR_UNKNOWN: usually nvidia_uvm is not loaded, or the GPU is in a bad state (Xid in dmesg)"
        fix = "modprobe nvidia_uvm; if that does not help, reboot"
    elif code == 100 and r.get("visible_devices") is not None:
        # visibility, not the loader: the libcuda is the right one and the driver hides every GPU from it
        where = loader.variable_line(run, r.get("kind"), "CUDA_VISIBLE_DEVICES")
        n = gpus.host_gpu_count(run)
        return (f"{head}: CUDA_VISIBLE_DEVICES={r['visible_devices']!r} leaves none of the host's "
                f"{n if n is not None else '?'} GPU(s) visible (empty: none; the list stops at its first entry that "
                f"names no GPU here), set at {where}; fix: correct or remove CUDA_VISIBLE_DEVICES at {where} (fleet "
                "leaves it to you: a deliberate partition looks the same)")
    elif code == 100:
        n = gpus.host_gpu_count(run)
        cause = ("no CUDA device is visible to this process, and CUDA_VISIBLE_DEVICES is not set: "
                 + (f"the kernel driver lists {n} GPU(s) (nvidia-smi)" if n else "nvidia-smi lists no GPU either"))
        fix = "check that the container was started with GPUs (--gpus all) and the device nodes (/dev/nvidia*)"
        put = ""
    elif code == 46:
        cause = "every GPU is in exclusive-process mode and taken"
        fix = "wait for the other process, or nvidia-smi -c DEFAULT"
    elif code == 0 and "torch_available" in r:
        why = r.get("torch_error") or r.get("torch_warning") or "torch.cuda.is_available() is False"
        return f"cuInit succeeded through {real}, but torch says: {why}"
    elif code == 0 and not r.get("devices"):
        return f"cuInit succeeded through {real}, but no CUDA device is visible to this process"
    elif code == 0:
        need = r.get("need") or 0
        return (f"cuInit succeeded through {real}, but its driver API {r.get('driver_api')} (libcuda {ver}) is "
                f"older than the wheel's CUDA {need // 1000}.{need % 1000 // 10} needs: this kind of process does not "
                "get cuda-compat; fix: on a data-center GPU compat must reach it too (the ld cache, an "
                "/etc/ld.so.conf.d drop-in re-checked at every start), else upgrade the driver")
    else:
        cause, fix = "an error fleet has no rule for", "see the CUDA driver API reference for this code"
    return f"{head}: {cause}{put}; fix: {fix}"


# What takes a PATH cause out of effect: fleet's hook, run last in every kind of shell.
PATH_FIX = "let fleet's env hook run last there (fleet apply), or set env_hooks_venv_on_path"


def at(setter):
    """A trace's setter as the verify program names lines: "~/.bashrc:5", "/x.sh:2 (read from ~/.bashrc:9)"."""
    if not setter or not setter.get("file"):
        return "no startup file of this kind (the process's parent: sshd's SetEnv/AcceptEnv, a container's ENV)"
    home = os.environ.get("HOME") or ""
    origin = loader_rules.tilde(f"{setter['file']}:{setter['line']}", home)
    via = setter.get("via") or []
    return f"{origin} (read from {loader_rules.tilde(via[0], home)})" if via else origin


def command_cause(run, kind, shell, name):
    """Why `name` in this kind (loader.TRACED's) runs what it runs: resolve_rules.cause with the lines named as the
    verify program names them; a PATH cause gets fleet's hook's fix."""
    why = resolve_rules.cause(shell, name, sys.prefix, at)   # verify runs in fleet's venv
    if why["mechanism"] == "PATH":
        why = {**why, "because": f"PATH last set at {loader.variable_line(run, kind, 'PATH')}", "fix": PATH_FIX}
    return why


def import_cause(run):
    """Why verify's own `import torch` reached another torch than the venv's: a .pth line of its site-packages (the
    only one of resolve_rules' Python causes that `python -I` still obeys), from the shells' trace, where a kind's
    python of this very venv says so; None otherwise."""
    trace = run.shell_trace()
    for kind in ("noninteractive", "interactive", "login"):
        shell = trace.get(kind) or {}
        for exe, answer in (shell.get("pythons") or {}).items():
            if (answer or {}).get("prefix") == sys.prefix and ((answer or {}).get("torch_from") or {}).get("by") == "pth":
                why = resolve_rules.python_cause(shell, exe, sys.prefix, at)
                return f"{why['because']}; fix: {why['fix']}"
    return None
