"""Toolkit, cuda-compat and library parsers: the real H100 capture, plus real ldconfig/loader runs here."""

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from fleet.facts import cuda

CAPTURED = Path(__file__).parents[1] / "data" / "captured"


def fixture(host: str, source: str) -> str:
    return (CAPTURED / host / f"{source}.txt").read_text()


def captured_block(name: str) -> str:
    text = (CAPTURED / "h100-device" / "probe.txt").read_text()
    return re.search(rf"^== {re.escape(name)}\n(.*?)(?=^== |\Z)", text, re.M | re.S)[1]


def test_nvcc_version_real_h100():
    assert cuda.parse_nvcc_version(captured_block("nvcc")) == {"version": "13.0", "full_version": "13.0.88"}


def test_nvcc_garbage_raises():
    with pytest.raises(ValueError):
        cuda.parse_nvcc_version("bash: nvcc: command not found")


def test_version_json_line():
    assert cuda.parse_version_json('      "version" : "12.8.1"') == {"version": "12.8", "full_version": "12.8.1"}


def test_toolkits_real_h100_reframed():
    parsed = cuda.parse_toolkits(fixture("h100", "cuda_toolkits"))
    assert parsed["toolkits"] == [{"version": "13.0", "full_version": "13.0.88", "path": "/usr/local/cuda-13.0",
                                   "nvcc": "/usr/local/cuda-13.0/bin/nvcc"}]
    assert parsed["links"]["/usr/local/cuda"] == "/usr/local/cuda-13.0"


def test_toolkits_version_json_wins_and_unknown_dir_is_none():
    text = ("toolkit /usr/local/cuda-12.8\nversion.json       \"version\" : \"12.8.1\",\n"
            "nvcc /usr/local/cuda-12.8/bin/nvcc\nCuda compilation tools, release 12.8, V12.8.93\n"
            "toolkit /usr/local/cuda-11.8\n")
    toolkits = cuda.parse_toolkits(text)["toolkits"]
    assert [(t["path"], t["version"], t["full_version"]) for t in toolkits] == [
        ("/usr/local/cuda-12.8", "12.8", "12.8.1"), ("/usr/local/cuda-11.8", None, None)]


def test_toolkits_nvcc_on_path_outside_usr_local():
    text = ("nvcc_on_path /usr/lib/nvidia-cuda-toolkit/bin/nvcc\npath_toolkit /usr/lib/nvidia-cuda-toolkit\n"
            "nvcc /usr/lib/nvidia-cuda-toolkit/bin/nvcc\nCuda compilation tools, release 11.8, V11.8.89\n")
    (debian,) = cuda.parse_toolkits(text)["toolkits"]
    assert (debian["path"], debian["version"]) == ("/usr/lib/nvidia-cuda-toolkit", "11.8")


def test_toolkits_command_on_this_machine():
    out = subprocess.run(["bash", "-c", cuda.TOOLKITS], capture_output=True, text=True).stdout
    parsed = cuda.parse_toolkits(out)
    expected = sorted(str(p) for p in Path("/usr/local").glob("cuda-*") if p.is_dir() and not p.is_symlink())
    assert sorted(t["path"] for t in parsed["toolkits"] if t["path"].startswith("/usr/local/cuda")) == expected


def test_compat_real_h100_present_not_in_use():
    compat = cuda.parse_compat(fixture("h100", "cuda_compat"))
    assert compat["path"] == "/usr/local/cuda-13.0/compat"
    assert compat["version"] == "580.95.05"
    assert compat["in_use"] is False
    assert compat["registered_ldconfig"] is False


def test_compat_first_on_ld_library_path():
    text = "compat /usr/local/cuda-13.0/compat\nfile libcuda.so.580.95.05\nld_library_path /usr/local/cuda-13.0/compat\n"
    compat = cuda.parse_compat(text)
    assert compat["in_use"] and compat["first_on_ld_library_path"] and compat["on_ld_library_path"]


def test_compat_registered_with_ldconfig_is_in_use():
    text = ("compat /usr/local/cuda-13.0/compat\nfile libcuda.so.580.95.05\n"
            "ldconfig libcuda.so.1 (libc6,x86-64) => /usr/local/cuda-13.0/compat/libcuda.so.1\n")
    compat = cuda.parse_compat(text)
    assert compat["in_use"] and compat["registered_ldconfig"] and not compat["on_ld_library_path"]


def test_no_compat():
    assert cuda.parse_compat("ld_library_path /usr/lib\n") is None


def make_compat_tree(root: Path) -> Path:
    compat = root / "usr/local/cuda-13.0/compat"
    compat.mkdir(parents=True)
    (compat / "libcuda.so.580.95.05").write_bytes(b"")
    (compat / "libcuda.so.1").symlink_to("libcuda.so.580.95.05")
    return compat


def test_compat_command_sees_ld_library_path_through_a_symlink(tmp_path):
    """The real shell: a compat dir reached through /usr/local/cuda -> cuda-13.0 counts as in use."""
    compat = make_compat_tree(tmp_path)
    (tmp_path / "usr/local/cuda").symlink_to(tmp_path / "usr/local/cuda-13.0")
    script = cuda.COMPAT.replace("/usr/local/cuda", str(tmp_path / "usr/local/cuda"))
    env = {**os.environ, "LD_LIBRARY_PATH": f"{tmp_path}/usr/local/cuda/compat:/usr/lib"}
    out = subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=env).stdout
    parsed = cuda.parse_compat(out)
    assert parsed["path"] == str(compat)
    assert parsed["version"] == "580.95.05"
    assert parsed["first_on_ld_library_path"] is True
    assert parsed["all"] == [str(compat)]  # the two spellings of the same directory count once


