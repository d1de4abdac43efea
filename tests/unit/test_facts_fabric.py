"""Multi-GPU facts (issue 28): `nvidia-smi topo -m`, the Fabric block of `nvidia-smi -q`, NVSwitch, the fabric
manager's service and packages. 8-GPU outputs are synthetic in the real layouts (tests/data/fabric); the one-GPU
ones are what the lab's stand-in prints in the same layout. The probe's own shell runs against a fake nvidia-smi."""

import os
import subprocess
from pathlib import Path

import pytest

from fleet.facts import fabric
from fleet.facts.sources import BY_NAME

DATA = Path(__file__).parents[1] / "data" / "fabric"

ONE_GPU_TOPO = ("\tGPU0\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\nGPU0\t X \t0-25\t0\t\tN/A\n\nLegend:\n\n"
                "  X    = Self\n  NV#  = Connection traversing a bonded set of # NVLinks\n")


def read(name: str) -> str:
    return (DATA / name).read_text()


def test_eight_nvswitch_gpus_every_pair_nv18():
    topo = fabric.parse_topology(read("topo-8-nv18.txt"))
    assert topo["gpus"] == 8
    assert len(topo["pairs"]) == 28                      # 8 choose 2, the NIC column left out
    assert set(map(str, topo["pairs"].values())) == {str({"kind": "nvlink", "links": 18})}


def test_gpu_off_the_fabric_pairs_fall_back_to_pcie():
    topo = fabric.parse_topology(read("topo-8-gpu3-off.txt"))
    off = {pair: link["kind"] for pair, link in topo["pairs"].items() if link["kind"] != "nvlink"}
    assert off == {"0-3": "NODE", "1-3": "NODE", "2-3": "NODE", "3-4": "SYS", "3-5": "SYS", "3-6": "SYS", "3-7": "SYS"}


def test_one_gpu_has_no_pairs():
    assert fabric.parse_topology(ONE_GPU_TOPO) == {"gpus": 1, "pairs": {}}


def test_topology_not_a_matrix_raises():
    with pytest.raises(ValueError, match="GPU0"):
        fabric.parse_topology("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.")


def test_fabric_states_per_gpu():
    done = fabric.parse_fabric_query(read("q-8-completed.txt"))
    assert [g["bus"] for g in done][:2] == ["00000000:18:00.0", "00000000:28:00.0"]
    assert [fabric.fabric_ready(g) for g in done] == [True] * 8
    failed = fabric.parse_fabric_query(read("q-8-gpu3-failed.txt"))
    assert [fabric.fabric_ready(g) for g in failed] == [True, True, True, False, True, True, True, True]
    assert failed[3]["status"] == "NVML_ERROR_NOT_READY"
    assert {fabric.fabric_ready(g) for g in fabric.parse_fabric_query(read("q-8-in-progress.txt"))} == {False}


def test_pcie_gpu_fabric_not_applicable():
    text = "GPU 00000000:00:07.0\n    Fabric\n        State                             : N/A\n"
    (one,) = fabric.parse_fabric_query(text)
    assert one["state"] is None and fabric.fabric_ready(one) is None


def section(topo: str, query: str, nvswitch="", container="", service="", packages="") -> str:
    return (f"@@topo\n{topo}@@query\n{query}@@nvswitch\n{nvswitch}@@container\n{container}@@service\n{service}"
            f"@@packages\n{packages}")


def test_section_bare_metal_with_fabric_manager_one_version_behind():
    parsed = fabric.parse_fabric(section(
        read("topo-8-nv18.txt"), read("q-8-in-progress.txt"),
        nvswitch="/dev/nvidia-nvswitch0\n/dev/nvidia-nvswitch1\nlspci 4\n", service="systemctl failed\n",
        packages="nvidia-fabricmanager-570 570.158.01-1 hi \nlibnvidia-nscq-570 570.158.01-1 ii \n"
                 "nvidia-fabricmanager-550 550.1-1 rc \n"))
    assert parsed["gpu_count"] == 8 and parsed["nvswitch"] and not parsed["container"]
    assert parsed["service"] == "failed" and parsed["process"] is False
    assert parsed["packages"] == {"nvidia-fabricmanager-570": "570.158.01-1", "libnvidia-nscq-570": "570.158.01-1"}
    assert parsed["held"] == ["nvidia-fabricmanager-570"]
    assert fabric.fabric_manager_version(parsed["packages"]) == "570.158.01"


def test_section_container_no_nvswitch_devices():
    parsed = fabric.parse_fabric(section(read("topo-8-nv18.txt"), read("q-8-in-progress.txt"), container="dockerenv\n"))
    assert parsed["container"] and not parsed["nvswitch"] and parsed["service"] is None
    assert fabric.fabric_manager_version(parsed["packages"]) is None


