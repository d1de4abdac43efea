"""Issue 24, decisions round two, over every situation of the generated matrix (scripts/decisions_matrix.py,
docs/DECISIONS.md) and table-driven cases: one fix per answer, and every offered fix accepted when fed back."""
from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import pytest

from fleet.decide import DEFAULTS, decide

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("decisions_matrix", ROOT / "scripts" / "decisions_matrix.py")
matrix = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(matrix)

SITUATIONS = matrix.situations()
IDS = [label for label, _, _ in SITUATIONS]
# "set NAME=VALUE" where NAME is a variable: what a text proposes
_OFFER = re.compile(r"\b(" + "|".join(sorted(DEFAULTS, key=len, reverse=True)) + r")=([^\s,;()]+)")
# a fix outside fleet's variables: reflash, install a driver, reboot, reload modules, re-gather the record
OUTSIDE_FIX = re.compile(r"reflash|install|reboot|reload|run `fleet facts` again")


def texts(d) -> list[str]:
    """Every text of a decision a person reads: the refusal and each reason, and the providers' reasons."""
    out = [d.refuse or ""] + list(d.reasons.values())
    out += [p.reason for p in d.missing_providers.values()]
    return out


def offered(d) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for text in texts(d):
        for name, value in _OFFER.findall(text):
            found.setdefault(name, set()).add(value.rstrip("."))
    return found


@pytest.mark.parametrize(("label", "facts", "variables"), SITUATIONS, ids=IDS)
def test_every_text_of_an_answer_proposes_the_same_fix(label, facts, variables):
    d = decide(facts, variables)
    assert {name: values for name, values in offered(d).items() if len(values) > 1} == {}, texts(d)


@pytest.mark.parametrize(("label", "facts", "variables"), SITUATIONS, ids=IDS)
def test_every_offered_fix_fed_back_is_not_refused(label, facts, variables):
    d = decide(facts, variables)
    if not d.refuse:
        return
    fix = {name: sorted(values)[0] for name, values in offered(d).items()}
    if not fix:   # a fix outside fleet's variables (reflash, install a driver): nothing to feed back
        assert OUTSIDE_FIX.search(d.refuse), d.refuse
        return
    again = decide(facts, {**variables, **fix})
    assert again.refuse is None, f"{d.refuse}\n  fed back {fix}:\n  {again.refuse}"


@pytest.mark.parametrize(("label", "facts", "variables"), SITUATIONS, ids=IDS)
def test_no_text_cites_a_repository_test_path_and_orin_never_names_thor(label, facts, variables):
    d = decide(facts, variables)
    blob = json.dumps(d.to_json())
    assert "tests/" not in blob
    if facts.get("platform") == "jetson-orin":
        assert "Thor" not in " ".join(texts(d))


GH200 = {"platform": "sbsa-dgpu", "gpus": [("NVIDIA GH200 480GB", "9.0")], "driver": "570.133.20"}
RTX5090 = {"gpus": [("NVIDIA GeForce RTX 5090", "12.0")], "driver": "570.133.20"}
B200 = {"gpus": [("NVIDIA B200", "10.0")]}
JP5 = {"jetson": {"l4t": "35.4", "l4t_full": "35.4.1", "jetpack": "5.1.2"}, "python": "3.8.10", "os_version": "20.04"}
GB200 = {"platform": "sbsa-dgpu", "gpus": [("NVIDIA GB200", "10.0")], "driver": "580.95.05"}
JP60 = {"jetson": {"l4t": "36.3", "l4t_full": "36.3.0", "jetpack": "6.0"}, "driver": "540.3.0"}


def wheel(torch: str, index: str, cuda: str) -> dict:
    return {"torch_version": torch, "torch_index_url": f"https://download.pytorch.org/whl/{index}",
            "cuda_version": cuda}


