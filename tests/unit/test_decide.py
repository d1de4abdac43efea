"""Decisions, table-driven: one row per situation, over hand-written facts records
(tests/data/records/, in docs/ARCHITECTURE.md's schema). Expected values are written
out from shared/DOMAIN.md, never computed by the code under test."""
from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from fleet.workflows.decide import acting_roles
from fleet.decide import FactsError, VariableError, decide
from fleet.roles import load_roles, roles_dirs
from fleet.decide.gpu import capability_from_name, runs_on
from fleet.decide.torch_wheel import index_cuda

DATA = Path(__file__).resolve().parents[1] / "data"
RECORDS = DATA / "records"

ALL_ROLES = ["cuda_toolkit", "fabric_manager", "cuda_compat", "nvpl", "cudss", "env_hooks", "cutlass", "torch", "verify"]
X86_LIB = "/usr/local/cuda-13.0/targets/x86_64-linux/lib"
SBSA_LIB = "/usr/local/cuda-13.0/targets/sbsa-linux/lib"
COMPAT = "/usr/local/cuda-13.0/compat"
SITE_312 = "/opt/fleet/venv/lib/python3.12/site-packages"
CU130 = "https://download.pytorch.org/whl/cu130"
JETSON_INDEX = "https://pypi.jetson-ai-lab.io/sbsa/cu130"


def load(name: str) -> dict:
    return json.loads((RECORDS / f"{name}.json").read_text())


def at(doc, dotted: str):
    """at(doc, 'torch.reason'), at(doc, 'gpus.0.name'): follow keys and list indexes; a path
    through sonames (which hold dots) uses '/': 'missing_providers/libcuda.so.1/provider'."""
    for key in dotted.split("/" if "/" in dotted else "."):
        doc = doc[int(key)] if isinstance(doc, list) else doc[key]
    return doc


def patched(record: dict, changes: dict) -> dict:
    record = copy.deepcopy(record)
    for dotted, value in changes.items():
        *parents, last = dotted.split(".")
        target = at(record, ".".join(parents)) if parents else record
        target[int(last) if isinstance(target, list) else last] = value
    return record


@dataclass
class Row:
    id: str
    record: str
    vars: dict = field(default_factory=dict)
    patch: dict = field(default_factory=dict)
    equal: dict = field(default_factory=dict)      # dotted path in to_json() -> exact value
    says: dict = field(default_factory=dict)       # dotted path -> phrases its text must contain


REFUSED = {"roles": [], "skipped": ALL_ROLES}