def test_section_without_nvidia_smi_and_broken_topology():
    parsed = fabric.parse_fabric("@@nvswitch\n@@container\n@@service\nsystemctl inactive\n@@packages\n")
    assert parsed["gpu_count"] == 0 and parsed["service"] == "inactive"
    broken = fabric.parse_fabric(section("No devices were found\n", ""))
    assert broken["topology_error"] and broken["gpu_count"] == 0
    with pytest.raises(ValueError):
        fabric.parse_fabric("garbage")


def test_probe_shell_reads_a_fake_nvidia_smi(tmp_path):
    """The section's own shell, run by bash, against an nvidia-smi that prints the 8-GPU outputs: the grep keeps
    each GPU's Fabric block of the full `-q` layout."""
    smi = tmp_path / "nvidia-smi"
    # a driver without the fabric query fields (they are refused, as the real nvidia-smi refuses an unknown
    # field): the section reads `-q`
    smi.write_text(f"#!/bin/sh\nif [ \"$1\" = topo ]; then cat {DATA / 'topo-8-gpu3-off.txt'}; "
                   f"elif [ \"$1\" = -q ]; then cat {DATA / 'q-8-gpu3-failed.txt'}; "
                   "else echo 'Field \"fabric.state\" is not a valid field to query.'; exit 2; fi\n")
    smi.chmod(0o755)
    env = {**os.environ, "PATH": f"{tmp_path}:{os.environ['PATH']}"}
    out = subprocess.run(["bash", "-c", BY_NAME["fabric"].command({})], capture_output=True, text=True, env=env,
                         check=True).stdout
    parsed = BY_NAME["fabric"].parser(out)
    assert parsed["gpu_count"] == 8
    assert [fabric.fabric_ready(g) for g in parsed["fabric"]].count(False) == 1
    assert parsed["pairs"]["3-4"] == {"kind": "SYS", "cell": "SYS"}


def test_a_container_by_the_identity_markers_never_manages_the_fabric():
    from fleet.facts.record import fabric_facts

    parsed = fabric.parse_fabric(section(read("topo-8-nv18.txt"), read("q-8-completed.txt"),
                                      nvswitch="/dev/nvidia-nvswitch0\n"))
    assert fabric_facts(parsed, "570.133.20")["manages_fabric"] is True
    seen = fabric_facts(parsed, "570.133.20", container=True)
    assert seen["container"] is True and seen["manages_fabric"] is False


REAL = Path(__file__).resolve().parents[1] / "data" / "captured" / "h100-device" / "nvidia-smi"


def test_the_real_single_h100_outputs():
    """The lent H100's own `topo -m` (its header wrapped in ANSI underline escapes, even into a pipe) and `-q`
    (Fabric all N/A: no NVSwitch), as the probe's fabric section carries them."""
    import re as _re
    topo = (REAL / "topo-m.txt").read_text().replace("rc=0\n", "")
    assert "\x1b[4m" in topo                                   # the capture is as nvidia-smi wrote it
    assert fabric.parse_topology(topo) == {"gpus": 1, "pairs": {}}
    wanted = _re.compile(r"^GPU [0-9A-F]|^ +Fabric$|^ +(State|Status|CliqueId|Clique ID|ClusterUUID|Cluster UUID) +:")
    query = "\n".join(line for line in (REAL / "q.txt").read_text().splitlines() if wanted.search(line))
    assert fabric.parse_fabric_query(query) == [{"bus": "00000000:00:06.0", "state": None, "status": None,
                                             "clique": None}]
    section = f"@@topo\n{topo}\n@@query\n{query}\n@@nvswitch\n@@container\ndockerenv\n@@service\n@@packages\n"
    facts = fabric.parse_fabric(section)
    assert (facts["gpu_count"], facts["pairs"], facts["topology_error"]) == (1, {}, None)
    assert (facts["nvswitch"], facts["container"], facts["service"], facts["packages"]) == (False, True, None, {})


def _fabric_section_with(tmp_path, smi: str) -> str:
    """The probe's fabric section run by a real bash, with `smi` as nvidia-smi (a stand-in script on PATH)."""
    import os
    import shutil
    import subprocess

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "nvidia-smi").write_text("#!/bin/bash\n" + smi)
    (bin_dir / "nvidia-smi").chmod(0o755)
    env = dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}")
    out = subprocess.run([shutil.which("bash"), "-c", fabric.FABRIC], capture_output=True, text=True, env=env,
                         timeout=60)
    return out.stdout


TOPO_2 = "\tGPU0\tGPU1\tCPU Affinity\nGPU0\t X \tNV18\t0-51\nGPU1\tNV18\t X \t0-51\n"


