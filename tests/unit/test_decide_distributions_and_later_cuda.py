"""Issue 47, decisions round four: distributions NVIDIA serves today, CUDA releases after the driver table, a
JetPack 6 Jetson's own library builds, and every refusal's offer accepted in one round. Each rule with its source
beside it; the expected words are written from those sources, not read back from the code. A rule fails on the code
before issue 47 (f08df0b); a row labelled "control" passes there too: it pins an answer that must not change."""
from __future__ import annotations

import json
from collections import defaultdict

import pytest

from fleet.decide import decide
from test_decide import run_cli
from test_decide_one_fix_per_answer import matrix, offered

H100_580 = {"driver": "580.95.05"}
DEBIAN13 = {"os_id": "debian", "os_version": "13", "driver": "580.95.05"}
UBUNTU2604 = {"os_id": "ubuntu", "os_version": "26.04", "driver": "580.95.05"}
CU128 = "https://download.pytorch.org/whl/cu128"
RTX5090_575 = {"gpus": [("NVIDIA GeForce RTX 5090", "12.0")], "driver": "575.64.03"}
GB200_575 = {"platform": "sbsa-dgpu", "gpus": [("NVIDIA GB200", "10.0")], "driver": "575.64.03"}

# (label, record, change to its facts, variables, refused?, phrases of the refusal (or of the reasons))
RULES = [
    # 1. NVIDIA Driver Installation Guide, distribution list: debian13 and ubuntu2604 are apt repositories; debian13
    # serves the CUDA 13 toolkit; ubuntu2604 starts with CUDA 13.3; RHEL rebuilds are served as RPM only.
    ("an H100 on Debian 13 with a 580 driver: CUDA 13.0 from debian13", "h100-pod-570", DEBIAN13, {}, False,
     ["install cuda-toolkit-13-0 from NVIDIA's apt repo https://developer.download.nvidia.com/compute/cuda/repos/"
      "debian13/x86_64/"]),
    ("Debian 13 asking 12.8: debian13 serves 13.0 on, 13.0 offered with its index", "h100-pod-570", DEBIAN13,
     {"cuda_version": "12.8", "torch_index_url": CU128}, True,
     ["debian13 repository serves CUDA 13.0 and newer", "set cuda_version=13.0 and torch_index_url="
      "https://download.pytorch.org/whl/cu130"]),
    ("Ubuntu 26.04 on the defaults: ubuntu2604 starts at 13.3, which is planned and said", "h100-pod-570",
     UBUNTU2604, {}, False, ["install cuda-toolkit-13-3 from NVIDIA's apt repo", "repos/ubuntu2604/x86_64/",
                             "the default CUDA 13.0 is not in NVIDIA's ubuntu2604 repository"]),
    ("Ubuntu 26.04 asked 13.0: ubuntu2604 starts at 13.3, offered", "h100-pod-570", UBUNTU2604,
     {"cuda_version": "13.0"}, True,
     ["ubuntu2604 repository serves CUDA 13.3 and newer, not 13.0", "set cuda_version=13.3"]),
    ("Ubuntu 26.04 asking 13.3: planned from ubuntu2604", "h100-pod-570", UBUNTU2604, {"cuda_version": "13.3"},
     False, ["repos/ubuntu2604/x86_64/"]),
    ("a V100 on Debian 13: CUDA 13 dropped it and debian13 serves no 12.x", "h100-pod-570",
     {**DEBIAN13, "gpus": [("Tesla V100-SXM2-32GB", "7.0")]}, {}, True,
     ["debian13 repository serves no CUDA 12.x", "install CUDA 12.x on it by hand"]),
    ("Rocky Linux 9: served as RPM only, refused saying so", "h100-pod-570",
     {"os_id": "rocky", "os_version": "9.6", "driver": "580.95.05"}, {}, True,
     ["only as RPM packages", "fleet installs with apt"]),
    ("control: Ubuntu 22.04 keeps ubuntu2204, every 12.x", "h100-pod-570", H100_580,
     {"cuda_version": "12.8", "torch_index_url": CU128}, False,
     ["repos/ubuntu2204/x86_64/"]),
    # 2. CUDA 13.3 release notes (toolkit driver versions): 13.3 GA and Update 1 need >= 610.43.02; release notes
    # table 2: any 13.x on >= 580 by minor-version compatibility, without cuda-compat.
    ("CUDA 13.3 on 580: minor-version compatibility, full from 610.43.02", "h100-pod-570", H100_580,
     {"cuda_version": "13.3"}, False, ["kernel driver 580.95.05 >= 580 runs any CUDA 13.x", "full 13.3 features "
                                       "from 610.43.02"]),
    ("CUDA 13.3 on 610.43.02: full support", "h100-pod-570", {"driver": "610.43.02"}, {"cuda_version": "13.3"},
     False, ["full support: kernel driver 610.43.02 >= 610.43.02 needed by CUDA 13.3"]),
    ("CUDA 13.4 (after the table) on 580: the 13.x rule, said in the plan", "h100-pod-570", H100_580,
     {"cuda_version": "13.4"}, False, ["newer than fleet's driver table", "minor-version compatibility",
                                       "without cuda-compat"]),
    ("CUDA 13.5 on 570: below 580 refused, the 12.x stack offered", "h100-pod-570", {}, {"cuda_version": "13.5"},
     True, ["newer than fleet's driver table", "install driver >= 580", "set cuda_version=12.9"]),
    ("CUDA 14.0: refused in the answer with a release fleet plans", "h100-pod-570", H100_580,
     {"cuda_version": "14.0"}, True, ["newer than any fleet knows", "set cuda_version=13.0"]),
    # 3. cuDSS redist index (compute/cudss/redist/libcudss/linux-aarch64: _cuda12 archives for Jetson); apt
    # repositories' arm64 directory for Tegra; JetPack 7's unified toolkit stays SBSA.
    ("Orin JetPack 6 cuDSS tarball: linux-aarch64", "orin-jp6", {}, {"cudss_source": "tarball"}, False,
     ["libcudss/linux-aarch64/libcudss-linux-aarch64-0.7.1.4_cuda12-archive.tar.xz"]),
    ("Orin JetPack 6 cuDSS apt: ubuntu2204/arm64", "orin-jp6", {}, {"cudss_source": "apt"}, False,
     ["libcudss0-cuda-12 from https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2204/arm64/"]),
    ("control: Thor JetPack 7 cuDSS tarball stays linux-sbsa", "thor", {},
     {"torch_source": "jetson", "cudss_source": "tarball"}, False,
     ["libcudss/linux-sbsa/libcudss-linux-sbsa-0.7.1.4_cuda13-archive.tar.xz"]),
    # 4. PyTorch RELEASE.md: 2.12 published cu126, cu130, cu132 (cu126 carries no sm_100/sm_120); 2.11 cu128 carries
    # sm_100 and sm_120 (pytorch/pytorch#175253). Blackwell on 575 with torch 2.12: the offer that plans, at once.
    ("RTX 5090 on 575 with torch 2.12: 12.9 with cu128 and torch 2.11.0 in one offer", "geforce-550", RTX5090_575,
     {"torch_version": "2.12.0"}, True,
     ["set cuda_version=12.9 and torch_index_url=https://download.pytorch.org/whl/cu128 and torch_version=2.11.0"]),
    ("GB200 on 575 with torch 2.12: the same", "spark", GB200_575, {"torch_version": "2.12.0"}, True,
     ["set cuda_version=12.9 and torch_index_url=https://download.pytorch.org/whl/cu128 and torch_version=2.11.0"]),
    # RELEASE.md: 2.9 to 2.12 need Python >= 3.10, 2.8 has 3.9 (and cu129): the 12.x offer names a torch for the
    # host's Python too, so fed back it is not refused for the Python next
    ("H100 on 575 with Python 3.9: the 12.x offer with torch 2.8.0", "h100-pod-570",
     {"driver": "575.64.03", "python": "3.9.18"}, {}, True,
     ["set cuda_version=12.9 and torch_index_url=https://download.pytorch.org/whl/cu129 and torch_version=2.8.0"]),
]


