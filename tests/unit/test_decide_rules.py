"""Issue 12: each rule NVIDIA's and PyTorch's documents set, one table row per situation, over the records in
tests/data/records. Every row names its source; expected values are written out from the source, never
computed by the code under test."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from fleet.decide import decide
from fleet.roles import load_roles, render_role, roles_dirs

from test_decide import RECORDS, Row, at, decided, load, patched

CU126, CU128, CU130 = (f"https://download.pytorch.org/whl/{v}" for v in ("cu126", "cu128", "cu130"))
RTX4090 = {"gpus.0.name": "NVIDIA GeForce RTX 4090", "gpus.0.compute_cap": "8.9"}
V100 = {"gpus.0.name": "Tesla V100-SXM2-32GB", "gpus.0.compute_cap": "7.0"}
P100 = {"gpus.0.name": "Tesla P100-PCIE-16GB", "gpus.0.compute_cap": "6.0"}
OFF = {"compat.use": False}

RULES = [
    # Minor-version compatibility: any 12.x on >= 525.60.13, any 13.x on >= 580 (CUDA release notes table 2;
    # astral-sh/uv crates/uv-torch backend.rs LINUX_CUDA_DRIVERS). cuda-compat only below the family minimum.
    Row("minor: RTX 4090 on 550 runs cu128 with CUDA 12.8, no compat", "geforce-550",
        vars={"cuda_version": "12.8", "torch_index_url": CU128},
        equal={"refuse": None, **OFF, "torch.supported": True},
        says={"compat.reason": ["minor-version compatibility", "550.54.14 >= 525.60.13", "12.x"]}),
    Row("minor: RTX 4090 on 550 runs cu126 with CUDA 12.6, no compat", "geforce-550",
        vars={"cuda_version": "12.6", "torch_index_url": CU126},
        equal={"refuse": None, **OFF, "torch.supported": True}, says={"compat.reason": ["minor-version"]}),
    Row("minor: H100 on 570 asking 12.9: no compat", "h100-pod-570",
        vars={"cuda_version": "12.9", "torch_index_url": CU128},
        equal={"refuse": None, **OFF}, says={"compat.reason": ["570.133.20 >= 525.60.13", "575.51.03"]}),
    Row("minor: H100 on 580.65.06 asking 13.1: no compat", "h100-pod-570",
        vars={"cuda_version": "13.1"}, patch={"driver.version": "580.65.06"},
        equal={"refuse": None, **OFF, "ld_library_path": ["/usr/local/cuda-13.1/targets/x86_64-linux/lib"]},
        says={"compat.reason": ["580.65.06 >= 580", "13.x", "590.44.01"]}),
    Row("minor: H100 on 580.159.04 asking 13.2: no compat", "h100-pod-580-compat",
        vars={"cuda_version": "13.2"}, equal={"refuse": None, **OFF},
        says={"compat.reason": ["minor-version compatibility", "must stay off the path"]}),
    Row("full: H100 on 580.159.04 asking 13.0: no compat, full support named", "h100-pod-580-compat",
        equal={"refuse": None, **OFF}, says={"compat.reason": ["full support", "580.159.04 >= 580.65.06"]}),
    # Forward compatibility only from the branches NVIDIA lists per CUDA release (forward-compatibility.html;
    # ComputeCanada/software-stack-config driver_max_compat_cuda): R535 and R570 for 13.0, not R470 or R550.
    Row("forward: H100 on R570 asking 13.0: compat, the branch named", "h100-pod-570",
        equal={"refuse": None, "compat.use": True},
        says={"compat.reason": ["below 580", "R570", "forward compatibility", "data-center"]}),
    Row("forward: A100 on R535 asking 13.0: compat", "h100-pod-570", patch={"driver.version": "535.261.03"},
        equal={"refuse": None, "compat.use": True}, says={"compat.reason": ["R535"]}),
    Row("forward: A100 on R470 asking 13.0: refused, the supported branches named", "a100-470",
        equal={"compat.use": False},
        says={"refuse": ["cuda-compat-13-0", "R535, R570", "not R470", "cuda_version=12.6", CU126]}),
    Row("forward: H100 on R550 asking 13.0: refused (R550 ended at 12.9)", "h100-pod-570",
        patch={"driver.version": "550.163.01"}, says={"refuse": ["R535, R570", "not R550", "cuda_version=12.9"]}),
    Row("forward: A100 on R470 asking 12.6: compat (R470 takes 12.x up to 12.6)", "a100-470",
        vars={"cuda_version": "12.6", "torch_index_url": CU126}, equal={"refuse": None, "compat.use": True}),
    Row("forward: A100 on R470 asking 12.8: refused (R470 ended at 12.6)", "a100-470",
        vars={"cuda_version": "12.8", "torch_index_url": CU128}, says={"refuse": ["R535, R550", "not R470"]}),
    # CUDA 13.0 dropped Maxwell, Pascal, Volta (CUDA 13.0 release notes; NVIDIA blog "Navigating GPU
    # Architecture Support"): refuse, offer the newest 12.x and a torch variant that carries the GPU.
    # ... and torch 2.11's cu128 wheels dropped Volta (pytorch/pytorch#175253): cu126 carries sm_70
    Row("cuda13: V100 on 580 asking 13.0: refused, 12.9 + cu126 offered", "h100-pod-580-compat", patch=V100,
        says={"refuse": ["sm_50 to sm_72", "capability 7.0", "cuda_version=12.9", CU126]}),
    Row("cuda13: P100 on 570 asking 13.0: refused, cu126 (the one with sm_60) offered", "h100-pod-570", patch=P100,
        says={"refuse": ["capability 6.0", "cuda_version=12.9", CU126]}),
    Row("cuda13: V100 with the offer taken: 12.9 + cu126 runs, sm_70 from the table", "h100-pod-570", patch=V100,
        vars={"cuda_version": "12.9", "torch_index_url": CU126},
        equal={"refuse": None, **OFF, "torch.supported": True}, says={"torch.reason": ["sm_70 runs on"]}),
    # Architectures per (torch range, variant, CPU): pytorch .ci/manywheel/build_cuda.sh, aarch64_ci_build.sh,
    # and the real 2.11.0+cu130 x86_64 wheel (sm_75 .. sm_120, no compute_120).
    Row("archs: 2.11 cu130 x86_64 carries no compute_120 (the real wheel)", "h100-pod-570",
        equal={"torch.arch_list": ["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"]},
        says={"torch.reason": ["real torch 2.11.0+cu130"]}),
    Row("archs: 2.9 cu130 x86_64 carried 12.0+PTX (build_cuda.sh)", "h100-pod-570", vars={"torch_version": "2.9.1"},
        equal={"torch.arch_list": ["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120", "compute_120"]},
        says={"torch.reason": ["build_cuda.sh"]}),
    Row("archs: 2.11 cu130 aarch64 carries sm_110 for Thor", "thor",
        equal={"torch.arch_list": ["sm_80", "sm_90", "sm_100", "sm_110", "sm_120", "compute_120"]}),
    Row("archs: a published pair outside the architecture table claims nothing, verify decides", "h100-pod-570",
        vars={"torch_version": "2.7.0", "torch_index_url": CU126, "cuda_version": "12.6"},
        equal={"refuse": None, "torch.arch_list": None},
        says={"torch.reason": ["no table for torch 2.7.0 cu126 x86_64", "verify"]}),
    Row("archs: RTX 5090 (12.0) with cu126: refused, the newest covering index named with its CUDA", "geforce-550",
        patch={"gpus.0.name": "NVIDIA GeForce RTX 5090", "gpus.0.compute_cap": "12.0", "driver.version": "580.95.05"},
        vars={"cuda_version": "12.6", "torch_index_url": CU126},
        says={"refuse": ["capability 12.0", f"torch_index_url={CU130} with cuda_version=13.0"]}),
    # Toolkit and torch one CUDA major (libcudart.so.12 vs .so.13 in one process).
    Row("mismatch: 12.8 toolkit with cu130 torch: refused", "h100-pod-580-compat", vars={"cuda_version": "12.8"},
        says={"refuse": ["built for CUDA 13.0", "toolkit is CUDA 12.8",
                          "set torch_index_url=https://download.pytorch.org/whl/cu128", "libcudart.so.12"]}),
    # GeForce on a driver too old for CUDA 13: the 12.x stack that works on its driver (a pod cannot upgrade).
    Row("geforce: RTX 4090 on 550 asking 13.0: 804, and 12.9 + cu128 offered", "geforce-550",
        says={"refuse": ["error 804", "install driver >= 580.65.06", "cuda_version=12.9", CU128]}),
    # Jetson: JetPack 6 (R36, Orin) vs 7 (R38+, Thor); CUDA and index per JetPack; compat on Orin, never Thor.
    Row("orin: defaults follow JetPack 6.2: CUDA 12.6, jp6/cu126 index, NVPL + cuDSS, no compat", "orin-jp6",
        equal={"refuse": None, **OFF, "cuda.wanted": "12.6", "cuda.action": "present", "torch.source": "jetson",
               "torch.index_url": "https://pypi.jetson-ai-lab.io/jp6/cu126", "torch.arch_list": None,
               "torch.extra_index_url": "https://pypi.org/simple", "nvpl.needed": True, "cudss.needed": True,
               "cudss.packages": ["nvidia-cudss-cu12==0.7.1.4"]},
        says={"compat.reason": ["JetPack 6.2 ships CUDA 12.6"], "torch.reason": ["no architecture list"]}),
    Row("orin: never told about Thor's error 803", "orin-jp6", equal={"gpu": True},
        says={"compat.reason": ["no cuda-compat"]}),
    Row("orin: the official wheels refused (SBSA builds)", "orin-jp6", vars={"torch_source": "official"},
        says={"refuse": ["SBSA", "torch_source=jetson", "jp6/cu126"]}),
    Row("orin: CUDA 13 refused (it comes with JetPack 7)", "orin-jp6", vars={"cuda_version": "13.0"},
        says={"refuse": ["JetPack 6", "cuda_version=12.6"]}),
    # JetPack 6.2's apt repository serves only CUDA 12.6; CUDA 12.8 (and its cuda-compat) for Tegra comes only from
    # NVIDIA's cuda-tegra local installer, which fleet does not install (issue 24; it was planned with compat)
    Row("orin: CUDA 12.8 refused (JetPack 6.2's repository serves 12.6 only), 12.6 offered", "orin-jp6",
        vars={"cuda_version": "12.8"}, equal={"compat.use": False},
        says={"refuse": ["serves no other CUDA", "cuda-tegra-repo-ubuntu2204-12-8-local", "cuda_version=12.6"]}),
    Row("orin: an old record calling it jetson-thor is read by its L4T", "orin-jp6",
        patch={"platform": "jetson-thor"}, equal={"torch.index_url": "https://pypi.jetson-ai-lab.io/jp6/cu126", **OFF}),
    Row("thor: JetPack 7.0 ships 13.0, no compat", "thor", equal={"refuse": None, **OFF},
        says={"compat.reason": ["JetPack 7.0 ships CUDA 13.0", "803"]}),
    Row("thor: 13.1 refused, never compat", "thor", vars={"cuda_version": "13.1"},
        says={"refuse": ["803", "cuda_version=13.0"]}),
    Row("jetson index as torch_index_url implies the Jetson wheels' needs", "thor",
        vars={"torch_index_url": "https://pypi.jetson-ai-lab.io/sbsa/cu130"},
        equal={"torch.source": "jetson", "nvpl.needed": True, "cudss.needed": True, "torch.arch_list": None,
               "torch.extra_index_url": "https://pypi.org/simple"}),
    # Sources that work: NVIDIA's redist layout (redistrib_<release>.json), NVPL in two archives.
    Row("redist: NVPL BLAS and LAPACK archives, cuDSS archive, in NVIDIA's layout", "thor",
        vars={"torch_source": "jetson", "nvpl_source": "tarball", "cudss_source": "tarball"},
        equal={"nvpl.archives": [
            "https://developer.download.nvidia.com/compute/nvpl/redist/nvpl_blas/linux-sbsa/"
            "nvpl_blas-linux-sbsa-0.4.1.1-archive.tar.xz",
            "https://developer.download.nvidia.com/compute/nvpl/redist/nvpl_lapack/linux-sbsa/"
            "nvpl_lapack-linux-sbsa-0.3.1.1-archive.tar.xz"],
            "cudss.archives": ["https://developer.download.nvidia.com/compute/cudss/redist/libcudss/linux-sbsa/"
                               "libcudss-linux-sbsa-0.7.1.4_cuda13-archive.tar.xz"]}),
]


@pytest.mark.parametrize("row", RULES, ids=[row.id for row in RULES])
def test_rule(row: Row):
    doc = decided(patched(load(row.record), row.patch), row.vars)
    for path, expected in row.equal.items():
        assert at(doc, path) == expected, f"{path}: {at(doc, path)!r}"
    for path, phrases in row.says.items():
        for phrase in phrases:
            assert phrase in (at(doc, path) or ""), f"{path} lacks {phrase!r}: {at(doc, path)!r}"


BUILTIN = load_roles(None, roles_dirs())


def rendered(record: dict, variables: dict) -> dict:
    """Every enabled task's rendered parameters, by task id, as the shipped roles give them."""
    decisions = decide(record, variables).to_json()
    host = {"name": record["host"], "user": "root", "root": True}
    return {t.id: t.resource.p for role in BUILTIN
            for t in render_role(role, variables, record, decisions, host) if t.enabled}