def test_ldconfig_real_h100_first_entry_wins():
    found = cuda.parse_ldconfig(captured_block("ldconfig"), "x86_64")
    assert found["libcuda.so.1"] == "/usr/local/nvidia/lib64/libcuda.so.1"
    assert found["libcudnn.so.9"] == "/lib/x86_64-linux-gnu/libcudnn.so.9"
    assert found["libcublas.so.13"] == "/usr/local/cuda/targets/x86_64-linux/lib/libcublas.so.13"


def test_ldconfig_prefers_this_arch():
    text = ("\tlibcuda.so.1 (libc6) => /usr/lib/i386-linux-gnu/libcuda.so.1\n"
            "\tlibcuda.so.1 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libcuda.so.1\n")
    assert cuda.parse_ldconfig(text, "x86_64")["libcuda.so.1"] == "/usr/lib/x86_64-linux-gnu/libcuda.so.1"
    assert cuda.parse_ldconfig(text, None)["libcuda.so.1"] == "/usr/lib/i386-linux-gnu/libcuda.so.1"


def test_libraries_real_h100():
    parsed = cuda.parse_libraries(fixture("h100", "libraries"), "x86_64")
    assert parsed["libraries"]["libcuda.so.1"] == "/usr/local/nvidia/lib64/libcuda.so.1"
    assert parsed["sources"]["libcuda.so.1"] == "ldconfig"
    assert parsed["libraries"]["libcudss.so.0"] is None
    assert set(parsed["libraries"]) == set(cuda.WATCHED_LIBRARIES)


def test_libraries_gb10_aarch64():
    parsed = cuda.parse_libraries(fixture("gb10", "libraries"), "aarch64")
    assert parsed["libraries"]["libcublas.so.13"].endswith("sbsa-linux/lib/libcublas.so.13")


@pytest.fixture
def libcudss(tmp_path):
    """A real shared object with the soname libcudss.so.0, built with the system C compiler."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.fail("a C compiler is needed (apt-get install gcc)")
    src = tmp_path / "cudss.c"
    src.write_text("int cudssCreate(void **h) { *h = 0; return 0; }\n")
    lib_dir = tmp_path / "lib"
    lib_dir.mkdir()
    subprocess.run([cc, "-shared", "-fPIC", "-Wl,-soname,libcudss.so.0", "-o", lib_dir / "libcudss.so.0", src],
                   check=True)
    return lib_dir


def test_libraries_command_ld_library_path_wins_like_the_loader(libcudss, tmp_path):
    env = {**os.environ, "LD_LIBRARY_PATH": f"{tmp_path}/empty::{libcudss}"}
    out = subprocess.run(["bash", "-c", cuda.libraries_command()], capture_output=True, text=True, env=env).stdout
    parsed = cuda.parse_libraries(out, os.uname().machine)
    assert parsed["libraries"]["libcudss.so.0"] == f"{libcudss}/libcudss.so.0"
    assert parsed["sources"]["libcudss.so.0"] == "LD_LIBRARY_PATH"
    # the real loader agrees: a program needing libcudss.so.0 resolves it to the same file
    probe_src = tmp_path / "main.c"
    probe_src.write_text("int cudssCreate(void **h); int main(void) { void *h; return cudssCreate(&h); }\n")
    exe = tmp_path / "main"
    subprocess.run([shutil.which("cc"), "-o", exe, probe_src, f"-L{libcudss}", "-l:libcudss.so.0"], check=True)
    ldd = subprocess.run(["ldd", exe], capture_output=True, text=True, env=env).stdout
    assert f"libcudss.so.0 => {libcudss}/libcudss.so.0" in ldd


def test_libraries_command_matches_ldconfig_cache_here():
    out = subprocess.run(["bash", "-c", cuda.libraries_command()], capture_output=True, text=True,
                         env={k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}).stdout
    parsed = cuda.parse_libraries(out, os.uname().machine)
    cache = subprocess.run(["bash", "-c", "ldconfig -p || /sbin/ldconfig -p"], capture_output=True, text=True).stdout
    for soname, path in parsed["libraries"].items():
        if path is None:
            assert f"\t{soname} (" not in cache
        else:
            assert f"{soname} (" in cache and path in cache and Path(path).exists()


def test_a_compat_only_directory_is_not_a_toolkit(tmp_path):
    """cuda-compat-13-0 alone creates /usr/local/cuda-13.0/compat; no toolkit is installed."""
    make_compat_tree(tmp_path)
    toolkit = tmp_path / "usr/local/cuda-12.8"
    (toolkit / "targets/x86_64-linux/lib").mkdir(parents=True)
    script = cuda.TOOLKITS.replace("/usr/local/cuda", str(tmp_path / "usr/local/cuda"))
    out = subprocess.run(["bash", "-c", script], capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"}).stdout
    assert [(t["path"], t["version"]) for t in cuda.parse_toolkits(out)["toolkits"]] == [(str(toolkit), None)]