# (label, record, change to its facts, variables, refused?, phrases of the refusal or of the torch reason)
RULES = [
    # 2. aarch64 torch below 2.9: PyTorch's cu128/cu129 indexes served CUDA wheels for 2.7 and 2.8 (#160162)
    ("aarch64 torch 2.8.0 on cu128: planned", "spark", GH200, wheel("2.8.0", "cu128", "12.8"), False,
     ["torch 2.8.0 from https://download.pytorch.org/whl/cu128"]),
    ("aarch64 torch 2.8.0 on cu129: planned", "spark", GH200, wheel("2.8.0", "cu129", "12.9"), False,
     ["torch 2.8.0 from https://download.pytorch.org/whl/cu129"]),
    ("aarch64 torch 2.7.1 on cu128: planned", "spark", GB200, wheel("2.7.1", "cu128", "12.8"), False,
     ["torch 2.7.1 from https://download.pytorch.org/whl/cu128"]),
    ("aarch64 torch 2.7.1 on cu129: no such wheel, cu128 offered", "spark", GH200, wheel("2.7.1", "cu129", "12.9"),
     True, ["only on PyTorch's cu128 index", "set torch_index_url=https://download.pytorch.org/whl/cu128"]),
    ("aarch64 torch 2.8.0 on cu126: cu128 offered", "spark", GH200, wheel("2.8.0", "cu126", "12.6"), True,
     ["cu128 and cu129 indexes", "set torch_index_url=https://download.pytorch.org/whl/cu128"]),
    ("aarch64 torch 2.6.0: no aarch64 CUDA wheel anywhere, 2.9.0 offered", "spark", GH200,
     wheel("2.6.0", "cu126", "12.6"), True, ["no CUDA wheels for aarch64", "set torch_version=2.9.0"]),
    # 3. no wheel built with CUDA below 12.8 runs on sm_100 or sm_120, whatever the torch version (#150733)
    ("RTX 5090 with torch 2.6.0 cu126 (no table row): refused, cu128 and 2.7.0 offered", "geforce-550", RTX5090,
     wheel("2.6.0", "cu126", "12.6"), True,
     ["built with CUDA 12.6", "pytorch/pytorch#150733",
      "set torch_index_url=https://download.pytorch.org/whl/cu128 and torch_version=2.7.0"]),
    ("B200 with torch 2.5.1 cu124: refused", "h100-pod-570", B200, wheel("2.5.1", "cu124", "12.6"), True,
     ["built with CUDA 12.4", "B200, capability 10.0", "torch_version=2.7.0"]),
    ("B200 with torch 2.7.1 cu126: refused, cu128 offered", "h100-pod-570", B200, wheel("2.7.1", "cu126", "12.6"),
     True, ["built with CUDA 12.6", "set torch_index_url=https://download.pytorch.org/whl/cu128"]),
    ("B200 with torch 2.5.1 cu121 under CUDA 13: refused, the whole 12.x stack offered", "h100-pod-570",
     {**B200, "driver": "580.95.05"}, wheel("2.5.1", "cu121", "13.0"), True,
     ["built for CUDA 12.1", "and torch_index_url=https://download.pytorch.org/whl/cu128 and torch_version=2.7.0"]),
    ("RTX 5090 with torch 2.7.1 cu128 (no table row): planned, verify checks", "geforce-550", RTX5090,
     wheel("2.7.1", "cu128", "12.8"), False, ["verify checks"]),
    ("H100 with torch 2.6.0 cu126: the variant rule leaves Hopper alone", "h100-pod-570", {},
     wheel("2.6.0", "cu126", "12.6"), False, ["verify checks"]),
    ("H100 + B200 with torch 2.9.0 cu126 (table row): refused, one index for both", "h100-pod-570",
     {"gpus": [("NVIDIA H100 80GB HBM3", "9.0"), ("NVIDIA B200", "10.0")]}, wheel("2.9.0", "cu126", "12.6"), True,
     ["none runs on B200", "set torch_index_url=https://download.pytorch.org/whl/cu130 with cuda_version=13.0"]),
    # 1. a mixed host: the torch reason offers the refusal's own fix, not a driver CUDA 13 cannot use on a V100
    ("H100 + V100 on 550 wanting 13.0: one offer in the refusal and the torch reason", "h100-pod-570",
     {"gpus": [("NVIDIA H100 80GB HBM3", "9.0"), ("Tesla V100-SXM2-32GB", "7.0")], "driver": "550.163.01"}, {},
     True, ["set cuda_version=12.9 and torch_index_url=https://download.pytorch.org/whl/cu126"]),   # #175253
    # 4. the host's Python against the torch release (PyTorch RELEASE.md)
    ("Python 3.9 with torch 2.11.0: refused, install Python 3.10", "h100-pod-570", {"python": "3.9.18"}, {}, True,
     ["torch 2.11.0 needs Python >= 3.10", "python3 is 3.9", "install Python 3.10 or newer"]),
    ("Python 3.9 with torch 2.8.0: planned", "h100-pod-570", {"python": "3.9.18"},
     wheel("2.8.0", "cu128", "12.8"), False, ["torch 2.8.0"]),
    ("Python 3.8 with torch 2.8.0: refused", "h100-pod-570", {"python": "3.8.10"},
     wheel("2.8.0", "cu128", "12.8"), True, ["needs Python >= 3.9"]),
    ("Python 3.8 without a GPU, torch 2.11.0: refused too", "cpu-only", {"python": "3.8.10"}, {}, True,
     ["needs Python >= 3.10"]),
    ("Python 3.10 with torch 2.11.0: planned", "h100-pod-570", {"python": "3.10.12"}, {}, False, ["torch 2.11.0"]),
    # 5. JetPack 5 (L4T R35: CUDA 11.4, Python 3.8, Ubuntu 20.04) refused with the one fix that works: a reflash to
    # the newest JetPack for the Orin, 7.2 (JETPACK_RELEASES boards; issue 37)
    ("JetPack 5.1.2 by its L4T: refused, reflash with 7.2", "orin-jp6", JP5, {}, True,
     ["JetPack 5.1.2 (L4T R35.4)", "CUDA 11.4", "Python 3.8", "Ubuntu 20.04", "reflash it with JetPack 7.2"]),
    ("JetPack 5.1.2 named without its L4T: refused too (it was planned as JetPack 6)", "orin-jp6",
     {**JP5, "jetson": {"l4t": None, "l4t_full": None, "jetpack": "5.1.2"}}, {}, True,
     ["JetPack 5.1.2", "CUDA 11.4", "reflash it with JetPack 7.2"]),
    ("JetPack 5.1.2 following the old advice cuda_version=12.6: the same refusal", "orin-jp6", JP5,
     {"cuda_version": "12.6"}, True, ["reflash it with JetPack 7.2"]),
    ("JetPack 5.1.2 asked its own cuda_version=11.4: the reflash refusal, not 'unknown'", "orin-jp6", JP5,
     {"cuda_version": "11.4"}, True,
     ["reflash it with JetPack 7.2", "jp5/cu114", "torch 2.2.0 at newest, for Python 3.8", "serves only CUDA 11.4"]),
    ("cuda_version=11.4 on an H100: refused with a release fleet plans", "h100-pod-570", {},
     {"cuda_version": "11.4"}, True, ["CUDA 11.4 is the CUDA JetPack 5.x ships", "set cuda_version=13.0"]),
    ("cuda_version=11.4 beside a cu128 index: the index's CUDA offered", "h100-pod-570", {},
     wheel("2.8.0", "cu128", "11.4"), True, ["set cuda_version=12.8"]),
    # JetPack 6.0 (L4T R36.3) ships CUDA 12.2: its own CUDA, and torch from the index built for it (jp6/cu122)
    ("JetPack 6.0 by default: CUDA 12.2 from its own repository, torch 2.4.0 from jp6/cu122", "orin-jp6", JP60, {},
     False, ["torch 2.4.0 from https://pypi.jetson-ai-lab.io/jp6/cu122"]),
    ("JetPack 6.0 named only by L4T R36.3: the same", "orin-jp6",
     {**JP60, "jetson": {"l4t": "36.3", "l4t_full": "36.3.0", "jetpack": None}}, {}, False,
     ["torch 2.4.0 from https://pypi.jetson-ai-lab.io/jp6/cu122"]),
    ("JetPack 6.0 asking CUDA 12.6: its repository has none, its own 12.2 offered", "orin-jp6", JP60,
     {"cuda_version": "12.6"}, True,
     ["serves no other CUDA", "cuda-tegra-repo-ubuntu2204-12-6-local", "set cuda_version=12.2"]),
    ("JetPack 6.0 asked torch 2.11.0: jp6/cu122 serves 2.4.0 at newest", "orin-jp6", JP60,
     {"torch_version": "2.11.0"}, True, ["serves torch 2.4.0 at newest", "set torch_version=2.4.0"]),
    ("JetPack 6.0 given the jp6/cu126 index: its own index offered, not cuda-compat", "orin-jp6", JP60,
     {"torch_index_url": "https://pypi.jetson-ai-lab.io/jp6/cu126"}, True,
     ["gives CUDA 12.2", "set torch_index_url=https://pypi.jetson-ai-lab.io/jp6/cu122"]),
    ("JetPack 6.0 given jp6/cu126 and torch 2.11.0: both in the one fix", "orin-jp6", JP60,
     {"torch_index_url": "https://pypi.jetson-ai-lab.io/jp6/cu126", "torch_version": "2.11.0"}, True,
     ["set torch_index_url=https://pypi.jetson-ai-lab.io/jp6/cu122 and torch_version=2.4.0"]),
    # JetPack 6.1/6.2 (L4T R36.4) ship CUDA 12.6: no CUDA 12.8 from their repository, and no cuda-compat for it
    ("JetPack 6.2 asking CUDA 12.8: refused, 12.6 offered (it was planned with cuda-compat)", "orin-jp6", {},
     {"cuda_version": "12.8"}, True,
     ["JetPack 6.2 ships CUDA 12.6", "cuda-tegra-repo-ubuntu2204-12-8-local", "set cuda_version=12.6"]),
    ("JetPack 6.2 asking CUDA 12.9: no cuda-tegra installer is known for it either", "orin-jp6", {},
     {"cuda_version": "12.9"}, True, ["CUDA 12.9 for Tegra comes from no repository fleet knows", "set cuda_version=12.6"]),
    ("JetPack 6.1 by default: CUDA 12.6, torch from jp6/cu126", "orin-jp6",
     {"jetson": {"l4t": "36.4", "l4t_full": "36.4.0", "jetpack": "6.1"}}, {}, False,
     ["torch 2.11.0 from https://pypi.jetson-ai-lab.io/jp6/cu126"]),
    ("Thor on JetPack 7.1: CUDA 13.0, planned", "thor", {"jetson": {"l4t": "38.4", "jetpack": "7.1"}}, {}, False,
     ["torch 2.11.0 from https://download.pytorch.org/whl/cu130"]),
]


