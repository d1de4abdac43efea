"""The stand-ins fail through the real mechanisms: the dynamic loader, libcuda's cuInit, pip's tags, apt."""

from __future__ import annotations

import pytest

from helpers import ok, sh

VENV = "/opt/fleet-lab-test-venv"
SITE = f"{VENV}/lib/python3.11/site-packages"
# The real index URLs: every lab host resolves these names to the lab's HTTPS mirror.
INDEXES = {"cu130": "https://download.pytorch.org/whl/cu130", "jetson-cu130": "https://pypi.jetson-ai-lab.io/sbsa/cu130",
           "pypi": "https://pypi.org/simple"}
NVIDIA = "https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2404"
IMPORT = f"{VENV}/bin/python -c 'import torch' 2>&1 | tail -n 1"
CUINIT = "python3 -c 'import ctypes; print(ctypes.CDLL(\"libcuda.so.1\").cuInit(0))'"
TORCH_REPORT = (f"{VENV}/bin/python -W error::UserWarning -c 'import torch; print(torch.cuda.is_available(), "
                "torch.version.cuda, torch.__version__)' 2>&1 | tail -n 1")


def pip_install(lab, host: str, index: str, *packages: str) -> None:
    ok(lab, host, f"test -x {VENV}/bin/pip || python3 -m venv {VENV}; {VENV}/bin/pip install -q --no-cache-dir "
                  f"--index-url {INDEXES[index]} " + " ".join(packages), sudo=True)


@pytest.fixture(scope="module")
def fresh(lab):
    lab.reset(["thor", "spark", "pod-570", "pod-580"])
    yield lab
    lab.reset(["thor", "spark", "pod-570", "pod-580"])


def test_jetson_torch_fails_on_nvpl_then_cudss_then_imports(fresh):
    lab = fresh
    pip_install(lab, "thor", "jetson-cu130", "torch")
    assert ok(lab, "thor", IMPORT).strip() == \
        "ImportError: libnvpl_lapack_lp64_gomp.so.0: cannot open shared object file: No such file or directory"
    # ldd over torch's shared objects names every undeclared dependency at once
    ldd = ok(lab, "thor", f"ldd {SITE}/torch/lib/*.so | grep 'not found' | sort -u")
    assert [line.split()[0] for line in ldd.splitlines()] == \
        ["libcudss.so.0", "libnvpl_blas_lp64_gomp.so.0", "libnvpl_lapack_lp64_gomp.so.0"]
    pip_install(lab, "thor", "pypi", "nvpl-lapack", "nvidia-cudss-cu13")   # nvpl-lapack pulls nvpl-blas
    assert "nvpl" not in ok(lab, "thor", "ldconfig -p")   # wheels are not on the loader's path
    assert ok(lab, "thor", f"LD_LIBRARY_PATH={SITE}/nvpl/lib {IMPORT}").strip() == \
        "ImportError: libcudss.so.0: cannot open shared object file: No such file or directory"
    script = (f"LD_LIBRARY_PATH={SITE}/nvpl/lib:{SITE}/nvidia/cu13/lib {VENV}/bin/python -c '"
              "import torch\n"
              "print(torch.__version__, torch.version.cuda, torch.cuda.is_available(), torch.cuda.get_device_name())\n"
              "print(torch.cuda.get_device_capability(), torch.cuda.get_arch_list(), torch._C._lab_backends())\n"
              "a, b = torch.randn(4, 3), torch.randn(3, 2)\n"
              "print(torch.allclose((a.cuda() @ b.to(\"cuda\")).cpu(), a @ b), (a @ b).shape)'")
    lines = ok(lab, "thor", script).splitlines()
    assert lines[0] == "2.11.0+cu130 13.0 True NVIDIA Thor"
    assert lines[1] == "(11, 0) ['sm_87', 'sm_110', 'sm_121'] lapack=nvpl-301 blas=nvpl-401 cudss=701"
    assert lines[2] == "True (4, 2)"


def test_official_cu130_wheels_on_thor_and_spark_are_aarch64_and_import(fresh):
    lab = fresh
    pip_install(lab, "spark", "cu130", "torch")
    assert "manylinux_2_28_aarch64" in ok(lab, "spark", f"cat {SITE}/torch-2.11.0+cu130.dist-info/WHEEL")
    out = ok(lab, "spark", f"{VENV}/bin/python -c 'import torch; print(torch.cuda.is_available(), "
                           "torch.cuda.get_device_capability(), torch.cuda.get_arch_list())'")
    assert out.strip() == "True (12, 1) ['sm_80', 'sm_90', 'sm_100', 'sm_110', 'sm_120']"