ROWS = [
    Row("h100 on 570 wanting 13.0: compat on, first on the path", "h100-pod-570",
        equal={"refuse": None, "compat.use": True, "compat.path": COMPAT, "compat.package": "cuda-compat-13-0",
               "ld_library_path": [COMPAT, X86_LIB],
               "roles": ["cuda_toolkit", "cuda_compat", "env_hooks", "cutlass", "torch", "verify"],
               "cuda.action": "install", "cuda.package": "cuda-toolkit-13-0", "cuda.source": "nvidia-apt",
               "cuda.repo": "https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2204/x86_64/",
               "torch.index_url": CU130, "torch.version": "2.11.0", "torch.supported": True,
               "torch.cuda": "13.0", "nvpl.needed": False, "cudss.needed": False,
               "missing_providers/libcuda.so.1/provider": "cuda_compat"},
        says={"compat.reason": ["570.133.20 < 580.65.06", "CUDA 13.0", "data-center"],
              "torch.reason": ["sm_90", "9.0"], "reasons.env": [COMPAT]}),
    # cuda_compat acts where the package is installed but not decided: its gate task keeps fleet's own
    # /etc/ld.so.conf.d drop-in away under this driver (a host that had compat under an older one).
    Row("h100 on 580.159.04 with compat installed: compat off and off the path", "h100-pod-580-compat",
        equal={"refuse": None, "compat.use": False, "ld_library_path": [X86_LIB],
               "roles": ["cuda_compat", "env_hooks", "cutlass", "torch", "verify"],
               "compat.gate": {"below": "580.65.06", "branches": ["535.54.03", "570.26"]},
               "cuda.action": "present", "cuda.path": "/usr/local/cuda-13.0", "torch.supported": True,
               "compat.installed.version": "580.95.05",
               "missing_providers/libcuda.so.1/provider": "driver",
               "missing_providers/libcuda.so.1/fleet_role": False},
        says={"compat.reason": ["580.159.04 >= 580.65.06", "installed but must stay off the path", "803"],
              "reasons.compat": ["580.159.04 >= 580.65.06"],
              "reasons.env": [f"keeps {COMPAT} off it"],
              "torch.reason": ["sm_90", "read from the installed torch"],
              "cuda.reason": ["(nvcc 13.0.88)", "nothing to install"],
              "missing_providers/libcuda.so.1/reason": ["not fleet's"]}),
    Row("h100 on 580 with compat on LD_LIBRARY_PATH now: env_hooks takes it off", "h100-pod-580-compat",
        patch={"cuda.compat.in_use": True, "env.LD_LIBRARY_PATH": f"{COMPAT}:/usr/local/nvidia/lib64"},
        equal={"compat.use": False, "ld_library_path": [X86_LIB]},
        says={"compat.reason": ["on LD_LIBRARY_PATH now", "env_hooks takes it off"]}),
    Row("h100 on 580 with compat registered with ldconfig: the entry must go", "h100-pod-580-compat",
        patch={"cuda.compat.registered_ldconfig": True},
        equal={"compat.use": False, "ld_library_path": [X86_LIB]},
        says={"compat.reason": ["registered with ldconfig", "/etc/ld.so.conf.d"]}),
    Row("thor with the official wheel: no compat, no NVPL, no cuDSS", "thor",
        equal={"refuse": None, "compat.use": False, "ld_library_path": [SBSA_LIB],
               "roles": ["env_hooks", "cutlass", "torch", "verify"],
               "cuda.source": "jetpack", "cuda.action": "present", "torch.index_url": CU130,
               "torch.supported": True, "nvpl.needed": False, "cudss.needed": False},
        says={"compat.reason": ["580.00", "r580", "803"], "torch.reason": ["sm_110", "11.0"],
              "nvpl.reason": ["official torch wheels do not link it"],
              "missing_providers/libcudss.so.0/reason": ["off for this host"]}),
    Row("thor with the Jetson index: NVPL and cuDSS wheels, their dirs after the toolkit's", "thor",
        vars={"torch_source": "jetson"},
        equal={"refuse": None, "compat.use": False, "torch.index_url": JETSON_INDEX, "torch.source": "jetson",
               "torch.supported": True, "nvpl.needed": True, "cudss.needed": True,
               "nvpl.packages": ["nvpl-blas", "nvpl-lapack"], "cudss.packages": ["nvidia-cudss-cu13==0.7.1.4"],
               "ld_library_path": [SBSA_LIB, f"{SITE_312}/nvpl/lib", f"{SITE_312}/nvidia/cu13/lib"],
               "roles": ["nvpl", "cudss", "env_hooks", "cutlass", "torch", "verify"],
               "missing_providers/libcudss.so.0/provider": "cudss",
               "missing_providers/libnvpl_lapack_lp64_gomp.so.0/provider": "nvpl"},
        says={"nvpl.reason": ["Jetson-index torch", "NVPL"], "cudss.reason": ["libcudss.so.0"]}),
    Row("thor, Jetson index, apt: cuDSS through ld.so.conf.d, nothing added to the path", "thor",
        vars={"torch_source": "jetson", "nvpl_source": "apt", "cudss_source": "apt"},
        equal={"ld_library_path": [SBSA_LIB], "cudss.packages": ["libcudss0-cuda-13"],
               "cudss.lib_dirs": ["/usr/lib/aarch64-linux-gnu/libcudss/13"], "cudss.loader": "ld.so.conf.d",
               "nvpl.loader": "default",
               "nvpl.origin": "https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2404/sbsa/"}),
    Row("thor, Jetson index, tarballs: their lib dirs on the path", "thor",
        vars={"torch_source": "jetson", "nvpl_source": "tarball", "cudss_source": "tarball",
              "nvpl_home": "/opt/nvpl", "cudss_home": "/opt/cudss"},
        equal={"ld_library_path": [SBSA_LIB, "/opt/nvpl/lib", "/opt/cudss/lib"], "nvpl.source": "tarball"}),
    Row("thor wanting 13.1 on its r580 driver: refused, never compat", "thor",
        vars={"cuda_version": "13.1"},
        equal={**REFUSED, "compat.use": False},
        says={"refuse": ["Thor on JetPack 7.0 (driver 580.00) cannot run CUDA 13.1", "ships CUDA 13.0", "803",
                         "cuda_version=13.0"]}),
    Row("spark: cu130 aarch64 wheels, no compat, CUDA from DGX OS", "spark",
        equal={"refuse": None, "compat.use": False, "torch.index_url": CU130, "torch.cuda": "13.0",
               "torch.supported": True, "cuda.source": "dgx-os", "cuda.action": "present",
               "ld_library_path": [SBSA_LIB], "nvpl.needed": False,
               "torch.arch_list": ["sm_80", "sm_90", "sm_100", "sm_110", "sm_120", "compute_120"]},
        says={"compat.reason": ["580.95.05 >= 580.65.06"], "torch.reason": ["sm_120", "12.1"],
              "cuda.reason": ["preinstalled by DGX OS"]}),
    Row("geforce on 550 wanting 13.0: refused, 804 named", "geforce-550",
        equal={**REFUSED, "compat.use": False,
               "refuse": "GeForce RTX 4090 on driver 550.54.14 cannot run CUDA 13.0: forward compatibility is "
                         "not supported on GeForce GPUs (error 804); install driver >= 580.65.06, or set "
                         "cuda_version=12.9 and torch_index_url=https://download.pytorch.org/whl/cu128 (driver "
                         "550.54.14 runs any CUDA 12.x by minor-version compatibility)"},
        says={"refuse": ["error 804"]}),
    Row("driver too old to report compute_cap: capability from the name (CUDA 12.6 through compat on R470)",
        "a100-470", vars={"cuda_version": "12.6", "torch_index_url": "https://download.pytorch.org/whl/cu126"},
        equal={"refuse": None, "compat.use": True, "torch.supported": True,
               "ld_library_path": ["/usr/local/cuda-12.6/compat", "/usr/local/cuda-12.6/targets/x86_64-linux/lib"]},
        says={"torch.reason": ["sm_80", "8.0", "inferred from the name"],
              "compat.reason": ["470.256.02 < 560.28.03", "data-center", "R470"]}),
    Row("capability unknown and a name fleet does not know: said, not refused", "a100-470",
        patch={"gpus.0.name": "NVIDIA Mystery Accelerator", "driver.version": "580.95.05"},
        equal={"refuse": None, "compat.use": False, "torch.supported": True},
        says={"torch.reason": ["capability of Mystery Accelerator is unknown", "compute_cap", "verify"]}),
    Row("unknown GPU on an old driver: compat not allowed, refused with the driver it needs", "a100-470",
        patch={"gpus.0.name": "NVIDIA Mystery Accelerator"},
        equal={**REFUSED, "compat.use": False},
        says={"refuse": ["470.256.02", "error 804", "install driver >= 580.65.06"]}),
    Row("cpu-only host: CPU torch, no CUDA decisions, not refused", "cpu-only",
        equal={"refuse": None, "compat.use": False, "roles": ["torch", "verify"], "ld_library_path": [],
               "torch.index_url": "https://download.pytorch.org/whl/cpu", "torch.cuda": None,
               "torch.supported": True, "cuda.action": "none", "cuda.wanted": None, "missing_providers": {}, "gpu": False,
               "skipped": ["cuda_toolkit", "fabric_manager", "cuda_compat", "nvpl", "cudss", "env_hooks", "cutlass"]},
        says={"torch.reason": ["no NVIDIA GPU", "CPU"]}),
    Row("capability 12.1 with a cu126 wheel: refused", "spark",
        vars={"torch_index_url": "https://download.pytorch.org/whl/cu126", "cuda_version": "12.6"},
        equal={**REFUSED, "torch.supported": False, "torch.cuda": "12.6", "torch.arch_list": ["sm_80", "sm_90"]},
        says={"refuse": ["cu126", "sm_80 sm_90", "GB10", "12.1", "torch_index_url=https://download.pytorch.org/whl/cu130"]}),
    # torch 2.11's cu128 wheels dropped Volta (pytorch/pytorch#175253): its cu126 wheels still carry sm_70
    Row("volta wanting CUDA 13 (sm_75 and up): refused, 12.9 and cu126 offered", "h100-pod-570",
        patch={"gpus.0.name": "Tesla V100-SXM2-32GB", "gpus.0.compute_cap": "7.0"},
        equal={**REFUSED},
        says={"refuse": ["V100", "7.0", "sm_50 to sm_72", "cuda_version=12.9",
                         "torch_index_url=https://download.pytorch.org/whl/cu126"]}),
    Row("volta on CUDA 12.9 with cu130 wheels: toolkit/torch CUDA major mismatch refused", "h100-pod-570",
        vars={"cuda_version": "12.9", "torch_index_url": CU130, "torch_cuda": ""},
        patch={"gpus.0.name": "Tesla V100-SXM2-32GB", "gpus.0.compute_cap": "7.0", "driver.version": "580.95.05"},
        equal={**REFUSED, "torch.supported": False},
        says={"refuse": ["toolkit is CUDA 12.9", "cu130",   # 2.11's cu128 has no sm_70 (pytorch/pytorch#175253)
                          "set torch_index_url=https://download.pytorch.org/whl/cu126"]}),
    Row("aarch64 before torch 2.9: no CUDA wheels, refused", "spark",
        vars={"torch_version": "2.8.0"},
        equal={**REFUSED, "torch.supported": False}, says={"refuse": ["2.8.0", "aarch64", "cu128",
                          "set torch_index_url=https://download.pytorch.org/whl/cu128 and cuda_version=12.8"]}),
    Row("cu130 wheels on a driver giving 12.8, cuda_version 12.8: refused, the fix named", "h100-pod-570",
        vars={"cuda_version": "12.8"},
        equal={**REFUSED, "torch.supported": False, "compat.use": False},
        says={"refuse": ["need CUDA 13.0", "570.133.20 gives CUDA 12.8", "cuda_version=13.0"],
              "compat.reason": ["570.133.20 >= 570.26"]}),
    Row("cu128 wheels and cuda_version 12.8 on driver 570: no compat, supported", "h100-pod-570",
        vars={"cuda_version": "12.8", "torch_index_url": "https://download.pytorch.org/whl/cu128"},
        equal={"refuse": None, "compat.use": False, "torch.cuda": "12.8", "torch.supported": True,
               "cuda.package": "cuda-toolkit-12-8",
               "ld_library_path": ["/usr/local/cuda-12.8/targets/x86_64-linux/lib"]}),
    Row("the Jetson index on x86_64: refused", "h100-pod-570",
        vars={"torch_source": "jetson"}, equal={**REFUSED, "torch.supported": False}, says={"refuse": ["aarch64", "torch_source=official"]}),
    Row("Jetson index wheels without a python version: the dirs cannot be named", "thor",
        vars={"torch_source": "jetson"}, patch={"python.version": None},
        equal={"roles": []}, says={"refuse": ["python.version", "fleet facts"]}),
    Row("a mirror index that does not say its CUDA: torch_cuda tells", "h100-pod-570",
        vars={"torch_index_url": "http://127.0.0.1:8080/wheels", "torch_cuda": "13.0"},
        equal={"refuse": None, "torch.cuda": "13.0", "torch.index_url": "http://127.0.0.1:8080/wheels"}),
    Row("an OS without an NVIDIA repo and no toolkit: refused, cuda_apt_repo named", "h100-pod-570",
        patch={"system.os_id": "fedora", "system.os_version": "40"},
        equal=REFUSED, says={"refuse": ["fedora 40", "cuda_apt_repo"]}),
]