KEYRING_X86 = "https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2404/x86_64/cuda-keyring_1.1-1_all.deb"
KEYRING_SBSA = "https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2404/sbsa/cuda-keyring_1.1-1_all.deb"


@pytest.mark.parametrize("record, variables, task, keyring", [
    # CUDA present (the keyring URL rendered as "None...cuda-keyring_1.1-1_all.deb" before issue 12).
    ("h100-pod-580-compat", {}, None, KEYRING_X86),
    # CUDA from JetPack, NVPL and cuDSS from NVIDIA's sbsa apt repository: default variables only.
    ("thor", {"torch_source": "jetson", "nvpl_source": "apt", "cudss_source": "apt"}, "nvpl.1", KEYRING_SBSA),
    ("thor", {"torch_source": "jetson", "nvpl_source": "apt", "cudss_source": "apt"}, "cudss.1", KEYRING_SBSA),
])
def test_keyring_url_is_real_with_default_variables(record, variables, task, keyring):
    facts = load(record)
    assert decide(facts, variables).cuda.keyring == keyring
    tasks = rendered(facts, variables)
    for task_id, params in tasks.items():
        for name, value in params.items():
            assert not (isinstance(value, str) and value.startswith("None")), f"{task_id}.{name}: {value}"
    if task:
        assert tasks[task]["keyring_deb"] == keyring