def test_pod_570_needs_compat_first_on_the_path(fresh):
    lab = fresh
    pip_install(lab, "pod-570", "cu130", "torch")
    out = ok(lab, "pod-570", f"{VENV}/bin/python -c 'import torch; print(torch.cuda.is_available())' 2>&1")
    assert "The NVIDIA driver on your system is too old (found version 12080)" in out and out.endswith("False\n")
    cuda_call = sh(lab, "pod-570", f"{VENV}/bin/python -c 'import torch; torch.randn(2, 2).cuda()' 2>&1")
    assert cuda_call.exit == 1 and "RuntimeError: The NVIDIA driver on your system is too old" in cuda_call.stdout
    # install cuda-compat the way NVIDIA documents it: the keyring package, then apt (signed repository)
    ok(lab, "pod-570", f"curl -fsSLo /tmp/cuda-keyring_1.1-1_all.deb {NVIDIA}/x86_64/cuda-keyring_1.1-1_all.deb && "
                       "dpkg -i /tmp/cuda-keyring_1.1-1_all.deb && apt-get update -q && "
                       "DEBIAN_FRONTEND=noninteractive apt-get install -y -q cuda-compat-13-0")
    assert ok(lab, "pod-570", "apt-cache show cuda-compat-13-0 | grep ^Description:").strip().endswith(
        "fleet lab stand-in: CUDA 13.0 forward compatibility (driver 580.95.05)")
    with_compat = f"LD_LIBRARY_PATH=/usr/local/cuda-13.0/compat:/usr/local/nvidia/lib64 {TORCH_REPORT}"
    assert ok(lab, "pod-570", with_compat).strip() == "True 13.0 2.11.0+cu130"
    compat_last = f"LD_LIBRARY_PATH=/usr/local/nvidia/lib64:/usr/local/cuda-13.0/compat {CUINIT}"
    assert ok(lab, "pod-570", compat_last).strip() == "0"   # nothing before it: still found (first hit wins)


def test_pod_580_compat_on_the_path_gives_803(fresh):
    lab = fresh
    assert ok(lab, "pod-580", CUINIT).strip() == "0"
    assert ok(lab, "pod-580", f"LD_LIBRARY_PATH=/usr/local/cuda-13.0/compat {CUINIT}").strip() == "803"
    pip_install(lab, "pod-580", "cu130", "torch")
    out = ok(lab, "pod-580", f"LD_LIBRARY_PATH=/usr/local/cuda-13.0/compat {VENV}/bin/python -c "
                             "'import torch; print(torch.cuda.is_available())' 2>&1")
    assert "Error 803: system has unsupported display driver / cuda driver combination" in out
    assert out.endswith("False\n")


@pytest.mark.parametrize("host, code", [("spark", "804"), ("thor", "803")])
def test_compat_is_refused_on_gb10_and_breaks_thor(fresh, host, code):
    lab = fresh
    ok(lab, host, f"curl -fsSLo /tmp/compat.deb {NVIDIA}/sbsa/cuda-compat-13-0_580.95.05-0ubuntu1_all.deb && "
                  "dpkg -i /tmp/compat.deb", sudo=True)
    assert ok(lab, host, f"LD_LIBRARY_PATH=/usr/local/cuda-13.0/compat {CUINIT}").strip() == code
    assert ok(lab, host, CUINIT).strip() == "0"


def test_libcudss_deb_needs_an_ld_so_conf_entry_and_nvpl_debs_do_not(fresh):
    lab = fresh
    debs = ["libcudss0-cuda-13_0.7.1.4-1_all.deb", "libnvpl-blas0_0.4.1.1-1_all.deb",
            "libnvpl-lapack0_0.3.1.1-1_all.deb", "nvpl_25.5-1_all.deb"]
    ok(lab, "thor", "mkdir -p /tmp/debs && cd /tmp/debs && " + " && ".join(
        f"curl -fsSLO {NVIDIA}/sbsa/{deb}" for deb in debs) + " && dpkg -i " + " ".join(debs))
    cache = ok(lab, "thor", "ldconfig -p")
    assert "libnvpl_lapack_lp64_gomp.so.0 " in cache and "libcudss.so.0 " not in cache
    ok(lab, "thor", "echo /usr/lib/aarch64-linux-gnu/libcudss/13 > /etc/ld.so.conf.d/cudss.conf && ldconfig")
    assert "/usr/lib/aarch64-linux-gnu/libcudss/13/libcudss.so.0" in ok(lab, "thor", "ldconfig -p")