# The real H100 record (gathered by `fleet facts` off a real pod) joins the table once the lead adds it.
if (DATA / "h100-real.json").exists():
    ROWS.append(Row("the real H100 record: driver 580.159.04, compat installed and kept off", "../h100-real",
                    equal={"refuse": None, "compat.use": False, "torch.supported": True},
                    says={"compat.reason": ["580.159.04 >= 580.65.06"]}))


BUILTIN = load_roles(None, roles_dirs())


def decided(facts: dict, variables: dict) -> dict:
    """The decisions as --json prints them, with the roles whose own `when:` holds (the only gate) and the
    roles skipped, both as the shipped role files decide them."""
    d = decide(facts, variables)
    doc = d.to_json()
    json.dumps(doc)  # what --json prints must serialise
    doc["roles"] = acting_roles(BUILTIN, facts, d, variables)
    doc["skipped"] = [r.name for r in BUILTIN if r.name not in doc["roles"]]
    return doc


@pytest.mark.parametrize("row", ROWS, ids=[row.id for row in ROWS])
def test_decisions(row: Row):
    doc = decided(patched(load(row.record), row.patch), row.vars)
    for path, expected in row.equal.items():
        assert at(doc, path) == expected, f"{path}: {at(doc, path)!r}"
    for path, phrases in row.says.items():
        for phrase in phrases:
            assert phrase in at(doc, path), f"{path} lacks {phrase!r}: {at(doc, path)!r}"
    # Whatever the row: every decision has a reason, roles keep their order, compat is first when used.
    assert list(doc["reasons"]) == ["cuda", "compat", "torch", "nvpl", "cudss", "env"]
    assert all(doc["reasons"].values())
    assert doc["roles"] == [name for name in ALL_ROLES if name in doc["roles"]]
    assert (doc["ld_library_path"][:1] == [doc["compat"]["path"]]) == doc["compat"]["use"]
    # cuda_compat acts where compat is used, and where the package is installed without it (its gate task keeps
    # fleet's ld.so.conf.d drop-in away under this driver)
    assert ("cuda_compat" in doc["roles"]) == (bool(doc["compat"]["use"] or doc["compat"]["installed"])
                                               and not doc["refuse"])


