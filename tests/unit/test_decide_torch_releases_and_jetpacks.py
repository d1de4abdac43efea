"""Issue 37, decisions round three: what each torch release publishes (variants per CPU, the Python range, the
architectures), Thor's CUDA-13-only sm_110, JetPack releases by board. Each rule with the source beside it; the
expected words are written from those sources, not read back from the code. A rule fails on the code before
issue 37 (638870a); a row labelled "control" passes there too: it pins an answer that must not change."""
from __future__ import annotations

import pytest

from fleet.decide import decide
# what a text proposes, as round two reads
from test_decide_one_fix_per_answer import OUTSIDE_FIX, matrix, offered, texts, wheel


H100_580 = {"driver": "580.95.05"}
V100_580 = {"gpus": [("Tesla V100-SXM2-32GB", "7.0")], "driver": "580.95.05"}
GH200_580 = {"platform": "sbsa-dgpu", "gpus": [("NVIDIA GH200 480GB", "9.0")], "driver": "580.95.05"}
ORIN_MODEL, THOR_MODEL = "NVIDIA Jetson AGX Orin Developer Kit", "NVIDIA Jetson AGX Thor Developer Kit"
JP72 = {"l4t": "39.2", "l4t_full": "39.2.0", "jetpack": "7.2"}
ORIN_JP72 = {"jetson": {**JP72, "model": ORIN_MODEL}, "driver": "595.00", "os_version": "24.04", "python": "3.12.3"}
JP5 = {"l4t": "35.4", "l4t_full": "35.4.1", "jetpack": "5.1.2"}
XAVIER_JP5 = {"jetson": {**JP5, "model": "NVIDIA Jetson AGX Xavier Developer Kit"}, "python": "3.8.10",
              "os_version": "20.04"}

