"""Each lab host looks like the host it simulates, through fleet's own SSH connection."""

from __future__ import annotations

import pytest

from helpers import ok, sh

QUERY = "nvidia-smi --query-gpu=index,name,driver_version,compute_cap,memory.total,uuid --format=csv,noheader,nounits"

EXPECTED = {  # host: (uname -m, kernel suffix, GPU name, compute cap, memory.total, driver)
    "thor": ("aarch64", "-tegra", "NVIDIA Thor", "11.0", "[N/A]", "580.00"),
    "spark": ("aarch64", "-nvidia", "NVIDIA GB10", "12.1", "[N/A]", "580.95.05"),
    "pod-570": ("x86_64", None, "NVIDIA H100 80GB HBM3", "9.0", "81559", "570.133.20"),
    "pod-580": ("x86_64", None, "NVIDIA H100 80GB HBM3", "9.0", "81559", "580.159.04"),
}


@pytest.mark.parametrize("host", sorted(EXPECTED))
def test_uname_nvidia_smi_and_driver_match_the_profile(lab, host):
    machine, suffix, gpu, cap, memory, driver = EXPECTED[host]
    out = ok(lab, host, f"hostname; uname -m; uname -r; python3 -c 'import platform; print(platform.machine())'; "
                        f"{QUERY}; cat /proc/driver/nvidia/version; . /etc/os-release; echo $ID $VERSION_ID")
    name, m, release, py_machine, smi, proc_version, _gcc, os_line = out.splitlines()
    assert (name, m, py_machine) == (host, machine, machine)
    if suffix:
        assert release.endswith(suffix)
    fields = [f.strip() for f in smi.split(",")]
    assert fields[:5] == ["0", gpu, driver, cap, memory]
    assert fields[5].startswith("GPU-")
    assert f"  {driver}  " in proc_version and f"for {machine}" in proc_version
    assert os_line == "ubuntu 24.04"


@pytest.mark.parametrize("host", sorted(EXPECTED))
def test_nvidia_smi_table_and_version_say_driver_and_stand_in(lab, host):
    driver = EXPECTED[host][5]
    table = ok(lab, host, "nvidia-smi")
    assert f"Driver Version: {driver}" in table and "stand-in" in table
    version = ok(lab, host, "nvidia-smi --version")
    assert f"DRIVER version      : {driver}" in version and "stand-in" in version
    bad = sh(lab, host, "nvidia-smi --query-gpu=nonsense --format=csv")
    assert bad.exit == 2 and 'Field "nonsense" is not a valid field to query.' in bad.stdout


def test_cuda_version_in_the_header_follows_the_loaded_libcuda(lab):
    assert "CUDA Version: 12.8" in ok(lab, "pod-570", "nvidia-smi")
    assert "CUDA Version: 13.0" in ok(lab, "pod-580", "nvidia-smi")
    # pod-580 has cuda-compat 580.95.05: put first, its libcuda is the one nvidia-smi's header reports.
    assert "CUDA Version: 13.0" in ok(lab, "pod-580", "LD_LIBRARY_PATH=/usr/local/cuda-13.0/compat nvidia-smi")


def test_only_the_thor_has_a_tegra_release(lab):
    assert ok(lab, "thor", "cat /etc/nv_tegra_release").startswith("# R38 (release), REVISION: 2.0,")
    for host in ("spark", "pod-570", "pod-580"):
        assert sh(lab, host, "test -e /etc/nv_tegra_release").exit == 1


@pytest.mark.parametrize("host", ["thor", "spark"])
def test_jetpack_and_dgx_os_ship_the_cuda_13_toolkit(lab, host):
    out = ok(lab, host, "/usr/local/cuda/bin/nvcc --version; readlink -f /usr/local/cuda; "
                        "dpkg-query -W -f='${Status}\\n' cuda-toolkit-13-0; ldconfig -p | grep libcublas.so.13")
    assert "Cuda compilation tools, release 13.0, V13.0.88" in out and "stand-in" in out
    assert "/usr/local/cuda-13.0\n" in out and "install ok installed" in out
    assert "/usr/local/cuda-13.0/targets/sbsa-linux/lib/libcublas.so.13" in out


def test_pods_have_no_toolkit_and_only_pod_580_has_compat(lab):
    assert ok(lab, "pod-570", "ls /usr/local; command -v nvcc || echo no-nvcc").split()[-1] == "no-nvcc"
    assert "cuda" not in ok(lab, "pod-570", "ls /usr/local")
    out = ok(lab, "pod-580", "ls /usr/local/cuda-13.0/compat; dpkg-query -W -f='${Version}' cuda-compat-13-0")
    assert "libcuda.so.580.95.05" in out and out.endswith("580.95.05-0ubuntu1")
    # the compat directory is never registered with ldconfig: the kernel driver's libcuda wins by default
    cache = ok(lab, "pod-580", "ldconfig -p | grep 'libcuda.so.1 '")
    assert "x86_64-linux-gnu/libcuda.so.1" in cache and "/usr/local/cuda-13.0/compat" not in cache


def test_spark_user_is_not_root_and_has_passwordless_sudo(lab):
    assert lab.inventory.hosts["spark"].user == "nvidia"
    assert ok(lab, "spark", "id -un; echo $HOME").split() == ["nvidia", "/home/nvidia"]
    assert ok(lab, "spark", "id -un", sudo=True).strip() == "root"


def test_bashrc_returns_early_for_ssh_commands(lab):
    """Debian's bash reads ~/.bashrc for `ssh host cmd`; Ubuntu's .bashrc returns early when not interactive."""
    ok(lab, "pod-570", "sed -i '1i export FLEET_BEFORE=yes' ~/.bashrc; echo 'export FLEET_AFTER=yes' >> ~/.bashrc")
    try:
        assert ok(lab, "pod-570", "echo ${FLEET_BEFORE:-unset} ${FLEET_AFTER:-unset}").split() == ["yes", "unset"]
        # RunPod's environment is sourced at the end of root's .bashrc: only interactive shells see it.
        assert ok(lab, "pod-570", "echo ${RUNPOD_POD_ID:-unset}").strip() == "unset"
        assert ok(lab, "pod-570", "bash -ic 'echo $RUNPOD_POD_ID' 2>/dev/null").strip() == "fleet-lab-pod"
    finally:
        lab.reset(["pod-570"])