@pytest.mark.parametrize("arch_list, capability, runs", [
    (["sm_80", "sm_90"], "9.0", "sm_90"),
    (["sm_120"], "12.1", "sm_120"),            # sm_121 runs sm_120 cubins
    (["sm_80", "sm_90"], "12.1", None),         # other major, no PTX
    (["sm_100", "sm_120"], "11.0", None),       # Thor: a 10.0 cubin does not run on 11.0
    (["sm_90", "compute_90"], "12.0", "compute_90"),  # PTX JITs upward
    (["compute_120"], "9.0", None),             # but never downward
    (["sm_90a"], "9.0", "sm_90a"),
    (["sm_100a"], "10.3", None),                # arch-specific cubins run on their own capability only
    (["sm_86"], "8.0", None),                   # a higher minor does not run on a lower one
])
def test_cubin_and_ptx_rules(arch_list, capability, runs):
    assert runs_on(arch_list, capability) == runs


@pytest.mark.parametrize("url, cuda", [
    ("https://download.pytorch.org/whl/cu130", "13.0"), ("https://download.pytorch.org/whl/cu126/", "12.6"),
    ("https://pypi.jetson-ai-lab.io/sbsa/cu130", "13.0"), ("https://download.pytorch.org/whl/cpu", None),
    ("http://mirror.local/wheels", None),
])
def test_index_cuda(url, cuda):
    assert index_cuda(url) == cuda