def test_apt_cudss_reaches_the_loader_through_ld_so_conf_d():
    tasks = rendered(load("thor"), {"torch_source": "jetson", "cudss_source": "apt"})
    assert tasks["cudss.2"] == {**tasks["cudss.2"], "path": "/usr/lib/aarch64-linux-gnu/libcudss/13",
                                "name": "fleet-cudss"}


def test_tarballs_render_nvidias_layout_into_the_archive_tasks():
    tasks = rendered(load("thor"), {"torch_source": "jetson", "nvpl_source": "tarball", "cudss_source": "tarball"})
    urls = [tasks[t]["url"] for t in ("nvpl.2", "nvpl.3", "cudss.3")]
    assert [u.rsplit("/", 1)[1] for u in urls] == ["nvpl_blas-linux-sbsa-0.4.1.1-archive.tar.xz",
                                                    "nvpl_lapack-linux-sbsa-0.3.1.1-archive.tar.xz",
                                                    "libcudss-linux-sbsa-0.7.1.4_cuda13-archive.tar.xz"]


def test_jetson_torch_gets_pypi_as_the_extra_index():
    tasks = rendered(load("orin-jp6"), {})
    assert tasks["torch.1"]["index_url"] == "https://pypi.jetson-ai-lab.io/jp6/cu126"
    assert tasks["torch.1"]["extra_index_url"] == "https://pypi.org/simple"