# (label, record, change to its facts, variables, refused?, phrases of the refusal (or of the torch reason))
RULES = [
    # 1. Which variants each release publishes: PyTorch RELEASE.md's release compatibility matrix (stable and
    # experimental CUDA per release). cu130 starts with 2.9 (experimental there); 2.8 published cu126, cu128, cu129.
    ("torch 2.8.0 on cu130: no such wheel, 2.9.0 offered", "h100-pod-570", H100_580, wheel("2.8.0", "cu130", "13.0"),
     True, ["torch 2.8.0 has no cu130 wheels for x86_64", "set torch_version=2.9.0"]),
    # RELEASE.md: 2.9 published cu126 and cu128 (stable) and cu130 (experimental); cu129 was 2.8's alone
    ("torch 2.9.0 on cu129: no such wheel, cu128 offered", "h100-pod-570", {}, wheel("2.9.0", "cu129", "12.9"),
     True, ["no cu129 wheels", "set torch_index_url=https://download.pytorch.org/whl/cu128"]),
    # RELEASE.md: 2.12 published cu126, cu130 and cu132 (experimental): cu128 is gone
    ("torch 2.12.0 on cu128: no such wheel, cu126 offered", "h100-pod-570", H100_580,
     wheel("2.12.0", "cu128", "12.8"), True,
     ["no cu128 wheels", "set torch_index_url=https://download.pytorch.org/whl/cu126"]),
    ("control: torch 2.12.0 on cu130 is published", "h100-pod-570", H100_580, wheel("2.12.0", "cu130", "13.0"),
     False, ["torch 2.12.0 from https://download.pytorch.org/whl/cu130"]),
    # a release the matrix does not name is no published pair either: the nearest named one is offered
    ("torch 2.15.0: no release the matrix names, 2.14.0 offered", "h100-pod-570", H100_580,
     wheel("2.15.0", "cu130", "13.0"), True, ["torch 2.15.0 has no cu130 wheels", "set torch_version=2.14.0"]),
    # RELEASE.md's aarch64 support matrix for 2.12: 12.6, 13.0 and 13.2
    ("aarch64 torch 2.12.0 on cu128: none, cu126 offered", "spark", GH200_580, wheel("2.12.0", "cu128", "12.8"),
     True, ["no cu128 wheels for aarch64", "set torch_index_url=https://download.pytorch.org/whl/cu126"]),
    # RELEASE.md: 2.7 published cu118 and cu126 (stable); fleet installs no CUDA 11 toolkit, so the pair offered
    # beside a 12.6 toolkit is 2.7's cu126, not cuda_version=11.8
    ("torch 2.7.0 on cu118 beside a CUDA 12.6 toolkit: cu126 offered", "h100-pod-570", {},
     wheel("2.7.0", "cu118", "12.6"), True, ["set torch_index_url=https://download.pytorch.org/whl/cu126"]),
    # RELEASE.md's aarch64 matrix for 2.12: cu132 exists, but Thor on JetPack 7.0 runs CUDA 13.0 (no compat: 803)
    ("Thor with torch 2.12.0 on cu132 under JetPack 7.0: cu130 offered", "thor", {},
     {"torch_version": "2.12.0", "torch_index_url": "https://download.pytorch.org/whl/cu132"}, True,
     ["set torch_index_url=https://download.pytorch.org/whl/cu130"]),
    # pytorch/pytorch#175253 (the 2.11 matrix): cu128 x86_64 wheels drop Volta (7.0) in 2.11; 2.9 and 2.10 kept it
    ("V100 on torch 2.11.0 cu128: no sm_70, cu126 offered", "h100-pod-570", V100_580,
     wheel("2.11.0", "cu128", "12.8"), True,
     ["none runs on Tesla V100", "set torch_index_url=https://download.pytorch.org/whl/cu126"]),
    ("control: V100 on torch 2.10.0 cu128: sm_70 still there", "h100-pod-570", V100_580,
     wheel("2.10.0", "cu128", "12.8"),
     False, ["sm_70 runs on Tesla V100"]),
    ("V100 on the defaults: CUDA 12.9 with cu126, not cu128", "h100-pod-570", V100_580, {}, True,
     ["cuda_version=12.9 and torch_index_url=https://download.pytorch.org/whl/cu126"]),
    # 2. Python has an upper bound: RELEASE.md gives >=3.9, <=3.13 for 2.6 to 2.8; >=3.10, <=3.14 for 2.9 to 2.12;
    # <=3.15 from 2.13
    ("Python 3.14 with torch 2.8.0: refused, 2.9.0 offered", "h100-pod-570", {"python": "3.14.0"},
     wheel("2.8.0", "cu128", "12.8"), True, ["Python 3.9 to 3.13", "python3 is 3.14", "set torch_version=2.9.0"]),
    ("control: Python 3.14 with torch 2.11.0 is planned", "h100-pod-570", {"python": "3.14.0"}, {}, False,
     ["torch 2.11.0"]),
    ("Python 3.15 with torch 2.12.0: refused, 2.13.0 offered", "h100-pod-570",
     {"python": "3.15.0", **H100_580}, wheel("2.12.0", "cu130", "13.0"), True,
     ["Python 3.10 to 3.14", "set torch_version=2.13.0"]),
    # ... and the newer release is offered as the nearest published pair that runs here, so the fix is whole: 2.9.0
    # on cu126 would mix libcudart 12 with the CUDA 13.0 toolkit (before, torch_version=2.9.0 alone, refused again)
    ("Python 3.14 with torch 2.6.0 cu126 beside CUDA 13.0: 2.9.0 on cu130 in one fix", "h100-pod-570",
     {"python": "3.14.0", **H100_580},
     {"torch_version": "2.6.0", "torch_index_url": "https://download.pytorch.org/whl/cu126"},
     True, ["Python 3.9 to 3.13",
            "set torch_index_url=https://download.pytorch.org/whl/cu130 and torch_version=2.9.0"]),
    ("Python 3.14 with torch 2.6.0 and no GPU: refused too", "cpu-only", {"python": "3.14.0"},
     {"torch_version": "2.6.0"}, True, ["Python 3.9 to 3.13"]),
    # 3. Thor is sm_110 under CUDA 13 only (CUDA 13.0 renumbered it from sm_101; NVIDIA/cutlass CHANGELOG 4.2.0;
    # shared/DOMAIN.md): no CUDA 12 toolkit or wheel targets it, and JetPack 7's repository serves CUDA 13.0 only
    ("Thor asking torch 2.8.0 with CUDA 12.9: refused, JetPack 7.0's CUDA 13.0 offered", "thor", {},
     wheel("2.8.0", "cu129", "12.9"), True, ["JetPack 7.0 ships CUDA 13.0", "sm_110", "set cuda_version=13.0"]),
    ("Thor asking torch 2.8.0 on cu130: 2.9.0 offered (the first aarch64 cu130 with sm_110)", "thor", {},
     {"torch_version": "2.8.0"}, True, ["set torch_version=2.9.0"]),
    # 4. JetPack 7.2 (L4T R39.2, CUDA 13.2) runs Orin and Thor (OE4T/meta-tegra PR #2224, a secondary source): the
    # board's model, not the L4T number, says which generation
    ("Orin reflashed to JetPack 7.2: an Orin with CUDA 13.2, not a Thor", "orin-jp6", ORIN_JP72, {}, False,
     ["sm_80 runs on Orin", "cu130"]),
    ("control: Thor on JetPack 7.2 is planned, sm_110 from cu130", "thor",
     {"jetson": {**JP72, "model": THOR_MODEL}, "driver": "595.00"}, {}, False, ["sm_110 runs on Thor"]),
    # 5. Boards per release (the JetPack release notes): JetPack 6 runs the Orin family only, JetPack 5.1.x is the
    # Xavier's last; fleet plans JetPack 6.0 to 7.2, so a Xavier is refused with the board named
    ("Xavier on JetPack 5.1.2: refused with the board named, not 'reflash with JetPack 6.2'", "orin-jp6",
     XAVIER_JP5, {}, True, ["NVIDIA Jetson AGX Xavier Developer Kit", "Jetson Xavier", "JetPack 5.x"]),
    ("Xavier NX on L4T R36.3: refused with the board named", "orin-jp6",
     {"jetson": {"l4t": "36.3", "l4t_full": "36.3.0", "jetpack": "6.0",
                 "model": "NVIDIA Jetson Xavier NX Developer Kit"}, "driver": "540.3.0"}, {}, True,
     ["NVIDIA Jetson Xavier NX Developer Kit"]),
    # ... and JetPack 7.2 runs the Orin too (the table's boards, secondary source above): the reflash an Orin on
    # JetPack 5 is told is the newest release for its board, 7.2, not JetPack 6's last
    ("Orin on JetPack 5.1.2: reflash to JetPack 7.2, the Orin's newest, not 6.2", "orin-jp6",
     {"jetson": {**JP5, "model": ORIN_MODEL}, "python": "3.8.10", "os_version": "20.04"}, {}, True,
     ["reflash it with JetPack 7.2 (L4T R39.2)", "Jetson Orin on JetPack 6.0, 6.1, 6.2, 7.2"]),
    # A release of two generations with no board named (neither /proc/device-tree/model nor a GPU name): JetPack
    # 7.2 runs Orin and Thor, JetPack 5 Xavier and Orin; what decides the stack differs per board (the CUDA path,
    # the GPU's architecture, cuda-compat's 803 on Thor), so fleet refuses rather than guess
    ("JetPack 7.2 with no board model and no GPU name: cannot tell the board", "thor",
     {"jetson": {**JP72, "model": None}, "gpus": [], "driver": "595.00"}, {}, True,
     ["cannot tell the board", "both the Jetson Orin and the Jetson Thor", "/proc/device-tree/model", "fleet facts"]),
    ("JetPack 5.1.2 with no board model: Xavier or Orin, cannot tell the board (no reflash advice)", "orin-jp6",
     {"jetson": {**JP5, "model": None}, "python": "3.8.10", "os_version": "20.04"}, {}, True,
     ["cannot tell the board", "both the Jetson Xavier and the Jetson Orin", "/proc/device-tree/model"]),
    ("JetPack 7.2 with a board model fleet does not know and no GPU name: cannot tell the board", "orin-jp6",
     {"jetson": {**JP72, "model": "NVIDIA Jetson Mystery Module"}, "driver": "595.00", "os_version": "24.04",
      "python": "3.12.3"}, {}, True, ["'NVIDIA Jetson Mystery Module' is none fleet knows"]),
    ("control: JetPack 7.2 with no board model but the GPU named: a Thor", "thor",
     {"jetson": {**JP72, "model": None}, "driver": "595.00"}, {}, False, ["sm_110 runs on Thor"]),
    ("control: JetPack 7.0 (Thor only) with no board model and no GPU name: a Thor", "thor",
     {"jetson": {"l4t": "38.2", "jetpack": "7.0", "model": None}, "gpus": []}, {}, False, ["sm_110 runs on"]),
    # Every offer checked against the GPU, the driver and the JetPack it is for (the sweep of the matrix's family):
    # cuda-compat is offered only where it brings that CUDA here: CUDA 13 dropped Pascal (CUDA 13.0 release
    # notes), and cuda-compat 13.0 supports R535 and R570, not R550 (forward-compatibility.html); before, both
    # were told "set cuda_version=13.0 to bring cuda-compat"
    ("P100 on 570 asking CUDA 12.6 (default cu130): cu126, not CUDA 13 through cuda-compat", "h100-pod-570",
     {"gpus": [("Tesla P100-PCIE-16GB", "6.0")]}, {"cuda_version": "12.6"}, True,
     ["set torch_index_url=https://download.pytorch.org/whl/cu126"]),
    ("H100 on 550 asking CUDA 12.6 (default cu130): a 12.x index, not cuda-compat 13.0 R550 lacks", "h100-pod-570",
     {"driver": "550.163.01"}, {"cuda_version": "12.6"}, True,
     ["set torch_index_url=https://download.pytorch.org/whl/cu128"]),
    # JetPack 7.2's repository serves CUDA 13.2 only and a CUDA 13 toolkit beside a cu126 torch mixes libcudart 12
    # and 13: the one fix sets both (before, cuda_version=13.2 alone, which fed back was refused for the index)
    ("Orin on JetPack 7.2 asking CUDA 12.6 with cu126: 13.2 and cu130 in one fix", "orin-jp6", ORIN_JP72,
     {"cuda_version": "12.6", "torch_index_url": "https://download.pytorch.org/whl/cu126"}, True,
     ["set cuda_version=13.2"]),
    # RELEASE.md: 2.12's only 12.x variant is cu126 (sm_50 to sm_90): a 12.x toolkit offer cannot carry sm_120;
    # before, "set cuda_version=12.9 (no official torch variant covers the GPU)"
    ("RTX 5090 with torch 2.12.0 cu126 beside CUDA 13.0: cu130, not a 12.x toolkit no 2.12 index covers",
     "geforce-550", {"gpus": [("NVIDIA GeForce RTX 5090", "12.0")], "driver": "580.95.05"},
     {"torch_version": "2.12.0", "torch_index_url": "https://download.pytorch.org/whl/cu126"}, True,
     ["set torch_index_url=https://download.pytorch.org/whl/cu130"]),
    # JetPack 7.0 ships CUDA 13.0 and a Jetson has no cuda-compat to a newer one: 2.12's cu132 is no fix on Thor;
    # before, the torch reason offered cu132 beside the toolkit's cuda_version=13.0
    ("Thor with torch 2.12.0 cu126 and CUDA 12.6: 13.0 and cu130, not cu132", "thor", {},
     {"torch_version": "2.12.0", "torch_index_url": "https://download.pytorch.org/whl/cu126", "cuda_version": "12.6"},
     True, ["set cuda_version=13.0"]),
]