@pytest.mark.parametrize("name, capability", [
    ("NVIDIA H100 80GB HBM3", "9.0"), ("NVIDIA GH200 480GB", "9.0"), ("NVIDIA A100-SXM4-80GB", "8.0"),
    ("NVIDIA A10G", "8.6"), ("NVIDIA L40S", "8.9"), ("NVIDIA GB10", "12.1"), ("NVIDIA Thor", "11.0"),
    ("NVIDIA GeForce RTX 4090", "8.9"), ("Tesla V100-SXM2-16GB", "7.0"), ("NVIDIA B200", "10.0"),
    ("NVIDIA Mystery Accelerator", None),
])
def test_capability_from_name(name, capability):
    assert capability_from_name(name) == capability


def test_yaml_typed_cuda_version_is_read_as_text():
    # `cuda_version: 13.0` in YAML arrives as a float.
    assert decide(load("h100-pod-570"), {"cuda_version": 13.0}).compat.use is True


# 12.7 was never released (12.6 -> 12.8): a bad value. A 13.x newer than the table (13.7) is no longer one: issue 47
# plans it by the 13.x rule (tests/unit/test_decide_distributions_and_later_cuda.py).
@pytest.mark.parametrize("bad_vars, phrase", [
    ({"cuda_version": "12.7"}, "12.0, 12.1"), ({"cuda_version": "thirteen"}, "like 13.0"),
    ({"torch_source": "conda"}, "official, jetson"), ({"nvpl_source": "brew"}, "pypi, apt, tarball"),
    ({"torch_version": "latest"}, "2.11.0"), ({"python_env": "venv"}, "absolute path"),
    ({"cudss_version": "latest"}, "0.7.1.4"),
])
def test_bad_variables_are_one_sentence_with_a_fix(bad_vars, phrase):
    with pytest.raises(VariableError) as caught:
        decide(load("spark"), bad_vars)
    assert phrase in str(caught.value) and "\n" not in str(caught.value)


