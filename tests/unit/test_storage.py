"""fleet.decide.storage: the venv and pip's files go on a pod's /workspace volume (docs.runpod.io/pods/storage/types:
the container disk is lost on stop/restart, the volume disk at /workspace is retained)."""

from __future__ import annotations

import pytest

from fleet.decide import storage
from fleet.facts.sources import disk_dirs, settings_of
from fleet.facts.system import parse_df

# `df -Pk` as the probe runs it, on a RunPod pod (overlay container disk, /workspace volume) and on a VM.
POD_DF = """dir /opt/fleet
overlay 20971520 9437184 11534336 45% /
dir /opt/cutlass
overlay 20971520 9437184 11534336 45% /
dir /
overlay 20971520 9437184 11534336 45% /
dir /workspace
/dev/sdb 104857600 1048576 103809024 2% /workspace
"""
VM_DF = POD_DF.replace("/dev/sdb 104857600 1048576 103809024 2% /workspace", "/dev/sda1 61255492 9437184 51818308 16% /")


SAFE = {path: None for path in storage.ON_VOLUME.values()}     # the probe's facts.paths: each safe to run as root


def facts(df: str, paths: dict | None = None) -> dict:
    return {"system": {"disks": parse_df(df)}, "paths": SAFE if paths is None else paths}


def test_probe_looks_at_workspace():
    assert disk_dirs(settings_of({}))[-1] == "/workspace"


def test_pod_with_a_workspace_volume_gets_venv_cache_and_tmp_there():
    assert storage.placement(facts(POD_DF), {}) == {
        "python_env": "/workspace/venv", "pip_cache_dir": "/workspace/.cache/pip", "pip_tmpdir": "/workspace/tmp"}


@pytest.mark.parametrize("df", [VM_DF, ""])
def test_no_workspace_mount_changes_nothing(df):
    vars = {"cuda_version": "13.0"}
    assert storage.host_vars(facts(df) if df else None, vars) is vars


def test_what_the_user_set_wins():
    got = storage.host_vars(facts(POD_DF), {"python_env": "/data/venv", "pip_tmpdir": ""})
    assert got == {"python_env": "/data/venv", "pip_cache_dir": "/workspace/.cache/pip", "pip_tmpdir": "/workspace/tmp"}


@pytest.mark.parametrize("paths", [
    {**SAFE, "/workspace/venv": "/workspace is owned by root with mode 1777"},   # anyone could plant the venv
    {**SAFE, "/workspace/tmp": "/workspace/tmp is owned by nobody with mode 755"},
    {},                                                                         # a record from before the check
])
def test_no_move_to_a_workspace_other_users_control(paths):
    assert storage.placement(facts(POD_DF, paths), {}) == {}