def test_a_driver_that_knows_the_fabric_fields_is_asked_them_alone(tmp_path):
    """Driver 580 answers `--query-gpu=...fabric.state...` (0.02 s on the lent H100, where `-q` takes 0.12 s)."""
    smi = (f"case \"$*\" in 'topo -m') printf '{TOPO_2}';;\n"
           "*fabric.state*) echo '00000000:18:00.0, Completed, Success, 32766'; "
           "echo '00000000:28:00.0, In Progress, N/A, N/A';;\n"
           "-q) echo 'asked -q'; exit 3;;\nesac\n")
    out = _fabric_section_with(tmp_path, smi)
    assert "asked -q" not in out
    parsed = fabric.parse_fabric(out)
    assert parsed["gpu_count"] == 2 and [fabric.fabric_ready(g) for g in parsed["fabric"]] == [True, False]
    assert parsed["fabric"][0] == {"bus": "00000000:18:00.0", "state": "Completed", "status": "Success",
                                   "clique": "32766"}


def test_a_driver_without_the_fabric_fields_is_read_from_q(tmp_path):
    """An older driver refuses the fields as the real nvidia-smi does; `-q`'s Fabric blocks give the same facts."""
    blocks = ("GPU 00000000:18:00.0\n    Fabric\n        State                             : Completed\n"
              "        Status                            : Success\n        CliqueId                          : 32766\n"
              "GPU 00000000:28:00.0\n    Fabric\n        State                             : In Progress\n"
              "        Status                            : N/A\n")
    smi = (f"case \"$*\" in 'topo -m') printf '{TOPO_2}';;\n"
           "*fabric.state*) echo 'Field \"fabric.state\" is not a valid field to query.'; exit 2;;\n"
           f"-q) printf '%s' '{blocks}';;\nesac\n")
    out = _fabric_section_with(tmp_path, smi)
    parsed = fabric.parse_fabric(out)
    assert "not a valid field" not in out
    assert [fabric.fabric_ready(g) for g in parsed["fabric"]] == [True, False]
    assert parsed["fabric"][0]["clique"] == "32766"


OLD_FABRIC = (DATA / "e611fe2-fabric.sh").read_text()   # e611fe2's section: topo, query and lspci one after another


def fakes(tmp_path, query_ok: bool, marks: bool) -> dict:
    """nvidia-smi and lspci stand-ins (the 8-GPU outputs, the query's without a trailing newline); with `marks`, each
    waits (up to 10 s) until the other two have started and writes how many it saw started (NAME.saw): only started
    at once can all three see three."""
    def wait(name: str) -> str:
        return (f"touch {tmp_path}/{name}.started; for i in $(seq 200); do n=$(ls {tmp_path} | grep -c started); "
                f"[ $n -ge 3 ] && break; sleep 0.05; done; echo $n > {tmp_path}/{name}.saw\n") if marks else ""
    smi = tmp_path / "nvidia-smi"
    smi.write_text("#!/bin/bash\n" + wait("${1%%=*}") +
                   f"if [ \"$1\" = topo ]; then cat {DATA / 'topo-8-gpu3-off.txt'}; "
                   f"elif [ \"$1\" = -q ]; then cat {DATA / 'q-8-gpu3-failed.txt'}; "
                   + ("else printf '00000000:18:00.0, Completed, Success, 7'; fi\n" if query_ok else
                      "else echo 'Field \"fabric.state\" is not a valid field to query.'; exit 2; fi\n"))
    lspci = tmp_path / "lspci"
    lspci.write_text("#!/bin/bash\n" + wait("lspci") +
                     "echo '18:00.0 Bridge: NVIDIA Corporation NVSwitch'; echo '19:00.0 Bridge: NVIDIA NVSwitch'\n")
    for tool in (smi, lspci):
        tool.chmod(0o755)
    return {**os.environ, "PATH": f"{tmp_path}:{os.environ['PATH']}"}


@pytest.mark.parametrize("query_ok", [True, False])
def test_topo_query_and_lspci_run_at_once_printing_what_they_printed_one_after_another(tmp_path, query_ok):
    """The same bytes as e611fe2's section (a query answered, a query refused: `-q` read; no nvidia-smi), in the same
    order; and the three tools run at once (each sees the other two started)."""
    def run(text, env):
        return subprocess.run(["bash", "-c", text], capture_output=True, text=True, env=env, timeout=60).stdout

    env = fakes(tmp_path, query_ok, marks=False)
    new = run(BY_NAME["fabric"].command({}), env)
    assert new == run(OLD_FABRIC, env) and "lspci 2\n" in new and "@@query\n" in new
    bare = {**env, "PATH": "/usr/bin:/bin"}
    assert run(BY_NAME["fabric"].command({}), bare) == run(OLD_FABRIC, bare)
    fakes(tmp_path, query_ok, marks=True)
    assert run(BY_NAME["fabric"].command({}), env) == new
    saw = {name: int((tmp_path / f"{name}.saw").read_text()) for name in ("topo", "--query-gpu", "lspci")}
    assert min(saw.values()) >= 3, saw      # (a refused query's `-q` is a fourth, after it)
