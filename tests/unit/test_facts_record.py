"""Whole records: the real H100 capture, Thor and GB10 formats, garbage, and the probe run on this machine."""

import json
import os
import subprocess
from datetime import datetime, timezone
from pathlib import Path

import pytest

from fleet.engine import probe
from fleet.facts.record import assemble
from fleet.sections import Section, split_sections

CAPTURED = Path(__file__).parents[1] / "data" / "captured"
SOURCES = list(probe.bodies().keys())


def _local_shells() -> str:
    """The shells section run for real on this machine (the captures predate it)."""
    from fleet.facts import shells
    return subprocess.run(["bash", "-c", shells.command()], capture_output=True, text=True, timeout=600).stdout


def outputs(host: str, base: str | None = None) -> dict[str, str]:
    """Per-source fixture texts of `host`, falling back to `base` for sources it does not have."""
    found = {"shells": _local_shells()}
    # the table's header, as probes before health_xml carried nvidia-smi's versions asked it (record.smi_versions)
    for name in SOURCES + ["nvidia_smi_header"]:
        for where in (host, base):
            path = CAPTURED / str(where) / f"{name}.txt"
            if where and path.exists():
                found[name] = path.read_text()
                break
    return found


# Sources added after the real H100 was captured: a capture without them says so, and nothing else.
NEWER_THAN_CAPTURE = ("shells", "kernel_gpus", "verify_fingerprint", "loader", "paths", "fabric", "health", "health_xml",
                      "xid", "programs", "smi_version", "resources")


def beyond_capture(record: dict) -> list[str]:
    return [e for e in record["probe"]["errors"] if e.split(":")[0].removeprefix("facts.") not in NEWER_THAN_CAPTURE]


def as_sections(texts: dict[str, str]) -> dict[str, Section]:
    return {f"facts.{name}": Section(f"facts.{name}", 0, text) for name, text in texts.items()}


def test_real_h100_key_figures():
    record = probe.parse(as_sections(outputs("h100")), "h100", now=datetime(2026, 11, 21, tzinfo=timezone.utc))
    assert beyond_capture(record) == []
    assert record["gathered_at"] == "2026-11-21T00:00:00Z"
    assert record["platform"] == "x86_64-dgpu"
    assert record["driver"] == {"version": "580.159.04", "source": "proc", "cuda_max": "13.0", "smi_cuda_version": "13.0",
                                "nvml_error": None, "devices": []}
    assert record["gpus"][0]["compute_cap"] == "9.0" and record["gpus"][0]["memory_mb"] == 81559
    assert [(t["version"], t["path"]) for t in record["cuda"]["toolkits"]] == [("13.0", "/usr/local/cuda-13.0")]
    compat = record["cuda"]["compat"]
    assert (compat["version"], compat["in_use"]) == ("580.95.05", False)
    assert record["jetson"] is None
    assert record["system"]["os_id"] == "ubuntu" and record["system"]["disk_free_gb"] == 64.0
    assert record["torch"]["capability"] == "9.0"
    assert record["libraries"]["libcuda.so.1"] == "/usr/local/nvidia/lib64/libcuda.so.1"
    json.dumps(record)  # a record is plain JSON


def test_thor_record():
    record = assemble(outputs("thor", "h100"), SOURCES)
    assert record["platform"] == "jetson-thor"
    assert record["system"]["arch"] == "aarch64"
    assert record["gpus"][0]["compute_cap"] == "11.0"
    assert record["jetson"] == {"l4t": "38.2", "l4t_full": "38.2.0", "jetpack": "7.0",
                                "model": "NVIDIA Jetson AGX Thor Developer Kit"}
    # JetPack 7 ships CUDA 13 with its r580 driver: the desktop table (580.00 < 580.65.06) does not apply
    assert record["driver"]["version"] == "580.00" and record["driver"]["cuda_max"] == "13.0"


def test_an_orin_on_jetpack_72_is_recorded_as_an_orin_with_its_jetpacks_cuda():
    """L4T R39 (JetPack 7.2) runs Orin and Thor alike: /proc/device-tree/model names the board, and the record's
    newest CUDA is the one JetPack 7.2 ships (13.2), not Thor's 7.0 (fleet/knowledge/platforms.py JETPACK_RELEASES)."""
    texts = outputs("thor", "h100")
    texts["tegra"] = texts["tegra"].replace("# R38 (release), REVISION: 2.0", "# R39 (release), REVISION: 2.0")
    texts["dt_model"] = "NVIDIA Jetson AGX Orin Developer Kit\n"
    record = assemble(texts, SOURCES)
    assert (record["platform"], record["jetson"]["jetpack"]) == ("jetson-orin", "7.2")
    assert record["driver"]["cuda_max"] == "13.2"


def test_gb10_record():
    record = assemble(outputs("gb10", "h100"), SOURCES)
    assert record["platform"] == "dgx-spark"
    assert record["gpus"][0]["compute_cap"] == "12.1" and record["gpus"][0]["memory_mb"] is None
    assert record["driver"]["cuda_max"] == "13.0"
    assert record["jetson"] is None


def test_old_driver_record_notes_the_rejection():
    record = assemble(outputs("old-driver", "h100"), SOURCES)
    assert record["driver"] == {"version": "470.82.01", "source": "proc", "cuda_max": None, "smi_cuda_version": "13.0",
                                "nvml_error": None, "devices": []}
    assert [g["compute_cap"] for g in record["gpus"]] == [None, None]
    assert beyond_capture(record) == []
    assert "compute_cap" in record["probe"]["notes"][0]


