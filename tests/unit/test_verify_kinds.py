"""verify in every kind of process (issue 23): the explaining code of the verify program (fleet/remote/verify/), run here
on outputs recorded on the lab's pod-580 (tests/data/verify_kinds/: fleet.facts.shells' trace with a
~/.bash_profile putting compat first, `ldconfig -p` and the /etc/ld.so.conf files with
/etc/ld.so.conf.d/000-cuda-compat.conf, and the verify results fleet recorded for each trap). The files a step
names are rebuilt under tmp_path where the loader's answer depends on them (a symlink to the real libcuda)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from fleet.engine import decide_tasks
from fleet.facts import shells
from fleet.inventory import Host
from fleet.remote import trace as shells_trace
from fleet.remote.verify import cuda, explain, kinds, loader
from fleet.remote.verify_record import verify_record
from fleet.roles import load_roles, roles_dirs

import verify_program

DATA = Path(__file__).resolve().parents[1] / "data"
KINDS = DATA / "verify_kinds"
COMPAT = "/usr/local/cuda-13.0/compat"
TRACE = (KINDS / "pod-580-bash-profile.trace.txt").read_text()


@pytest.fixture(scope="module")
def verify():
    facts = json.loads((DATA / "records" / "h100-pod-580-compat.json").read_text())
    plan = decide_tasks(load_roles(None, roles_dirs()), Host("h", address="192.0.2.1"), facts)
    task = next(t for t in plan.tasks if t.id == "verify.0")
    return verify_program.fresh(verify_program.config_of(task))   # no torch here: it stops at torch_installed


@pytest.fixture
def root_home(monkeypatch):
    monkeypatch.setenv("HOME", "/root")   # the recorded host's HOME: its startup files print as ~/...


def compat_tree(tmp_path: Path) -> tuple[Path, Path]:
    """A cuda-compat directory as the package lays it out: libcuda.so.1 -> libcuda.so.580.95.05."""
    compat = tmp_path / "usr/local/cuda-13.0/compat"
    compat.mkdir(parents=True)
    (compat / "libcuda.so.580.95.05").write_bytes(b"\x7fELF")
    (compat / "libcuda.so.1").symlink_to("libcuda.so.580.95.05")
    return compat, compat / "libcuda.so.580.95.05"


def report(real: Path, **more) -> dict:
    return {"code": 803, "name": "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH", "text": "system has unsupported display driver "
            "/ cuda driver combination", "libcuda": str(real), "libcuda_real": str(real),
            "libcuda_version": "580.95.05", "stub": False, **more}


def test_the_program_reads_the_trace_its_command_prints_with_the_facts_own_reader(tmp_path, monkeypatch):
    (tmp_path / "trace.txt").write_text(TRACE)
    monkeypatch.setenv("FLEET_VERIFY_TRACE", f"cat {tmp_path / 'trace.txt'}")
    ours, theirs = verify_program.fresh(run=False).shell_trace(), shells.parse(TRACE)
    assert ours == shells_trace.parse(TRACE)
    for kind in shells.KINDS:
        mine = [(c["file"], c["line"], c["before"], c["after"], c["via"]) for c in ours[kind]["ld_changes"]]
        facts = [(c["file"], c["line"], c["before"], c["after"], c["via"]) for c in theirs[kind]["ld_changes"]]
        assert mine == facts and mine, kind


def test_the_startup_line_that_put_compat_first_is_named_per_kind(verify, root_home):
    trace = shells_trace.parse(TRACE)

    def line(kind, directory, trace):
        return loader.startup_line(verify, kind, directory, trace)

    assert line("login", COMPAT, trace) == "~/.bash_profile:2"
    assert line("ssh", COMPAT, trace) is None and line("interactive", COMPAT, trace) is None
    assert line("bare", COMPAT, trace) is None        # a bare process reads no startup file
    # a line reached through another file names the line a person edits and the file it led to
    assert line("login", "/usr/local/cuda-13.0/targets/x86_64-linux/lib", trace) == \
        "/etc/profile:30 (via /etc/fleet/env.sh:38)"
    assert line("ssh", "/usr/local/cuda-13.0/targets/x86_64-linux/lib", trace) == "~/.bashrc:8 (via /etc/fleet/env.sh:38)"


def test_compat_on_ld_library_path_is_blamed_on_its_startup_line_with_the_fix_there(verify, root_home, tmp_path):
    compat, real = compat_tree(tmp_path)
    trace = shells_trace.parse(TRACE.replace(COMPAT, str(compat)))
    r = report(real, ld_library_path=f"{compat}:/usr/local/cuda-13.0/targets/x86_64-linux/lib")
    step = loader.loader_step(verify, r, "login", trace=trace, cache=[], conf=[], preload_file=str(tmp_path / "none"))
    assert step["mechanism"] == "LD_LIBRARY_PATH" and step["where"] == "~/.bash_profile:2"
    text = explain.explain(verify, r, step)
    assert f"loaded because ~/.bash_profile:2 puts {compat} first on LD_LIBRARY_PATH" in text
    assert f"fix: take {compat} off LD_LIBRARY_PATH at that line" in text


def test_compat_in_the_ld_cache_is_blamed_on_the_conf_file_never_on_ld_library_path(verify, tmp_path):
    compat, real = compat_tree(tmp_path)
    etc = tmp_path / "etc"
    # the recorded /etc/ld.so.conf and its drop-ins, rebuilt under tmp_path
    for block in (KINDS / "pod-580-ld-cache.ld.so.conf.txt").read_text().split("== ")[1:]:
        name, _, body = block.partition("\n")
        path = tmp_path / name.strip().lstrip("/")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body.replace("/etc/", f"{etc}/").replace(COMPAT, str(compat)))
    conf = loader.ld_conf_lines(str(etc / "ld.so.conf"))
    assert conf[0] == (str(etc / "ld.so.conf.d/000-cuda-compat.conf"), 1, str(compat))   # ldconfig's order: sorted
    cache = loader.ld_cache_entries((KINDS / "pod-580-ld-cache.ldconfig-p.txt").read_text().replace(COMPAT, str(compat)))
    assert cache[0] == ("libc6,x86-64", f"{compat}/libcuda.so.1") and len(cache) == 2
    # the bare kind (no LD_LIBRARY_PATH) and a shell whose LD_LIBRARY_PATH holds no libcuda alike
    for kind, path in (("bare", None), ("ssh", "/usr/local/cuda-13.0/targets/x86_64-linux/lib")):
        r = report(real, ld_library_path=path)
        step = loader.loader_step(verify, r, kind, trace={}, cache=cache, conf=conf,
                                  preload_file=str(tmp_path / "none"))
        conf_file = str(etc / "ld.so.conf.d/000-cuda-compat.conf")
        assert step["mechanism"] == "ld cache" and step["conf"] == conf_file
        text = explain.explain(verify, r, step)
        assert f"loaded because {conf_file}:1 puts {compat} in the ld cache (ldconfig -p: libcuda.so.1 => " in text
        assert f"fix: move {conf_file} aside (out of /etc/ld.so.conf.d, not deleted) and run ldconfig: fleet apply does so " in text
    # the conf file gone but ldconfig not run: the cache itself is named
    step = loader.loader_step(verify, report(real), "bare", trace={}, cache=cache, conf=[],
                              preload_file=str(tmp_path / "x"))
    assert "no /etc/ld.so.conf file names its directory" in step["says"] and step["fix"] == "run ldconfig"


def test_a_preload_wins_over_every_path_and_is_named(verify, tmp_path):
    compat, real = compat_tree(tmp_path)
    preload = tmp_path / "ld.so.preload"
    preload.write_text(f"# site\n{compat}/libcuda.so.1\n")
    r = report(real, ld_library_path=str(compat))
    step = loader.loader_step(verify, r, "ssh", trace={}, cache=[], conf=[], preload_file=str(preload))
    assert step["says"] == f"{preload}:2 preloads {compat}/libcuda.so.1"
    assert step["fix"].startswith(f"take {compat}/libcuda.so.1 out of {preload}: fleet apply comments the line out")
    r["ld_preload"] = f"{compat}/libcuda.so.1"
    step = loader.loader_step(verify, r, "ssh", trace={}, cache=[], conf=[], preload_file=str(preload))
    assert step["mechanism"] == "LD_PRELOAD" and step["says"].startswith(f"LD_PRELOAD={compat}/libcuda.so.1 preloads")


def test_a_stub_is_named_as_a_stub_with_the_step_that_put_it_first(verify, tmp_path):
    stubs = tmp_path / "usr/local/cuda-13.0/lib64/stubs"
    stubs.mkdir(parents=True)
    (stubs / "libcuda.so").write_bytes(b"\x7fELF")
    (stubs / "libcuda.so.1").symlink_to("libcuda.so")
    r = {"code": 34, "name": "CUDA_ERROR_STUB_LIBRARY", "text": "CUDA driver is a stub library",
         "libcuda": str(stubs / "libcuda.so"), "libcuda_real": str(stubs / "libcuda.so"), "stub": True,
         "ld_library_path": str(stubs)}
    step = loader.loader_step(verify, r, "bare", trace={}, cache=[], conf=[], preload_file=str(tmp_path / "none"))
    text = explain.explain(verify, r, step)
    assert f"from the stub {stubs}/libcuda.so: a stub libcuda" in text
    assert f"LD_LIBRARY_PATH={stubs} puts {stubs} first" in text and f"take {stubs} off LD_LIBRARY_PATH" in text


def test_the_driver_api_probe_judges_as_torch_does(verify):
    need = cuda.need_of
    assert need("13.0") == 13000 and need("12.6") == 12060 and need(None) == 0
    text = explain.explain(verify, {"code": 0, "name": "CUDA_SUCCESS",
                                    "libcuda": "/usr/lib/x86_64-linux-gnu/libcuda.so.1",
                                    "libcuda_real": "/usr/lib/x86_64-linux-gnu/libcuda.so.570.133.20",
                                    "libcuda_version": "570.133.20", "driver_api": 12080, "devices": 1,
                                    "need": 13000})
    assert "driver API 12080 (libcuda 570.133.20) is older than the wheel's CUDA 13.0 needs" in text


@pytest.mark.parametrize("record, failed", [
    ("pod-580-clean", set()),
    ("pod-580-bash-profile", {"login"}),
    ("pod-580-ld-cache", {"ssh", "bare", "interactive", "login"})])
def test_the_recorded_verdicts_name_each_failed_kind_its_libcuda_and_step(record, failed):
    data = json.loads((KINDS / f"{record}.verify.json").read_text())
    assert set(data["kinds"]) == {"ssh", "bare", "interactive", "login"}
    assert {k for k, v in data["kinds"].items() if not v["passed"]} == failed
    summary = verify_record(data, {})["summary"]     # what facts, tables and the report show
    assert summary.startswith("verify passed" if not failed else "verify failed")
    for kind in failed:
        entry = data["kinds"][kind]
        assert entry["libcuda_real"] == f"{COMPAT}/libcuda.so.580.95.05" and entry["libcuda_version"] == "580.95.05"
        assert entry["stub"] is False and entry["step"]["says"] in entry["explain"]
        assert entry["explain"] in summary
    for kind in set(data["kinds"]) - failed:
        assert data["kinds"][kind]["libcuda_real"] == "/usr/lib/x86_64-linux-gnu/libcuda.so.580.159.04"


def test_the_verify_check_hands_over_the_facts_own_trace_command():
    facts = json.loads((DATA / "records" / "h100-pod-580-compat.json").read_text())
    plan = decide_tasks(load_roles(None, roles_dirs()), Host("h", address="192.0.2.1"), facts)
    resource = next(t for t in plan.tasks if t.id == "verify.0").resource
    trace = next(p for p in resource.programs() if p.name == "fleet-shell-trace")
    assert trace.text == shells.command() + "\n"   # the facts' own trace, installed as a helper program
    # the command the verify program runs (bash -c, fleet/remote/verify/config.py Run.shell_trace): bash of where the
    # check's
    # fleet_program found the trace (its installed file, or in --check a temporary copy, whatever its name holds)
    check = resource.check()
    start = check.index("env FLEET_VERIFY_TRACE=")
    handed = check[start:check.index("\" ", start) + 1]
    for where in (trace.path, "/tmp/fleet check.x/it's"):
        got = subprocess.run(["bash", "-c", f"{trace.at[2:-1]}={shells.quote(where)}; {handed} printenv "
                              "FLEET_VERIFY_TRACE"], capture_output=True, text=True, check=True).stdout
        assert subprocess.run(["bash", "-c", f"printf '%s' {got.strip()[len('bash '):]}"], capture_output=True,
                              text=True).stdout == where and got.startswith("bash "), got


def test_fleets_own_gated_drop_in_at_fault_sends_to_its_gate_not_aside(verify, tmp_path):
    compat, real = compat_tree(tmp_path)
    own = "/etc/ld.so.conf.d/000-fleet-cuda-compat.conf"      # the cuda_compat role's, kept by its start gate
    step = loader.loader_step(verify, report(real), "bare", trace={},
                              cache=[("libc6,x86-64", f"{compat}/libcuda.so.1")], conf=[(own, 1, str(compat))],
                              preload_file=str(tmp_path / "none"))
    assert step["says"].startswith(f"{own}:1 puts {compat} in the ld cache")
    assert "run /usr/local/sbin/fleet-cuda-compat-gate" in step["fix"] and "aside" not in step["fix"]


def test_each_kind_of_process_really_starts_here_and_a_failure_names_its_kind(verify, monkeypatch, tmp_path):
    """bare (env -i), bash -i and bash -l started for real on this machine (no NVIDIA driver: the loader finds no
    libcuda.so.1 in any of them, or the machine's own where it has one); each answers, in its own environment."""
    monkeypatch.setenv("HOME", str(tmp_path))       # startup files of our own: a login shell that says where it is
    (tmp_path / ".bash_profile").write_text("export LD_LIBRARY_PATH=/nonexistent/login\n")
    (tmp_path / ".bashrc").write_text("export LD_LIBRARY_PATH=/nonexistent/interactive\n")
    run = verify_program.fresh(run=False, program=verify_program.shipped(tmp_path))   # the file the host gets
    answers = kinds.other_kinds(run, 13000)
    assert set(answers) == {"bare", "interactive", "login"}
    assert answers["bare"]["ld_library_path"] is None
    assert answers["interactive"]["ld_library_path"] == "/nonexistent/interactive"
    assert answers["login"]["ld_library_path"] == "/nonexistent/login"
    for kind, r in answers.items():
        entry = kinds.judge_kind(run, kind, r)
        assert entry["passed"] == bool(r.get("available")), (kind, r)
        if not entry["passed"]:
            assert run.checks[-1]["detail"].startswith(kinds.KINDS[kind] + ": ")


def test_the_libcuda_reported_is_the_file_whose_cuinit_answered(verify, tmp_path):
    """dladdr on the cuInit the probe called, not a name-ordered pick among the libcuda files a process mapped."""
    import ctypes
    import subprocess
    src = tmp_path / "c.c"
    src.write_text("int cuInit(unsigned f){return 34;}\n")
    lib_dir = tmp_path / "z-last-by-name"
    lib_dir.mkdir()
    real = lib_dir / "libcuda.so.999.1"
    subprocess.run(["gcc", "-shared", "-fPIC", "-Wl,-soname,libcuda.so.1", "-o", str(real), str(src)], check=True)
    (lib_dir / "libcuda.so.1").symlink_to(real.name)
    lib = ctypes.CDLL(str(lib_dir / "libcuda.so.1"))
    assert lib.cuInit(0) == 34
    assert cuda.answered_by(lib) == str(real)