@pytest.mark.parametrize(("label", "name", "change", "variables", "refused", "phrases"), RULES,
                         ids=[r[0] for r in RULES])
def test_rule(label, name, change, variables, refused, phrases):
    d = decide(matrix.varied(name, change), variables)
    assert bool(d.refuse) is refused, d.refuse or d.torch.reason
    proposes = "=" in d.torch.reason   # where the torch reason proposes a change, it is the refusal's own
    for text in ([d.refuse] + ([d.torch.reason] if proposes else []) if refused else [d.torch.reason]):
        for phrase in phrases:
            assert phrase in text, text
    fix = {n: sorted(values)[0] for n, values in offered(d).items()}
    if refused and not fix:   # a fix outside fleet's variables, and no other text offers one beside it
        assert re.search(r"reflash|install|reboot|reload", d.refuse), d.refuse
    if refused and fix:   # the offered fix, fed back, is accepted
        assert decide(matrix.varied(name, change), {**variables, **fix}).refuse is None


def test_a_cuda_no_jetpack_ships_and_no_driver_table_row_is_still_unknown():
    from fleet.decide import VariableError
    with pytest.raises(VariableError, match="not a CUDA release fleet knows"):
        decide(matrix.record("h100-pod-570"), {"cuda_version": "11.8"})


