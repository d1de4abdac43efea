"""A root venv is never put on a volume other machines can write by default (issue 49); a pod's own volume keeps
it, as before (docs/decisions/49-root-venv-volume.md)."""

import pytest

from fleet.decide.storage import placement, workspace_shared

SAFE = {"/workspace/venv": None, "/workspace/.cache/pip": None, "/workspace/tmp": None}


def facts(source: str) -> dict:
    return {"system": {"disks": [{"path": "/", "filesystem": "overlay", "mount": "/"},
                                 {"path": "/workspace", "filesystem": source, "mount": "/workspace"}]},
            "paths": dict(SAFE)}


@pytest.mark.parametrize("source", ["/dev/nvme1n1", "/dev/md0", "/dev/mapper/vg-workspace", "overlay", "tmpfs",
                                    "fleet-test", "tank/workspace"])
def test_a_pods_own_volume_keeps_the_venv(source):
    assert placement(facts(source), {})["python_env"] == "/workspace/venv"
    assert workspace_shared(facts(source)) is None


@pytest.mark.parametrize("source", ["mfs#eu-ro-1.runpod.net:9421", "10.0.0.5:/export/workspace", "nas:/vol1",
                                    "10.1.0.1:6789,10.1.0.2:6789:/", "//fileserver/share", "sshfs", "s3fs", "juicefs",
                                    "JuiceFS:myjfs", "gcsfuse", "virtiofs"])
def test_a_network_volume_keeps_the_venv_on_the_container_disk(source):
    assert placement(facts(source), {}) == {}
    assert workspace_shared(facts(source)) == f"/workspace is a network volume ({source}): other machines write it"


def test_what_the_user_chose_is_kept():
    """placement never adds what the user set; a python_env the user put on the network volume is theirs."""
    assert placement(facts("/dev/nvme1n1"), {"python_env": "/opt/mine"}) == {
        "pip_cache_dir": "/workspace/.cache/pip", "pip_tmpdir": "/workspace/tmp"}