@pytest.mark.parametrize("facts, phrase", [
    ([], "not a JSON object"), ({"host": "x"}, "'system'"),
    ({"system": {"arch": "riscv64"}}, "riscv64"),
    ({"system": {"arch": "x86_64"}, "platform": "mainframe", "gpus": []}, "mainframe"),
    ({"system": {"arch": "x86_64"}, "platform": "x86_64-dgpu", "gpus": [{"name": "NVIDIA H100"}],
      "driver": {"version": "[N/A]"}}, "[N/A]"),
])
def test_unreadable_facts(facts, phrase):
    with pytest.raises(FactsError) as caught:
        decide(facts, {})
    assert phrase in str(caught.value) and "fleet facts" in str(caught.value)


def test_records_follow_the_schema():
    """The hand-written records carry every top-level key docs/ARCHITECTURE.md lists."""
    keys = {"host", "gathered_at", "fleet_version", "system", "platform", "gpus", "driver", "jetson", "cuda",
            "libraries", "python", "torch", "cutlass", "env", "verify", "probe"}
    for path in sorted(RECORDS.glob("*.json")):
        record = json.loads(path.read_text())
        assert set(record) == keys, path.name
        assert record["host"] == path.stem


# ---------------------------------------------------------------- the CLI: fleet decide

def run_cli(*argv: str) -> tuple[int, str, str]:
    """`fleet decide ...` through fleet.cli.main, as a person runs it; returns (status, stdout, stderr)
    with whitespace runs folded so assertions do not depend on where Rich wraps."""
    import io

    from rich.console import Console

    from fleet.cli import main
    from fleet.env import Environment

    out, err = io.StringIO(), io.StringIO()
    env = Environment(console=Console(file=out, width=120, highlight=False, soft_wrap=True),
                      err_console=Console(file=err, width=120, highlight=False, soft_wrap=True))
    status = main(["decide", *argv], env)
    return status, out.getvalue(), err.getvalue()


def folded(text: str) -> str:
    return " ".join(text.split())


def test_cli_prints_each_decision_and_its_reason():
    status, out, err = run_cli(str(RECORDS / "h100-pod-570.json"))
    text = folded(out)
    assert status == 0 and err == ""
    assert "h100-pod-570 ok" in text
    assert "compat on kernel driver 570.133.20 < 580.65.06 needed by CUDA 13.0" in text
    assert f"LD_LIBRARY_PATH 2 dirs {COMPAT} {X86_LIB}" in text
    assert "roles 6 act cuda_toolkit cuda_compat env_hooks cutlass torch verify (skipped: fabric_manager nvpl cudss)" in text


def test_compat_in_the_ld_cache_only_is_not_said_to_be_on_the_path():
    """The facts' in_use counts the ld cache (a drop-in such as a 570 image's): that is no LD_LIBRARY_PATH entry."""
    doc = decided(patched(load("h100-pod-580-compat"), {"cuda.compat.registered_ldconfig": True,
                                                         "cuda.compat.in_use": True}), {})
    assert "registered with ldconfig" in doc["compat"]["reason"]
    assert "on LD_LIBRARY_PATH now" not in doc["compat"]["reason"]


def test_cli_json_shape():
    status, out, _ = run_cli(str(RECORDS / "h100-pod-580-compat.json"), str(RECORDS / "cpu-only.json"), "--json")
    doc = json.loads(out)
    assert status == 0
    assert set(doc) == {"format", "hosts", "stats"} and doc["format"] == 1 and set(doc["hosts"]) == {"h100-pod-580-compat", "cpu-only"}
    assert doc["stats"]["cpu-only"]["remote_commands"] == 0
    pod = doc["hosts"]["h100-pod-580-compat"]
    assert pod["refuse"] is None
    assert pod["compat"]["use"] is False and "must stay off the path" in pod["compat"]["reason"]
    assert {"index_url", "version", "supported", "reason"} <= set(pod["torch"])
    # the toolkit is there already; cuda_compat's gate keeps fleet's drop-in away from the installed compat
    assert pod["roles"] == ["cuda_compat", "env_hooks", "cutlass", "torch", "verify"]
    assert pod["ld_library_path"] == [X86_LIB]
    assert list(pod["reasons"]) == ["cuda", "compat", "torch", "nvpl", "cudss", "env"]


