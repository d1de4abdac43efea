"""Where a RunPod pod's volume disk is mounted, and the paths fleet places on it (docs.runpod.io/pods/storage/types:
the container disk is "lost on stop/restart", the volume disk at /workspace is "retained until Pod deleted").

The probe checks each of these paths (fleet/facts/sources.py); fleet/decide/storage.py decides whether to use them.
"""
from __future__ import annotations

WORKSPACE = "/workspace"
ON_VOLUME = {"python_env": f"{WORKSPACE}/venv", "pip_cache_dir": f"{WORKSPACE}/.cache/pip",
             "pip_tmpdir": f"{WORKSPACE}/tmp"}
