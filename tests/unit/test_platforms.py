"""The platform table (fleet/knowledge/platforms.py): every row detected from its signs and decided through its
data, the one forward-compatibility rule, and no platform name in the package outside the table."""

import copy
import json
import re
from pathlib import Path

import pytest

import fleet
from fleet.decide import decide
from fleet.knowledge import platforms
from fleet.decide.gpu import Gpu, compat_harm, forward_compat_refusal
from fleet.decide.jetson import jetpack_of, jetson_gpu
from fleet.facts import gpu as gpu_facts

RECORDS = Path(__file__).resolve().parents[1] / "data" / "records"
PACKAGE = Path(fleet.__file__).resolve().parent
ROLES = PACKAGE.parent / "roles"          # the built-in roles (role.yaml, templates), shipped with the package
SHIPPED = (PACKAGE, ROLES)

# The signs facts see on one host of each row: (arch, kernel, GPU names, tegra release file, driver, L4T).
# A new row needs its line here; test_every_row_has_signs says so.
SIGNS = {
    "jetson-orin": ("aarch64", "5.15.148-tegra", [], True, True, "36.4"),
    "jetson-thor": ("aarch64", "6.8.12-tegra", ["NVIDIA Thor"], True, True, "38.2"),
    "dgx-spark": ("aarch64", "6.11.0-1016-nvidia", ["NVIDIA GB10"], False, True, None),
    "sbsa-dgpu": ("aarch64", "6.8.0-1013-nvidia-64k", ["NVIDIA GH200 480GB"], False, True, None),
    "x86_64-dgpu": ("x86_64", "6.8.0", ["NVIDIA H100 80GB HBM3"], False, True, None),
    "cpu-only": ("x86_64", "6.1.0", [], False, False, None),
}


def test_every_row_has_signs():
    assert set(SIGNS) == set(platforms.NAMES)


@pytest.mark.parametrize("name", platforms.NAMES)
def test_each_row_is_detected_from_its_signs(name):
    assert gpu_facts.detect_platform(*SIGNS[name]) == name


def test_jetpack_5_orin_is_detected_as_the_oldest_jetson_row():
    assert gpu_facts.detect_platform("aarch64", "5.10.120-tegra", [], True, True, "35.4") == "jetson-orin"


# ------------------------------------------------------------------------- deciding from the table's rows

def _record(base: str, **changes) -> dict:
    record = json.loads((RECORDS / f"{base}.json").read_text())
    for path, value in changes.items():
        *parents, key = path.split(".")
        node = record
        for parent in parents:
            node = node[parent]
        node[key] = value
    return record


def gh200_record() -> dict:
    """The H100 pod on driver 570, as a GH200 / Grace-Hopper server: aarch64, Ubuntu 24.04, the platform
    detected by the facts code from the signs such a host shows."""
    record = _record("h100-pod-570", **{"system.arch": "aarch64", "system.os_version": "24.04"})
    record["gpus"] = [{**copy.deepcopy(record["gpus"][0]), "name": "NVIDIA GH200 480GB", "memory_mb": 97871}]
    record["platform"] = gpu_facts.detect_platform("aarch64", "6.8.0-1013-nvidia-64k", ["NVIDIA GH200 480GB"],
                                                   False, True)
    return record


def test_a_gh200_is_an_sbsa_host_decided_through_the_table():
    record = gh200_record()
    assert record["platform"] == "sbsa-dgpu"
    d = decide(record)
    assert d.refuse is None
    assert d.cuda.source == "nvidia-apt" and d.cuda.repo.endswith("/ubuntu2404/sbsa/")
    assert d.cuda.lib_dir == "/usr/local/cuda-13.0/targets/sbsa-linux/lib"
    # driver 570 < 580: a data-center GPU, so forward compatibility puts cuda-compat first
    assert d.compat.use and "GH200 480GB is a data-center GPU on R570" in d.compat.reason
    assert d.torch.source == "official" and d.torch.index_url.endswith("/cu130") and d.torch.supported
    platform = d.to_json()["platform"]
    assert platform["name"] == "sbsa-dgpu" and platform["gpu"] is True
    # verify takes the first row whose match is in the GPU's name: GH200's own, not H200's ("H200" in "GH200")
    assert next(r for r in platform["perf"] if r["match"] in "NVIDIA GH200 480GB")["match"] == "GH200"


def jetpack5_orin_record() -> dict:
    tegra = gpu_facts.parse_tegra_release("# R35 (release), REVISION: 4.1, GCID: 33958178, BOARD: t186ref, "
                                          "EABI: aarch64, DATE: Tue Aug  1 19:57:35 UTC 2023\n")
    record = _record("orin-jp6", **{"system.kernel": "5.10.120-tegra", "system.os_version": "20.04"})
    record["jetson"] = {**record["jetson"], **tegra}
    record["platform"] = gpu_facts.detect_platform("aarch64", "5.10.120-tegra", [], True, True, tegra["l4t"])
    return record