@pytest.mark.parametrize(("label", "name", "change", "variables", "refused", "phrases"), RULES,
                         ids=[r[0] for r in RULES])
def test_rule(label, name, change, variables, refused, phrases):
    facts = matrix.varied(name, change)
    d = decide(facts, variables)
    assert bool(d.refuse) is refused, d.refuse or d.torch.reason
    text = d.refuse if refused else d.torch.reason
    for phrase in phrases:
        assert phrase in text, text
    fix = {n: sorted(values)[0] for n, values in offered(d).items()}
    assert all(len(values) == 1 for values in offered(d).values()), texts(d)
    if refused and fix:   # the one offered fix, fed back, is accepted
        again = decide(facts, {**variables, **fix})
        assert again.refuse is None, f"fed back {fix}: {again.refuse}"
    if refused and not fix:
        assert OUTSIDE_FIX.search(d.refuse), d.refuse


def test_an_orin_on_l4t_r39_is_an_orin_with_its_jetpacks_cuda():
    """The record names the board; decisions must not plan a Thor (compat 803, Thor's torch) on it."""
    from fleet.decide.host import read_host
    host = read_host(matrix.varied("orin-jp6", ORIN_JP72))
    assert (host.platform, host.jetson.generation, host.jetson.cuda) == ("jetson-orin", "orin", "13.2")


