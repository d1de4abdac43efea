"""Issue 47 on lab hosts: a Debian 13 H100 VM takes CUDA 13.0 from NVIDIA's debian13 repository, and a JetPack 6 Orin
takes cuDSS as NVIDIA builds it for Jetson: the linux-aarch64 redist archive (cudss_source: tarball) or the
ubuntu2204/arm64 apt repository (cudss_source: apt). Each converges (the second apply changes nothing) and each claim
is asked of the host the way a user would: apt-cache, dpkg, nvcc from a login shell, the loader, the files."""

from __future__ import annotations

import json
import shutil

import pytest
import yaml

from fleet_lab import control, testing
from test_apply_lab import fleet_json

HOSTS = {
    "deb13": {"profile": "debian13-pod", "last": 51, "vars": {}},
    "orin-tar": {"profile": "orin-jp6", "last": 52, "vars": {"cudss_source": "tarball"}},
    "orin-apt": {"profile": "orin-jp6", "last": 53, "vars": {"cudss_source": "apt"}},
}


@pytest.fixture(scope="module")
def four(lab, tmp_path_factory):
    inv = tmp_path_factory.mktemp("round-four") / "round-four.yaml"
    doc = {"facts_dir": "facts", "keyring_pins": str(lab.root / "keyring.sha256"), "vars": {"verify_perf": False},
           "hosts": {name: {"address": f"{testing.test_net()}.{h['last']}", "lab": {"profile": h["profile"]},
                            **({"vars": h["vars"]} if h["vars"] else {})} for name, h in HOSTS.items()}}
    inv.write_text(yaml.safe_dump(doc, sort_keys=False))
    control.reset(inv, list(HOSTS), lab.root)
    runs = {"first": fleet_json("apply", str(inv))}
    runs["second"] = fleet_json("apply", str(inv))
    facts = {name: json.loads((inv.parent / "facts" / f"{name}.json").read_text()) for name in HOSTS}
    yield _Four(lab, inv, runs, facts)
    control.down(inv, lab.root)
    shutil.rmtree(inv.parent, ignore_errors=True)


class _Four:
    def __init__(self, lab, inv, runs, facts):
        self.lab, self.inv, self.runs, self.facts = lab, inv, runs, facts

    def sh(self, host: str, script: str) -> str:
        from fleet.connection import ConnectOptions, connect
        from fleet.inventory import load_inventory
        options = ConnectOptions(known_hosts=self.lab.root / "fleet_known_hosts")
        with connect(load_inventory(self.inv).hosts[host], options) as conn:
            result = conn.run(script)
        assert result.exit == 0, (script, result.stdout, result.stderr)
        return result.stdout

    def converged(self, host: str) -> None:
        code, first = self.runs["first"]
        answer = first["hosts"][host]
        assert answer["refuse"] is None and not [t for t in answer["tasks"] if t["status"] == "failed"], answer
        assert self.facts[host]["verify"]["passed"], self.facts[host]["verify"]["checks"]
        code, second = self.runs["second"]
        assert second["hosts"][host]["changed"] == 0, second["hosts"][host]["tasks"]


def test_a_debian_13_host_converges_with_cuda_13_from_nvidias_debian13_repository(four):
    four.converged("deb13")
    assert (four.facts["deb13"]["system"]["os_id"], four.facts["deb13"]["system"]["os_version"]) == ("debian", "13")
    out = four.sh("deb13", ". /etc/os-release; echo $ID $VERSION_ID; "
                           "apt-cache policy cuda-toolkit-13-0 | grep -m1 -o 'https://[^ ]*/debian13/x86_64[^ ]*'; "
                           "dpkg-query -W -f='${Package} ${Status}\\n' cuda-keyring cuda-toolkit-13-0; "
                           "bash -lc 'nvcc --version' | grep -o 'release 13.0'")
    # the toolkit held against unattended upgrades, as fleet's cuda_toolkit role leaves it
    assert out.split("\n")[:5] == ["debian 13", "https://developer.download.nvidia.com/compute/cuda/repos/debian13/"
                                   "x86_64", "cuda-keyring install ok installed",
                                   "cuda-toolkit-13-0 hold ok installed", "release 13.0"], out


def test_a_jetpack_6_orin_takes_cudss_from_the_linux_aarch64_archive(four):
    four.converged("orin-tar")
    reason = four.runs["first"][1]["hosts"]["orin-tar"]["reasons"]["cudss"]
    assert "/libcudss/linux-aarch64/libcudss-linux-aarch64-0.7.1.4_cuda12-archive.tar.xz" in reason
    # the CUDA 12 build of the archive (not the _cuda13 one of linux-sbsa), found by the loader in a login shell
    out = four.sh("orin-tar", "grep -c -a 'cuDSS 0.7.1 for CUDA 12' /opt/nvidia/cudss/lib/libcudss.so.0; "
                              "bash -lc 'python3 -c \"import ctypes; ctypes.CDLL(\\\"libcudss.so.0\\\"); print(1)\"'")
    assert out.split() == ["1", "1"], out


def test_a_jetpack_6_orin_takes_cudss_from_the_ubuntu2204_arm64_repository(four):
    four.converged("orin-apt")
    out = four.sh("orin-apt", "apt-cache policy libcudss0-cuda-12 "
                              "| grep -m1 -o 'https://[^ ]*/ubuntu2204/arm64[^ ]*'; "
                              "cat /etc/apt/sources.list.d/cuda-ubuntu2204-arm64.list; "
                              "ldconfig -p | grep -o '/usr/lib/aarch64-linux-gnu/libcudss/12/libcudss.so.0'; "
                              "grep -c -a 'cuDSS 0.7.1 for CUDA 12' /usr/lib/aarch64-linux-gnu/libcudss/12/libcudss.so.0")
    lines = out.splitlines()
    assert lines[0] == "https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2204/arm64", out
    assert "repos/ubuntu2204/arm64/" in lines[1] and "sbsa" not in out, out
    assert lines[2:] == ["/usr/lib/aarch64-linux-gnu/libcudss/12/libcudss.so.0", "1"], out