def test_cli_set_changes_the_decisions():
    status, out, _ = run_cli(str(RECORDS / "thor.json"), "--set", "torch_source=jetson",
                             "--set", "cudss_source=apt", "--json")
    thor = json.loads(out)["hosts"]["thor"]
    assert status == 0
    assert thor["roles"] == ["nvpl", "cudss", "env_hooks", "cutlass", "torch", "verify"]
    assert thor["cudss"]["loader"] == "ld.so.conf.d"
    assert thor["ld_library_path"] == [SBSA_LIB, f"{SITE_312}/nvpl/lib"]


def test_cli_refused_host_exits_1_after_saying_why():
    status, out, _ = run_cli(str(RECORDS / "geforce-550.json"))
    assert status == 1
    assert "geforce-550 REFUSED" in folded(out)
    assert "refused: GeForce RTX 4090 on driver 550.54.14 cannot run CUDA 13.0" in folded(out)
    status, out, _ = run_cli(str(RECORDS / "geforce-550.json"), "--json")
    assert status == 1 and "error 804" in json.loads(out)["hosts"]["geforce-550"]["refuse"]


@pytest.mark.parametrize("argv, phrases", [
    (["--set", "cuda_verison=13.0"], ["cuda_verison", "cuda_version"]),
    (["--set", "cuda_version"], ["NAME=VALUE", "--set cuda_version=13.0"]),
    (["--set", "torch_source=conda"], ["conda", "official, jetson"]),
    (["--set", "cuda_version=11.8"], ["11.8", "13.0"]),
])
def test_cli_bad_set_is_one_sentence_exit_2(argv, phrases):
    status, out, err = run_cli(str(RECORDS / "spark.json"), *argv)
    assert status == 2 and out == ""
    assert err.startswith("error:") and err.count("\n") == 1 and "Traceback" not in err
    for phrase in phrases:
        assert phrase in err


@pytest.mark.parametrize("content, phrases", [
    (None, ["missing.json", "cannot read", "No such file"]),
    ('{"host": "x",\n  "system": ', ["broken.json:2:", "not a JSON facts record"]),
    ("[1, 2]", ["broken.json", "not a JSON object"]),
    ('{"host": "x", "system": {"arch": "x86_64"}, "platform": "toaster"}', ["broken.json", "toaster"]),
])
def test_cli_bad_facts_file_is_one_sentence_exit_2(tmp_path, content, phrases):
    path = tmp_path / ("missing.json" if content is None else "broken.json")
    if content is not None:
        path.write_text(content)
    status, out, err = run_cli(str(path))
    assert status == 2 and out == ""
    assert folded(err).startswith("error:") and "Traceback" not in err and "fleet facts" in err
    for phrase in phrases:
        assert phrase in folded(err)


# ---------------------------------------------------------------- records from the real facts parser

def parsed_record(capture_dir: str, from_h100: tuple[str, ...] = ()) -> dict:
    """Captured probe sections (tests/data/captured/<dir>/<source>.txt) through the real facts parser.
    The hand-written captures hold only GPU sources; `from_h100` borrows others (os_release) from the
    real H100 capture."""
    from fleet.engine.probe import parse
    from fleet.sections import Section

    paths = [DATA / "captured" / "h100" / f"{source}.txt" for source in from_h100]
    paths += sorted((DATA / "captured" / capture_dir).glob("*.txt"))
    return parse({f"facts.{p.stem}": Section(f"facts.{p.stem}", 0, p.read_text()) for p in paths}, capture_dir)


def test_real_h100_capture_keeps_the_installed_compat_off_the_path():
    doc = decide(parsed_record("h100")).to_json()
    assert doc["refuse"] is None and doc["compat"]["use"] is False
    assert "580.159.04 >= 580.65.06" in doc["compat"]["reason"]
    assert "cuda-compat 580.95.05 is installed but must stay off the path" in doc["compat"]["reason"]
    assert doc["ld_library_path"] == [X86_LIB]
    assert doc["cuda"]["action"] == "present" and "(nvcc 13.0.88)" in doc["cuda"]["reason"]
    assert "read from the installed torch" in doc["torch"]["reason"]