def test_the_facts_name_the_platform_from_the_board_model():
    """The probe reads /proc/device-tree/model (fleet/facts/gpu.py DT_MODEL); with it an R39 Orin is an Orin."""
    from fleet.facts.gpu import detect_platform
    assert detect_platform("aarch64", "5.15.148-tegra", [], True, True, "39.2", ORIN_MODEL) == "jetson-orin"
    assert detect_platform("aarch64", "6.8.12-tegra", [], True, True, "39.2", THOR_MODEL) == "jetson-thor"


@pytest.mark.parametrize("model", [THOR_MODEL, ORIN_MODEL])
def test_jetpack_72_ships_cuda_132_on_both_its_boards(model):
    """JetPack 7.2 (L4T R39.2) ships CUDA 13.2 (OE4T/meta-tegra PR #2224, secondary): its CUDA is the one planned."""
    record = "thor" if model == THOR_MODEL else "orin-jp6"
    change = {"jetson": {**JP72, "model": model}, "driver": "595.00", "os_version": "24.04", "python": "3.12.3"}
    d = decide(matrix.varied(record, change), {})
    assert (d.refuse, d.cuda.wanted, d.cuda.package) == (None, "13.2", "cuda-toolkit-13-2"), d.refuse


def test_an_orin_on_jetpack_72_asking_cuda_12_is_refused_by_the_toolkit_and_offered_13_2():
    """JetPack 7.2 ships CUDA 13.2 and its repository serves no 12.x (a Jetson's CUDA major is its JetPack's):
    the toolkit's own refusal says so and offers 13.2, which fed back plans cuda-toolkit-13-2 on the Orin. Before
    (638870a) the toolkit planned 12.6 from JetPack's repository, and only the torch index's CUDA 13 refused it,
    offering Thor's 13.0 (the R39 Orin was read as a Thor)."""
    facts = matrix.varied("orin-jp6", ORIN_JP72)
    d = decide(facts, {"cuda_version": "12.6"})
    assert d.cuda.refuse and "JetPack 7.2 ships CUDA 13.2" in d.cuda.refuse, (d.cuda.refuse, d.refuse)
    assert offered(d) == {"cuda_version": {"13.2"}}, texts(d)
    again = decide(facts, {"cuda_version": "13.2"})
    assert (again.refuse, again.cuda.package) == (None, "cuda-toolkit-13-2"), again.refuse
    assert "runs on Orin" in again.torch.reason, again.torch.reason


