"""facts.loader: the real loader of this machine asked through the probe's own shell (fake libcuda files in a temp
tree: a copy of libz named like a compat and a stub libcuda), the section parser, each step named by file:line, and
decide.loader's judgement by decide_compat's answer."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest

from fleet.decide.loader import FLEET_COMPAT_CONF, STUB_HARM, decide_loader, harmful_dirs
from fleet.decide.gpu import Gpu
from fleet.facts import loader, shells

LIBZ = next((p for p in ("/lib/x86_64-linux-gnu/libz.so.1", "/usr/lib/x86_64-linux-gnu/libz.so.1",
                         "/lib/aarch64-linux-gnu/libz.so.1", "/usr/lib64/libz.so.1") if Path(p).exists()))   # zlib: python needs it


@pytest.fixture
def libs(tmp_path):
    """A compat dir (libcuda.so.1 -> libcuda.so.580.95.05) and a stub dir (libcuda.so), each a copy of libz."""
    compat = tmp_path / "usr/local/cuda-13.0/compat"
    stubs = tmp_path / "usr/local/cuda-13.0/lib64/stubs"
    for d in (compat, stubs):
        d.mkdir(parents=True)
    shutil.copy(LIBZ, compat / "libcuda.so.580.95.05")
    (compat / "libcuda.so.1").symlink_to("libcuda.so.580.95.05")
    shutil.copy(LIBZ, stubs / "libcuda.so")
    return compat, stubs


def query(env: dict) -> dict:
    out = subprocess.run(["bash", "--norc", "--noprofile", "-c", loader.QUERY], capture_output=True, text=True,
                         env={"PATH": "/usr/bin:/bin", **env}, timeout=60).stdout
    return loader.parse_query([line for line in out.splitlines() if line.startswith("@@ld")])


def test_the_real_loader_names_the_ld_library_path_entry_and_the_real_file(libs):
    compat, _ = libs
    seen = query({"LD_LIBRARY_PATH": f"/nonexistent:{compat}"})
    assert seen["step"] == "LD_LIBRARY_PATH" and seen["libcuda"] == f"{compat}/libcuda.so.1"
    assert seen["real"] == f"{compat}/libcuda.so.580.95.05" and seen["version"] == "580.95.05"
    assert seen["compat"] is True and seen["stub"] is False and seen["entry"] == str(compat)
    assert any("(LD_LIBRARY_PATH)" in line for line in seen["searched"])


def test_an_explicit_preload_wins_and_a_stub_is_named(libs):
    compat, stubs = libs
    seen = query({"LD_LIBRARY_PATH": str(compat), "LD_PRELOAD": f"{stubs}/libcuda.so"})
    assert seen["step"] == "LD_PRELOAD" and seen["libcuda"] == f"{stubs}/libcuda.so" and seen["stub"] is True
    assert seen["ld_preload"] == f"{stubs}/libcuda.so"


def test_no_libcuda_at_all_is_none_not_a_guess():
    seen = query({"LD_LIBRARY_PATH": "/nonexistent"})
    if seen["libcuda"] is None:          # this machine has no libcuda.so.1 (a CI box)
        assert seen["step"] is None and seen["version"] is None
    else:                                # it has one: the loader found it by the cache or the system path
        assert seen["step"] in ("ld cache", "system path")


SECTION = """\
@@kind bare
@@ldvar LD_PRELOAD=@unset@
@@ldvar LD_LIBRARY_PATH=@unset@
@@ldfind find library=libcuda.so.1 [0]; searching
@@ldfind  search cache=/etc/ld.so.cache
@@ldfind trying file=/usr/local/cuda-13.0/compat/libcuda.so.1
@@ldobj /usr/local/cuda-13.0/compat/libcuda.so.1	/usr/local/cuda-13.0/compat/libcuda.so.580.95.05
@@cache 	libcuda.so.1	/usr/local/cuda-13.0/compat/libcuda.so.1	/usr/local/cuda-13.0/compat/libcuda.so.580.95.05
@@cache 	libcuda.so.1	/usr/lib/x86_64-linux-gnu/libcuda.so.1	/usr/lib/x86_64-linux-gnu/libcuda.so.580.159.04
@@conf /etc/ld.so.conf.d/000-cuda-compat.conf	2	/usr/local/cuda-13.0/compat
@@conf /etc/ld.so.conf.d/x86_64-linux-gnu.conf	3	/usr/lib/x86_64-linux-gnu
@@preload 1	/usr/local/cuda/lib64/stubs/libcuda.so
@@usepam yes
"""


def test_the_section_parses_into_cache_conf_preload_and_the_bare_kind():
    found = loader.parse(SECTION)
    assert found["bare"]["step"] == "ld cache" and found["bare"]["version"] == "580.95.05"
    assert [(c["name"], c["version"], c["compat"]) for c in found["cache"]] == [
        ("libcuda.so.1", "580.95.05", True), ("libcuda.so.1", "580.159.04", False)]
    assert found["conf"][0] == {"file": "/etc/ld.so.conf.d/000-cuda-compat.conf", "line": 2,
                                "dir": "/usr/local/cuda-13.0/compat", "compat": True, "stub": False}
    assert found["preload"][0]["stub"] and found["preload"][0]["line"] == 1
    assert found["use_pam"] is True
    with pytest.raises(ValueError):
        loader.parse("@@usepam no\n")


def test_explain_names_the_conf_line_and_the_startup_line():
    section = loader.parse(SECTION)
    login = loader.parse_query([
        "@@ldvar LD_LIBRARY_PATH=/usr/local/cuda-13.0/compat",
        "@@ldfind search path=/usr/local/cuda-13.0/compat\t\t(LD_LIBRARY_PATH)",
        "@@ldfind trying file=/usr/local/cuda-13.0/compat/libcuda.so.1",
        "@@ldobj /usr/local/cuda-13.0/compat/libcuda.so.1\t/usr/local/cuda-13.0/compat/libcuda.so.580.95.05"])
    shell_facts = {"home": "/root", "etc_environment": [], "login": {"loader": login, "ld_changes": [
        {"file": "/root/.bash_profile", "line": 1, "before": None, "after": "/usr/local/cuda-13.0/compat", "via": []}]}}
    kinds = loader.explain(section, shell_facts)
    assert kinds["bare"]["set_by"] == "/etc/ld.so.conf.d/000-cuda-compat.conf:2"
    assert kinds["login"]["step"] == "LD_LIBRARY_PATH" and kinds["login"]["set_by"] == "~/.bash_profile:1"


def host(driver="580.159.04", compat_version="580.95.05", gpu="NVIDIA H100 80GB HBM3"):
    return SimpleNamespace(platform="x86_64-dgpu", gpus=(Gpu(gpu, "9.0", "reported", "data-center"),),
                           driver=driver, compat={"version": compat_version}, has_gpu=True)


def facts_with(kinds: dict) -> dict:
    section = loader.parse(SECTION)
    return {"loader": {"kinds": kinds, "cache": section["cache"], "conf": section["conf"],
                       "preload": section["preload"]}}


def test_compat_not_decided_makes_a_compat_cache_entry_harmful_and_a_stub_always():
    compat = SimpleNamespace(use=False, path="/usr/local/cuda-13.0/compat")
    kinds = {"bare": {"libcuda": "/usr/local/cuda-13.0/compat/libcuda.so.1", "version": "580.95.05",
                      "step": "ld cache", "set_by": "/etc/ld.so.conf.d/000-cuda-compat.conf:2"}}
    out = decide_loader(facts_with(kinds), host(), compat)
    assert out["kinds"]["bare"]["harm"] == "error 803 under driver 580.159.04 (cuda-compat 580.95.05 is not newer)"
    assert out["harmful"] == ["bare: /usr/local/cuda-13.0/compat/libcuda.so.1 (version 580.95.05) first by ld cache "
                              "(/etc/ld.so.conf.d/000-cuda-compat.conf:2): error 803 under driver 580.159.04 "
                              "(cuda-compat 580.95.05 is not newer)"]
    assert [(a["file"], a["line"]) for a in out["aside"]] == [("/etc/ld.so.conf.d/000-cuda-compat.conf", 2),
                                                              ("/etc/ld.so.preload", 1)]
    assert out["aside"][1]["harm"] == STUB_HARM and out["keep"] == []
    assert out["dirs"] == harmful_dirs(compat=True, stubs=True)


def test_compat_decided_keeps_fleets_drop_in_and_names_a_kind_without_compat():
    compat = SimpleNamespace(use=True, path="/usr/local/cuda-13.0/compat")
    kinds = {"bare": {"libcuda": "/usr/lib/x86_64-linux-gnu/libcuda.so.1", "version": "570.133.20",
                      "step": "ld cache", "set_by": None},
             "ssh": {"libcuda": "/usr/local/cuda-13.0/compat/libcuda.so.1", "version": "580.95.05",
                     "step": "LD_LIBRARY_PATH", "set_by": "/etc/fleet/env.sh:30"}}
    out = decide_loader(facts_with(kinds), host(driver="570.133.20"), compat)
    assert out["kinds"]["ssh"]["harm"] is None
    assert out["kinds"]["bare"]["harm"].startswith("misses cuda-compat")
    assert out["keep"] == [FLEET_COMPAT_CONF]
    assert [a["file"] for a in out["aside"]] == ["/etc/ld.so.preload"]          # the stub only
    assert out["dirs"] == harmful_dirs(compat=False, stubs=True)