def _texts(d) -> str:
    return " ".join([d.refuse or ""] + list(d.reasons.values()))


@pytest.mark.parametrize(("label", "name", "change", "variables", "refused", "phrases"), RULES,
                         ids=[r[0] for r in RULES])
def test_rule(label, name, change, variables, refused, phrases):
    facts = matrix.varied(name, change)
    d = decide(facts, variables)
    assert bool(d.refuse) is refused, d.refuse or d.reasons
    for phrase in phrases:
        assert phrase in (d.refuse if refused else _texts(d)), _texts(d)
    fix = {n: sorted(values)[0] for n, values in offered(d).items()}
    if refused and fix:   # fed back, accepted in one round
        assert decide(facts, {**variables, **fix}).refuse is None, fix


def test_a_jetpack_6_orins_keyring_is_the_arm64_one_and_thors_the_sbsa_one():
    assert "/ubuntu2204/arm64/cuda-keyring" in decide(matrix.record("orin-jp6"), {}).cuda.keyring
    assert "/ubuntu2404/sbsa/cuda-keyring" in decide(matrix.record("thor"), {}).cuda.keyring


SWEEP = matrix.sweep()


def test_the_sweep_covers_every_family():
    labels = " ".join(label for label, _, _ in SWEEP)
    assert len(SWEEP) > 3000
    for part in ("debian 13", "ubuntu 26.04", "rocky 9.6", "CUDA 13.3", "CUDA 13.4", "Orin JetPack 6.2",
                 "libraries tarball", "libraries apt", "torch 2.12.0", "Python 3.9.18", "CUDA default"):
        assert part in labels, part


