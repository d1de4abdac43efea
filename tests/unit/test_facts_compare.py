"""The side-by-side table and drift, on records assembled from the captured outputs."""

import copy
from pathlib import Path

from rich.console import Console

from fleet.engine import probe
from fleet.facts import rows
from fleet.report import compare
from fleet.facts.record import assemble

CAPTURED = Path(__file__).parents[1] / "data" / "captured"
SOURCES = list(probe.bodies().keys())


def record_of(host: str) -> dict:
    texts = {}
    for name in SOURCES:
        for where in (host, "h100"):
            if (CAPTURED / where / f"{name}.txt").exists():
                texts[name] = (CAPTURED / where / f"{name}.txt").read_text()
                break
    return {"host": host, "gathered_at": "2026-11-21T10:00:00Z", **assemble(texts, SOURCES)}


def text_of(table, width=200) -> str:
    console = Console(width=width, record=True, color_system=None)
    console.print(table)
    return console.export_text()


def test_flatten_paths():
    flat = compare.flatten(record_of("h100"))
    assert flat["system.arch"] == "x86_64"
    assert flat["driver.version"] == "580.159.04"
    assert flat["gpus.0.compute_cap"] == "9.0"
    assert flat["libraries.libcudss.so.0"] == "-"
    assert flat["cuda.compat.in_use"] == "no"
    assert flat["torch.arch_list"] == "sm_75 sm_80 sm_86 sm_90 sm_100 sm_120"
    assert "gathered_at" not in flat and not any(path.startswith("probe.raw") for path in flat)


def test_rows_that_differ_come_first_and_identical_fold():
    records = {"h100": record_of("h100"), "thor": record_of("thor"), "spark": record_of("gb10")}
    result = compare.compare(records)
    differing = [row.path for row in result.differing]
    assert {"platform", "system.arch", "gpus.0.compute_cap", "driver.version"} <= set(differing)
    assert "system.os_id" not in differing                     # all three share the h100 os-release here
    assert "gpus.0.uuid" not in differing                      # unique by nature: records keep it, the table not
    first_identical = len(result.differing)
    assert all(row.differs for row in result.rows[:first_identical])
    assert not any(row.differs for row in result.rows[first_identical:])
    assert result.rows[0].values == {k: compare.flatten(v)[result.rows[0].path] for k, v in records.items()}

    folded = text_of(compare.render(result))
    assert f"{len(result.identical)} identical facts folded (--all shows them)" in folded
    assert "jetson-thor" in folded and "dgx-spark" in folded and "x86_64-dgpu" in folded
    assert "system.os_id" not in folded
    everything = text_of(compare.render(result, show_all=True))
    assert "system.os_id" in everything and "folded" not in everything
    assert folded.index("platform") < folded.index("folded")


def test_unreachable_host_shows_age_of_its_last_record():
    records = {"h100": record_of("h100"), "gone": record_of("h100"), "never": None}
    columns = [compare.Column("h100"), compare.Column("gone", reachable=False, age="3h 2m ago"),
               compare.Column("never", reachable=False)]
    out = text_of(compare.render(compare.compare(records, columns)))
    assert "unreachable (record 3h 2m ago)" in out
    assert "unreachable (no record)" in out
    # a host with no record at all does not make every row "differ"
    assert compare.compare(records, columns).differing == []


def test_drift_names_what_changed():
    before = record_of("h100")
    after = copy.deepcopy(before)
    after["driver"]["version"] = "580.95.05"
    after["libraries"]["libcudss.so.0"] = "/opt/fleet/venv/lib/python3.12/site-packages/nvidia/cu13/lib/libcudss.so.0"
    after["torch"]["version"] = "2.10.0+cu130"
    after["gathered_at"] = "2026-11-22T10:00:00Z"
    changes = rows.drift(before, after)
    assert [path for path, _, _ in changes] == ["driver.version", "libraries.libcudss.so.0", "torch.version"]
    assert changes[0] == ("driver.version", "580.159.04", "580.95.05")
    out = text_of(compare.render_drift("h100", changes))
    assert "3 changes since the previous record" in out and "2.10.0+cu130" in out
    assert rows.drift(before, copy.deepcopy(before)) == []


def test_drift_without_previous_record_lists_everything_as_new():
    changes = rows.drift(None, record_of("h100"))
    assert ("driver.version", "-", "580.159.04") in changes


def test_verify_checks_summarised():
    record = {"verify": {"passed": False, "checks": [{"name": "import torch", "passed": True, "detail": ""},
                                                     {"name": "cuda", "passed": False, "detail": "error 803"}]}}
    flat = compare.flatten(record)
    assert flat["verify.checks"] == "1/2 passed"
    assert flat["verify.failed.cuda"] == "error 803"


def test_shell_traces_and_neutralized_lines_read_as_one_row_each():
    """The real H100's record after issue 11's traps: one sentence per neutralized line, file:line per shell."""
    import json
    from pathlib import Path
    record = json.loads((Path(__file__).resolve().parents[1] / "data" / "h100-device" / "issue11" /
                         "facts-after-apply.json").read_text())
    rows = compare.flatten(record)
    assert rows["env.compat_lines"] == "2"
    assert rows["env.compat_lines.1"].startswith("~/.bashrc:104 (via ~/pod_setup.sh:1) puts /usr/local/cuda-13.0/compat")
    assert rows["shells.interactive.ld_changes"] == ("/etc/rp_environment:1 /etc/fleet/env.sh:38 /root/pod_setup.sh:1 "
                                                     "/etc/fleet/env.sh:38")
    assert not [k for k in rows if k.startswith(("verify.cuda", "shells.home", "shells.interactive.ld_changes."))]


def test_the_loader_reads_as_one_row_per_kind_of_process():
    record = {"loader": {"kinds": {
        "bare": {"libcuda": "/usr/local/cuda-13.0/compat/libcuda.so.1", "version": "580.95.05", "stub": False,
                 "step": "ld cache", "set_by": "/etc/ld.so.conf.d/000-cuda-compat.conf:1", "searched": ["x"] * 40},
        "login": {"libcuda": None, "version": None, "stub": False, "step": None, "set_by": None}},
        "cache": [{"name": "libcuda.so.1", "real": "/usr/local/cuda-13.0/compat/libcuda.so.580.95.05"}],
        "conf": [{"file": "/etc/ld.so.conf.d/000-cuda-compat.conf", "line": 1, "dir": "/usr/local/cuda-13.0/compat"}],
        "preload": [], "use_pam": True}}
    rows = compare.flatten(record)
    assert rows == {
        "loader.bare": "/usr/local/cuda-13.0/compat/libcuda.so.1 (580.95.05) by ld cache "
                       "/etc/ld.so.conf.d/000-cuda-compat.conf:1",
        "loader.login": "none",
        "loader.cache": "libcuda.so.1=/usr/local/cuda-13.0/compat/libcuda.so.580.95.05",
        "loader.conf": "/etc/ld.so.conf.d/000-cuda-compat.conf:1=/usr/local/cuda-13.0/compat",
        "loader.preload": "none", "loader.use_pam": "yes"}