def test_the_orin_record_is_in_the_schema():
    assert json.loads((RECORDS / "orin-jp6.json").read_text())["jetson"]["l4t"] == "36.4"


@pytest.mark.parametrize("venv_module, env_exists, installs", [(False, False, True), (True, False, False),
                                                               (None, False, False), (False, True, False)])
def test_minimal_images_without_ensurepip_get_python3_venv(venv_module, env_exists, installs):
    facts = patched(load("h100-pod-580-compat"), {"python.venv_module": venv_module, "python.env_exists": env_exists})
    tasks = rendered(facts, {})
    assert ("torch.0" in tasks) == installs
    if installs:
        assert tasks["torch.0"]["packages"] == ["python3-venv"]


def test_orin_without_its_toolkit_takes_jetpacks_from_the_l4t_apt_source_not_the_desktop_repo():
    """An Orin flashed with the L4T BSP only: cuda-toolkit-12-6 comes from repo.download.nvidia.com/jetson, which
    the preinstalled nvidia-l4t-apt-source lists (Jetson Linux Developer Guide, "Software Packages and the Update
    Mechanism"); NVIDIA's desktop sbsa repo would add SBSA builds of the same names, which JetPack 6 does not run."""
    record = load("orin-jp6")
    record["cuda"]["toolkits"] = []
    tasks = rendered(record, {})
    assert tasks["cuda_toolkit.0"]["packages"] == ["cuda-toolkit-12-6"]
    assert not tasks["cuda_toolkit.0"]["keyring_deb"]      # no cuda-keyring, no desktop repo in its sources
    assert decide(record, {}).to_json()["cuda"]["source"] == "jetpack"
    names = {t.id: t.spec.name for role in BUILTIN
             for t in render_role(role, {}, record, decide(record, {}).to_json(), {"name": "orin", "user": "root", "root": True})}
    assert names["cuda_toolkit.0"] == "the CUDA toolkit from the JetPack apt repository (held against unattended upgrades)"
    named = rendered(record, {"cuda_keyring_url": "https://mirror.example/cuda-keyring_1.1-1_all.deb"})
    assert named["cuda_toolkit.0"]["keyring_deb"] == "https://mirror.example/cuda-keyring_1.1-1_all.deb"   # asked for
    x86 = load("h100-pod-580-compat")
    x86["cuda"]["toolkits"] = []
    assert rendered(x86, {})["cuda_toolkit.0"]["keyring_deb"] == KEYRING_X86   # the desktop path is unchanged