def test_an_orin_on_jetpack_5_is_refused_in_one_sentence_with_a_fix():
    record = jetpack5_orin_record()
    assert record["jetson"]["l4t"] == "35.4" and record["platform"] == "jetson-orin"
    refusal = decide(record).refuse
    assert refusal == ("this Jetson runs L4T R35.4, which ships CUDA 11.4 and Python 3.8 on Ubuntu 20.04, older "
                       "than fleet plans for (the Jetson Orin on JetPack 6.0, 6.1, 6.2, 7.2; its torch would be "
                       "jp5/cu114's builds (torch 2.2.0 at newest, for Python 3.8), its apt repository serves only "
                       "CUDA 11.4, and CUDA 11.8 and 12.2 for it come only from NVIDIA's cuda-tegra local installers, "
                       "which fleet does not install): reflash it with JetPack 7.2 (L4T R39.2), the newest release "
                       "for the Jetson Orin, using NVIDIA SDK Manager, then run `fleet facts` and fleet again")
    assert ". " not in refusal and not refusal.endswith(".")          # one sentence


@pytest.mark.parametrize("release, cuda, source", [
    ("# R39 (release), REVISION: 2.0, GCID: 0, BOARD: generic, EABI: aarch64, DATE: Thu Jan  1 2026\n", "13.2",
     "official"),   # the advice: JetPack 7.2, the Orin's newest
    ("# R36 (release), REVISION: 4.3, GCID: 38968081, BOARD: generic, EABI: aarch64, DATE: Wed Jan  8 2025\n",
     "12.6", "jetson"),   # JetPack 6.2 is planned too
])
def test_the_fix_works_the_same_orin_reflashed_is_planned(release, cuda, source):
    record = jetpack5_orin_record()
    record["jetson"] = {**record["jetson"], **gpu_facts.parse_tegra_release(release)}
    d = decide(record)
    assert d.refuse is None and d.cuda.wanted == cuda and d.torch.source == source, d.refuse


@pytest.mark.parametrize("record, name, gpu_expected, first_perf", [
    ("thor", "jetson-thor", True, "Thor"),
    ("spark", "dgx-spark", True, "GB10"),
    ("h100-pod-570", "x86_64-dgpu", True, "H100 PCIe"),
    ("cpu-only", "cpu-only", False, None),
])
def test_decisions_carry_the_row_roles_read(record, name, gpu_expected, first_perf):
    platform = decide(json.loads((RECORDS / f"{record}.json").read_text())).to_json()["platform"]
    assert platform["name"] == name and platform["gpu"] is gpu_expected
    assert (platform["perf"][0]["match"] if platform["perf"] else None) == first_perf


@pytest.mark.parametrize("row", platforms.PLATFORMS, ids=platforms.NAMES)
def test_each_perf_row_is_the_first_match_for_its_own_gpu(row):
    for perf in row.perf:
        name = f"NVIDIA {perf.match}"
        assert next(p for p in row.perf if p.match in name) == perf


# ------------------------------------------------------------------------- one forward-compatibility rule

def test_harm_of_a_compat_line_follows_the_forward_compatibility_rules():
    # NVIDIA forward compatibility guide: a compat libcuda older than the kernel driver -> 803; GeForce -> 804
    assert compat_harm("x86_64-dgpu", [], "580.159.04", "580.95.05") == \
        "error 803 under driver 580.159.04 (cuda-compat 580.95.05 is not newer)"
    assert compat_harm("x86_64-dgpu", ["NVIDIA GeForce RTX 4090"], "570.1", "580.95.05") == \
        "error 804: forward compatibility is not supported on this GPU"
    assert "803" not in compat_harm("x86_64-dgpu", [], "570.133.20", "580.95.05")
    assert compat_harm("jetson-thor", [], "580.00", None).startswith("error 803: cuda-compat breaks CUDA on Jetson Thor")
    assert compat_harm("dgx-spark", [], "580.95.05", "580.95.05").startswith("error 804")
    assert compat_harm("x86_64-dgpu", ["NVIDIA H100 80GB HBM3"], "570.133.20", "580.95.05") == \
        "compat 580.95.05 over driver 570.133.20: fleet alone decides where it goes on the path"


@pytest.mark.parametrize("kind", platforms.KINDS, ids=[k.name for k in platforms.KINDS])
def test_the_harm_and_the_compat_decision_read_the_same_row(kind):
    """A startup line's harm names an error from the GPU alone exactly where decide_compat refuses compat,
    and the same error."""
    refused = forward_compat_refusal(Gpu("", None, "unknown", kind.name))
    assert (kind.harm is None) == (refused is None)
    if refused:
        assert kind.harm.startswith(f"error {kind.compat_error}:") and f"error {kind.compat_error}" in refused


