"""The small exception hierarchy and the one place that maps outcomes to exit codes."""

from __future__ import annotations

import enum


@enum.unique   # one meaning per number: a script can tell a typo from a plan
class ExitStatus(enum.IntEnum):
    OK = 0
    HOST_FAILED = 1     # a host failed, was unreachable or was refused
    BAD_INPUT = 2       # inventory, role, flag or facts file is wrong; no host was contacted (argparse's 2 too)
    INTERNAL = 3        # a bug in fleet: the traceback shows with --debug
    CHANGES_PENDING = 4  # `apply --check --detailed-exitcode` only: changes are pending (terraform says 2, which
    #                      is bad input here)
    RETURN_POD = 5      # GPU health: a host's verdict is "return this pod", a fault only its provider can fix
                        # (fleet health, bootstrap, apply, verify; fleet/decide/health.py); it outranks HOST_FAILED:
                        # a pod to return is the cause a failed verify on it most likely has
    GPU_DEGRADED = 6    # `fleet health` only: a GPU is degraded (each finding with NVIDIA's action) or its health could
                        # not be read (no nvidia-smi, NVML failing), none to return
    INTERRUPTED = 130   # Ctrl-C; SIGTERM and SIGHUP exit 128 + the signal (143, 129)


class FleetError(Exception):
    """Base of every error fleet reports as a sentence instead of a traceback."""

    exit_status = ExitStatus.INTERNAL


class InputError(FleetError, ValueError):
    """Bad input: raised before any host is contacted. The message names file:line and a fix."""

    exit_status = ExitStatus.BAD_INPUT

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None):
        where = f"{path}:{line}: " if path and line else (f"{path}: " if path else "")
        super().__init__(f"{where}{message}")
        self.path, self.line = path, line


class HostError(FleetError):
    """One host cannot be reached or refused us; the others carry on."""

    exit_status = ExitStatus.HOST_FAILED


class AuthRefused(HostError):
    """The SSH server answered but refused every key offered (fleet bootstrap names its -i key)."""


class HostKeyError(HostError):
    """A host key is unknown (and not accepted) or has changed."""


class LabError(FleetError):
    """The lab cannot run on this machine; the message says how to fix that."""

    exit_status = ExitStatus.BAD_INPUT