@pytest.fixture(scope="module")
def decided():
    """decide() of each situation of the sweep, once for the module: decide is pure, and the two tests below ask
    different questions of the same >3000 answers (each its own pass took half a minute on a loaded machine)."""
    return [decide(facts, variables) for _, facts, variables in SWEEP]


def test_every_refusal_of_the_sweep_is_fixed_in_one_round(decided):
    results = [(label, *matrix.one_round(label, facts, variables, d)) for (label, facts, variables), d
               in zip(SWEEP, decided)]
    refused = [r for r in results if r[1]]
    failed = [f"{label}: {why}" for label, _, why in results if why]
    assert len(refused) > 1000 and failed == [], "\n".join(failed[:10])


def test_every_situation_of_the_sweep_is_answered_with_a_json_document_proposing_one_fix(decided):
    """decide() and its JSON, as `fleet decide --json` prints it, for every situation (the CLI below for a
    cross-section: each host through the CLI would take minutes on a shared machine); every text of an answer proposes
    the same value for a variable (one fix per answer, issue 24)."""
    for (label, facts, variables), d in zip(SWEEP, decided):
        doc = d.to_json()
        assert json.loads(json.dumps(doc))["refuse"] == doc["refuse"], label
        assert {name: values for name, values in offered(d).items() if len(values) > 1} == {}, label


CROSS = (" / 570.133.20 / ", " / 610.43.02 / ")   # a driver below 580 and one after the table's newest release


def test_fleet_decide_answers_with_its_json_across_the_sweep(tmp_path):
    """`fleet decide FILES --json --set ...`, as a person runs it, on every variable set of the sweep with the H100,
    V100 and GB200 on a driver below 580 and on 610 on every distribution, and one host of each Jetson variable set:
    every host gets its answer (exit 0, or 1 where some are refused), never the bad-input exit 2, whatever CUDA
    release or distribution it names."""
    groups: dict[tuple, list[tuple[str, dict]]] = defaultdict(list)
    for i, (label, facts, variables) in enumerate(SWEEP):
        key = tuple(sorted(variables.items()))
        jetson = "JetPack" in label
        if (jetson and not groups[key]) or (not jetson and label.split(" / ")[0] in ("H100", "V100", "GB200")
                                            and any(d in label for d in CROSS)):
            groups[key].append((f"s{i}", facts))
    assert sum(len(hosts) for hosts in groups.values()) > 300
    for variables, hosts in groups.items():
        files = []
        for name, facts in hosts:
            path = tmp_path / f"{name}.json"
            path.write_text(json.dumps({**facts, "host": name}))
            files.append(str(path))
        sets = [arg for k, v in variables for arg in ("--set", f"{k}={v}")]
        status, out, err = run_cli(*files, "--json", *sets)
        assert status in (0, 1), (variables, err)
        doc = json.loads(out)
        assert set(doc["hosts"]) == {name for name, _ in hosts}, variables