def test_the_facts_layer_holds_no_gpu_brand_or_driver_verdict():
    text = (PACKAGE / "facts" / "shells.py").read_text()
    assert "GeForce" not in text and "804" not in text and "platform" not in text


# ------------------------------------------------------------------------- no platform name outside the table

# A platform-looking word: jetson-*, dgx-*, igx-*, grace-*, tegra-*, *-dgpu, *-igpu, cpu-only. Not inside a
# hostname or path (pypi.jetson-ai-lab.io, .../jetson-cu130): those are preceded by '.' or '/'.
PLATFORM_WORD = re.compile(r"(?<![\w./-])((?:jetson|dgx|igx|drive|grace|tegra)-[a-z0-9]+(?:-[a-z0-9]+)*"
                           r"|[a-z0-9_]+-(?:dgpu|igpu)|cpu-only)(?![\w-])")
# Words of that shape that are not platforms, each with why.
NOT_PLATFORMS = {
    "jetson-ai-lab": "the Jetson AI Lab index's host name (is_jetson_index)",
    "jetson-containers": "dusty-nv/jetson-containers, a repository cited as a source (JETPACK_RELEASES)",
}
TEXT_SUFFIXES = {".py", ".yaml", ".yml", ".j2", ".sh", ".txt", ".json", ".toml", ".cfg", ".md"}


def platform_words(text: str) -> set[str]:
    return set(PLATFORM_WORD.findall(text))


def unknown_platform_words(root: Path) -> dict[str, set[str]]:
    """{file: words} for every platform-looking word in the package's text that names no row."""
    known = set(platforms.NAMES) | {p.cuda_shipped_by for p in platforms.PLATFORMS if p.cuda_shipped_by} \
        | set(NOT_PLATFORMS)
    found = {}
    for path in sorted(root.rglob("*")):
        if not path.is_file() or "__pycache__" in path.parts or path.suffix not in TEXT_SUFFIXES:
            continue
        words = platform_words(path.read_text(errors="replace")) - known
        if words:
            found[str(path.relative_to(root))] = words
    return found


def test_the_scan_reads_python_yaml_and_templates():
    scanned = {p.suffix for root in SHIPPED for p in root.rglob("*") if p.is_file() and p.suffix in TEXT_SUFFIXES}
    assert {".py", ".yaml", ".j2"} <= scanned


def test_the_scan_sees_every_row_and_a_new_name():
    table = (PACKAGE / "knowledge" / "platforms.py").read_text()
    assert set(platforms.NAMES) <= platform_words(table)
    assert platform_words('if facts["platform"] == "jetson-xavier": ...\n{% if p == "igx-orin" %}') == \
        {"jetson-xavier", "igx-orin"}
    assert platform_words("https://pypi.jetson-ai-lab.io/jp6/cu126 .../jetson-cu130") == set()


def test_every_platform_name_in_the_package_is_a_row_of_the_table():
    assert {**unknown_platform_words(PACKAGE), **unknown_platform_words(ROLES)} == {}, (
        "platform names outside fleet/knowledge/platforms.py's table: add a row (and its tests) for each, "
        "or list a word that is no platform in NOT_PLATFORMS with why")


def test_only_the_table_names_platforms():
    """Elsewhere the package reads rows; a platform's name in another module is a second copy of the table."""
    assert _rows_named_outside_the_table() == {}


def _rows_named_outside_the_table() -> dict[str, set[str]]:
    out = {}
    for path in sorted(p for root in SHIPPED for p in root.rglob("*")):
        if not path.is_file() or "__pycache__" in path.parts or path.suffix not in TEXT_SUFFIXES:
            continue
        if path == PACKAGE / "knowledge" / "platforms.py":
            continue
        words = platform_words(path.read_text(errors="replace")) & set(platforms.NAMES)
        if words:
            out[str(path.relative_to(PACKAGE.parent))] = words
    return out


@pytest.mark.parametrize("row", platforms.jetsons(), ids=[p.name for p in platforms.jetsons()])
def test_each_jetson_row_holds_what_decide_jetson_reads(row):
    assert row.generation and row.l4t and row.jetpack and row.gpu_kind and row.driver_form == "branch"
    assert row.jetson_index.startswith("https://") and row.integrated_gpu
    jp = jetpack_of(f"{row.l4t[0]}.0", None, "")
    assert jp.generation == row.generation and jp.index_url == row.jetson_index and jp.major == str(row.jetpack[0])
    assert jetson_gpu(row.generation).kind == row.gpu_kind