@pytest.mark.parametrize(("jetpack", "l4t", "cuda", "index"), [
    ("5.1.2", None, "11.4", "jp5/cu114"), (None, "35.4", "11.4", "jp5/cu114"), ("6.0", "36.3", "12.2", "jp6/cu122"),
    (None, "36.3", "12.2", "jp6/cu122"), ("6.1", "36.4", "12.6", "jp6/cu126"), (None, "36.4", "12.6", "jp6/cu126"),
    ("6.2", "36.4", "12.6", "jp6/cu126"), ("6.2.1", "36.4", "12.6", "jp6/cu126"), ("7.1", "38.4", "13.0", "sbsa/cu130"),
])
def test_each_jetpack_release_with_its_cuda_and_its_torch_index(jetpack, l4t, cuda, index):
    from fleet.decide.jetson import jetpack_of
    jp = jetpack_of(l4t, jetpack, "")
    assert (jp.cuda, jp.index_url) == (cuda, f"https://pypi.jetson-ai-lab.io/{index}")


@pytest.mark.parametrize(("label", "facts", "variables"),
                         [s for s in SITUATIONS if s[1].get("platform", "").startswith("jetson")],
                         ids=[s[0] for s in SITUATIONS if s[1].get("platform", "").startswith("jetson")])
def test_a_planned_jetson_runs_its_jetpacks_own_cuda_with_the_index_built_for_it(label, facts, variables):
    """A JetPack's apt repository serves only its own CUDA (fleet/knowledge/platforms.py JETPACK_RELEASES): every
    planned Jetson answer wants that CUDA, no cuda-compat, and a Jetson-index torch built for that CUDA."""
    from fleet.decide.host import read_host
    from fleet.decide.torch_wheel import index_cuda
    d = decide(facts, variables)
    if d.refuse:
        return
    own = read_host(facts).jetson.cuda
    assert d.cuda.wanted == own and not d.compat.use, (d.cuda.reason, d.compat.reason)
    if d.torch.source == "jetson":
        assert index_cuda(d.torch.index_url) == own, d.torch.reason