GARBAGE = "\x00\x01<html><body>502 Bad Gateway</body></html>\nHF_TOKEN=hf_abcdefghijklmnopqrstuvwxyz0123\n"


@pytest.mark.parametrize("source", SOURCES)
def test_garbage_in_any_source_is_recorded_not_raised(source):
    texts = outputs("h100")
    texts[source] = GARBAGE
    record = assemble(texts, SOURCES)
    json.dumps(record)
    if source in ("tegra", "dt_model"):  # free text: any content is a value, not an error
        return
    assert any(error.startswith(f"facts.{source}:") for error in record["probe"]["errors"]), record["probe"]
    assert "502 Bad Gateway" in record["probe"]["raw"][source]
    assert "hf_abcdefghij" not in json.dumps(record)  # raw text is scrubbed


def test_cut_short_probe_says_which_sources_are_missing():
    texts = {name: text for name, text in outputs("h100").items() if name in SOURCES[:3]}
    record = assemble(texts, SOURCES)
    assert record["system"]["hostname"] == "vm"
    assert f"facts.{SOURCES[-1]}: no output" in record["probe"]["errors"][-1]
    assert record["platform"] == "cpu-only" and record["torch"] is None


def test_probe_script_on_this_machine():
    """The whole script, run by bash here: every section answers and the record has every schema key."""
    result = subprocess.run(["bash", "-c", probe.script(probe.Needs.of({}))], capture_output=True, text=True)
    sections = split_sections(result.stdout)
    assert sorted(sections) == sorted(f"facts.{name}" for name in SOURCES)
    record = probe.parse(sections, "here")
    assert record["probe"]["errors"] == [], record["probe"]
    assert set(record) >= {"host", "gathered_at", "fleet_version", "system", "platform", "gpus", "driver", "jetson",
                           "cuda", "libraries", "python", "torch", "cutlass", "env", "verify", "probe"}
    assert record["system"]["arch"] == os.uname().machine
    assert record["system"]["hostname"] == os.uname().nodename
    assert record["system"]["cpus"] == len(os.sched_getaffinity(0))
    if not Path("/proc/driver/nvidia/version").exists() and not Path("/dev/nvidia0").exists():
        assert record["platform"] == "cpu-only"


def test_vars_reach_the_shell_quoted(tmp_path):
    marker = tmp_path / "pwned"
    hostile = f"/opt/x'; touch {marker}; echo '"
    text = probe.script(probe.Needs.of({"python_env": hostile, "cutlass_dir": f"/opt/$(touch {marker})"}))
    subprocess.run(["bash", "-c", text], capture_output=True, text=True)
    assert not marker.exists()


def test_relative_paths_in_vars_are_refused():
    with pytest.raises(ValueError, match="python_env must be an absolute path"):
        probe.script(probe.Needs.of({"python_env": "venv"}))


REAL = CAPTURED / "h100-real"


def test_real_h100_framed_probe_output_parses_to_its_key_figures():
    """fleet's own probe, run on a real H100: driver 580.159.04, CUDA 13.0, 9.0, compat present but off."""
    record = probe.parse(split_sections((REAL / "probe-framed.txt").read_text()), "h100")
    check_h100_key_figures(record)


def test_real_h100_record_written_by_fleet_facts():
    from fleet.record import store
    check_h100_key_figures(store.load(REAL / "record.json"))




def check_h100_key_figures(record: dict) -> None:
    assert beyond_capture(record) == []
    assert record["platform"] == "x86_64-dgpu"
    assert record["driver"]["version"] == "580.159.04" and record["driver"]["cuda_max"] == "13.0"
    assert [(t["version"], t["path"]) for t in record["cuda"]["toolkits"]] == [("13.0", "/usr/local/cuda-13.0")]
    assert [g["compute_cap"] for g in record["gpus"]] == ["9.0"]
    compat = record["cuda"]["compat"]
    assert (compat["path"], compat["version"], compat["in_use"]) == ("/usr/local/cuda-13.0/compat", "580.95.05", False)
    assert record["torch"]["version"] == "2.11.0+cu130" and record["torch"]["cuda_available"] is True
    assert record["torch"]["capability"] == "9.0"
    assert record["libraries"]["libcuda.so.1"] == "/usr/local/nvidia/lib64/libcuda.so.1"
    assert record["library_sources"]["libcuda.so.1"] == "LD_LIBRARY_PATH"  # LD_LIBRARY_PATH wins over the cache
    assert record["system"]["os_id"] == "ubuntu" and record["system"]["container"] is True


def test_every_source_is_declared_once_and_a_missing_one_leaves_its_declared_default():
    """fleet/facts/sources.py is the one declaration: the probe runs exactly its commands, in its order, and a
    source the probe never printed leaves the default declared beside its parser (and an error naming it)."""
    from fleet.facts import sources
    from fleet.facts.record import assemble

    assert list(probe.bodies()) == [s.name for s in sources.SOURCES]
    record = assemble({}, expected=[s.name for s in sources.SOURCES])
    assert record["probe"]["errors"] == [f"facts.{s.name}: no output (the probe was cut short or this source is new)"
                                         for s in sources.SOURCES]
    for name in ("python", "cutlass", "verify", "shells"):
        assert record[name] == sources.BY_NAME[name].default
    record["python"]["version"] = "mutated"              # a record's value is its own, never the declaration's
    assert sources.BY_NAME["python"].default["version"] is None