# issue 47: a JetPack 6 Orin (Tegra CUDA 12) takes NVIDIA's libraries from ubuntu2204/arm64, so its keyring too
KEYRING_2204_ARM64 = ("https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2204/arm64/"
                      "cuda-keyring_1.1-1_all.deb")


@pytest.mark.parametrize("record, jetson, keyring", [
    # the records name no distribution: the JetPack release's Ubuntu (JETPACK_RELEASES), never 24.04 for an Orin
    ("orin-jp6", None, KEYRING_2204_ARM64),                                  # JetPack 6.2: Ubuntu 22.04
    ("orin-jp6", {"l4t": "36.3.0", "jetpack": None}, KEYRING_2204_ARM64),    # by L4T alone (JetPack 6.0)
    ("thor", None, KEYRING_SBSA),                                            # JetPack 7.0: Ubuntu 24.04
    ("thor", {"l4t": None, "jetpack": None}, KEYRING_SBSA),                  # neither: Thor's current, JetPack 7
])
def test_a_jetson_without_a_distribution_gets_its_jetpacks_ubuntu_keyring(record, jetson, keyring):
    facts = load(record)
    assert not facts["system"].get("distro")
    if jetson:
        facts["jetson"] = {**facts["jetson"], **jetson}
    assert decide(facts).cuda.keyring == keyring