def test_thor_on_cu128_is_offered_the_cu130_index_not_the_cuda_it_already_has():
    """On Thor the toolkit is JetPack 7.0's CUDA 13.0 already, and no CUDA 12 wheel carries sm_110 (CUDA 13.0
    renumbered Thor from sm_101): the fix is the index, cu130, whose aarch64 wheels carry sm_110
    (aarch64_ci_build.sh, release 2.9). Before (638870a) the answer was "set cuda_version=13.0", the value it
    already had, which fed back was refused the same way."""
    facts = matrix.varied("thor", {})
    asked = {"torch_index_url": "https://download.pytorch.org/whl/cu128"}
    d = decide(facts, asked)
    assert offered(d) == {"torch_index_url": {"https://download.pytorch.org/whl/cu130"}}, texts(d)
    again = decide(facts, {**asked, "torch_index_url": "https://download.pytorch.org/whl/cu130"})
    assert again.refuse is None and "sm_110" in again.torch.arch_list, again.refuse


@pytest.mark.parametrize(("boards", "advice"), [
    (("orin", "thor"), "reflash it with JetPack 7.2 (L4T R39.2)"),
    (("thor",), "reflash it with JetPack 6.2 (L4T R36.4)"),
])
def test_the_reflash_an_old_orin_is_told_is_read_from_the_release_table(monkeypatch, boards, advice):
    """One rule, read from JETPACK_RELEASES' boards: with JetPack 7.2 listing the Orin the advice is 7.2; were 7.2
    Thor's alone, it would be 6.2 (that case is the control: the code before issue 37 said 6.2 always). No
    second copy of "the Orin's newest" anywhere else."""
    from dataclasses import replace
    from fleet.knowledge import platforms
    table = tuple(replace(r, boards=boards) if r.jetpack == "7.2" else r for r in platforms.JETPACK_RELEASES)
    monkeypatch.setattr(platforms, "JETPACK_RELEASES", table)
    d = decide(matrix.varied("orin-jp6", {"jetson": {**JP5, "model": ORIN_MODEL}, "python": "3.8.10",
                                          "os_version": "20.04"}), {})
    assert advice in d.refuse, d.refuse