def test_thor_capture_with_driver_580_00_is_not_mistaken_for_an_old_driver():
    # Thor reports the branch only ("580.00" < 580.65.06 read as a desktop driver would refuse it).
    doc = decide(parsed_record("thor", from_h100=("os_release",))).to_json()
    assert doc["refuse"] is None and doc["compat"]["use"] is False
    assert "r580" in doc["compat"]["reason"]


def test_470_capture_without_compute_cap_decides_from_the_name():
    # Two V100s on 470.82.01, which rejects compute_cap: 7.0 from the name. CUDA 13 dropped Volta (CUDA 13.0
    # release notes); R470 takes CUDA 12.x up to 12.6 through cuda-compat (NVIDIA forward compatibility).
    doc = decide(parsed_record("old-driver", from_h100=("uname", "os_release"))).to_json()
    assert "Tesla V100-SXM2-16GB has capability 7.0" in doc["refuse"]
    assert "set cuda_version=12.6 and torch_index_url=https://download.pytorch.org/whl/cu126" in doc["refuse"]
    doc = decide(parsed_record("old-driver", from_h100=("uname", "os_release")),
                 {"cuda_version": "12.6", "torch_index_url": "https://download.pytorch.org/whl/cu126"}).to_json()
    assert doc["refuse"] is None and doc["compat"]["use"] is True and doc["torch"]["supported"] is True
    assert "sm_70 runs on Tesla V100-SXM2-16GB, capability 7.0" in doc["torch"]["reason"]


def test_fleet_decide_and_apply_decide_with_the_same_variables(tmp_path):
    """An Orin whose /workspace is its own mount: apply puts the venv there (fleet.decide.storage), and so must
    `fleet decide` on the same record: the NVPL/cuDSS wheel paths on LD_LIBRARY_PATH and every reason agree."""
    from fleet.engine.decided import decide_tasks
    from fleet.inventory import Host
    from fleet.roles import load_roles, roles_dirs

    facts = json.loads((RECORDS / "orin-jp6.json").read_text())
    facts["system"]["disks"] = [{"path": "/workspace", "mount": "/workspace", "free_gb": 500.0}]
    facts["paths"] = {"/workspace/venv": None, "/workspace/.cache/pip": None, "/workspace/tmp": None,
                      "/opt/cutlass": None}   # a verdict for every root path, as a real probe gives (issue 49)
    path = tmp_path / "orin.json"
    path.write_text(json.dumps(facts))
    status, out, err = run_cli(str(path), "--json")
    assert status == 0, err
    offline = json.loads(out)["hosts"]["orin-jp6"]
    host = Host(name="orin-jp6", address="127.0.0.1")
    applied = decide_tasks(load_roles(None, roles_dirs()), host, facts).decisions_json
    assert any(d.startswith("/workspace/venv/") for d in applied["ld_library_path"])   # the volume's venv
    assert offline["ld_library_path"] == applied["ld_library_path"]
    assert offline["reasons"] == applied["reasons"]


@pytest.mark.parametrize("width", [80, 100])
def test_decide_on_a_terminal_keeps_urls_and_paths_whole(width):
    """A person copies the index URL and the library path off `fleet decide`: on a terminal they wrap at words, never
    mid-word (the grid's fold cut `/usr/local/cuda-13.0/targets/x86_64-linu` / `x/lib` at 80 columns)."""
    import io
    from pathlib import Path

    from rich.console import Console

    from fleet.cli import main
    from fleet.env import Environment

    record = Path(__file__).resolve().parents[1] / "data" / "h100-device" / "h100-device.json"
    out = io.StringIO()
    env = Environment(console=Console(file=out, width=width, force_terminal=True, color_system=None),
                      err_console=Console(file=io.StringIO(), width=width))
    assert main(["decide", str(record)], env) == 0
    lines = out.getvalue().splitlines()
    assert all(len(line) <= width for line in lines), out.getvalue()
    for whole in ("https://download.pytorch.org/whl/cu130", "/usr/local/cuda-13.0/targets/x86_64-linux/lib"):
        assert any(whole in line for line in lines), out.getvalue()
    assert " ".join(out.getvalue().split()).startswith("h100-device ok ─"), out.getvalue()
    assert "LD_LIBRARY_PATH 1 dir /usr/local/cuda-13.0/targets/x86_64-linux/lib roles" in " ".join(out.getvalue().split())
