"""What a job takes from the pod besides its GPUs (issue 45 item 5): fleet/remote/pod_resources.sh's /dev/shm, memlock,
open files and container memory limit, parsed (fleet/facts/system.py parse_resources) and judged
(fleet/decide/health.py): a /dev/shm under NCCL's --shm-size=1g is "degraded" naming its size."""

import os
import resource
import subprocess

import pytest

from fleet.decide.health import decide_health
from fleet.facts import system
from fleet.facts.sources import BY_NAME
from fleet.workflows import health as health_run

# this machine's own program output inside `unshare -m` with /dev/shm a tmpfs of size=64m (Docker's default
# --shm-size), `ulimit -l 64` and `ulimit -n 1024`: a cgroup v1 host, its memory cgroup without a limit
DOCKER_DEFAULT = """shm tmpfs                65536     0     65536       0% /dev/shm
memlock 64
nofile 1024
memory_limit 9223372036854771712 /sys/fs/cgroup/memory/memory.limit_in_bytes
"""
# a GPU judged healthy by every other field (the H200's captured fields, as test_facts_health's records hold them)
GPU = {"index": 0, "name": "NVIDIA H200", "uuid": "GPU-1", "bus": "00000000:18:00.0", "ecc": {"mode": True},
       "pcie": {"width": 16, "width_max": 16, "gen": 5, "gen_max": 5}, "persistence": True}


def _facts(resources: dict) -> dict:
    return {"health": {"installed": True, "gpus": [GPU], "kernel_log": "dmesg"}, "system": {"resources": resources}}


def test_this_machines_own_answer_is_what_the_kernel_says():
    out = subprocess.run(["bash", "-c", BY_NAME["resources"].command({})], capture_output=True, text=True, check=True)
    got = system.parse_resources(out.stdout)
    st = os.statvfs("/dev/shm")
    assert got["shm"]["size_mb"] == st.f_blocks * st.f_frsize // 2 ** 20
    soft_l, soft_n = resource.getrlimit(resource.RLIMIT_MEMLOCK)[0], resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    assert got["memlock_kb"] == ("unlimited" if soft_l == resource.RLIM_INFINITY else soft_l // 1024)
    assert got["nofile"] == ("unlimited" if soft_n == resource.RLIM_INFINITY else soft_n)
    assert got["memory_limit_file"] and os.path.exists(got["memory_limit_file"])
    raw = open(got["memory_limit_file"]).read().strip()
    assert got["memory_limit_mb"] == (None if raw == "max" or int(raw) >= 2 ** 62 else int(raw) // 2 ** 20)


def test_docker_default_shm_parsed_and_degraded_naming_dev_shm_and_its_size():
    got = system.parse_resources(DOCKER_DEFAULT)
    assert got == {"shm": {"filesystem": "tmpfs", "size_mb": 64, "free_mb": 64}, "memlock_kb": 64, "nofile": 1024,
                   "memory_limit_mb": None,
                   "memory_limit_file": "/sys/fs/cgroup/memory/memory.limit_in_bytes"}
    verdict = decide_health(_facts(got))
    assert verdict.verdict == "degraded"
    assert verdict.reason.startswith("degraded: host: /dev/shm=64 MB (64 MB free): DataLoader workers and NCCL's "
                                     "shared-memory transport fail"), verdict.reason
    assert {f.field for f in verdict.findings if f.severity == "note"} == {"ulimit -l", "ulimit -n"}
    assert "the GPUs are sound" in verdict.advice and "UUID" not in verdict.advice


def test_a_large_shm_is_healthy_and_a_cgroup_v2_limit_is_a_note():
    # the lent 2-GPU H200's /dev/shm (shared/captured/h200-multi/x2-machine.txt: `tmpfs 126G ... /dev/shm`), in -Pk
    got = system.parse_resources("shm tmpfs 132120576 0 132120576 0% /dev/shm\nmemlock unlimited\nnofile 1048576\n"
                                 "memory_limit 17179869184 /sys/fs/cgroup/memory.max\n")
    assert got["shm"]["size_mb"] == 129024 and got["memlock_kb"] == "unlimited" and got["memory_limit_mb"] == 16384
    verdict = decide_health(_facts(got))
    assert verdict.verdict == "healthy", verdict.reason
    assert [(f.field, f.value) for f in verdict.findings] == [("memory limit", "16384 MB")]
    assert system.parse_resources("shm none\nmemlock 8192\nnofile 20000\nmemory_limit max /sys/fs/cgroup/memory.max\n")[
        "memory_limit_mb"] is None


@pytest.mark.parametrize("text", ["", "memlock 8192\n", "shm tmpfs 64M 0 64M 0% /dev/shm\n", "shm none\nnofile many\n",
                                  "shm none\nmemory_limit lots /x\n"])
def test_what_the_program_never_prints_is_refused(text):
    with pytest.raises(ValueError):
        system.parse_resources(text)


def test_fleet_health_asks_for_the_resources_in_its_one_command():
    assert "resources" in health_run.SOURCES and "df -Pk /dev/shm" in health_run.script()
