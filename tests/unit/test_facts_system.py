"""System parsers on real captured output (H100 host) and on this machine's own files."""

import re
import subprocess
from pathlib import Path

import pytest

from fleet.facts import system

CAPTURED = Path(__file__).parents[1] / "data" / "captured"


def captured_block(name: str) -> str:
    """One `== name` block of the real H100 capture, as the tool printed it."""
    text = (CAPTURED / "h100-device" / "probe.txt").read_text()
    match = re.search(rf"^== {re.escape(name)}\n(.*?)(?=^== |\Z)", text, re.M | re.S)
    return match[1]


def test_uname_from_real_h100():
    assert system.parse_uname(captured_block("uname")) == {
        "hostname": "vm", "kernel": "6.18.44-fc-v657-gpu", "arch": "x86_64"}


def test_uname_on_this_machine():
    out = subprocess.run(["bash", "-c", system.UNAME], capture_output=True, text=True, check=True).stdout
    parsed = system.parse_uname(out)
    assert parsed["arch"] == subprocess.run(["uname", "-m"], capture_output=True, text=True).stdout.strip()
    assert parsed["kernel"] == subprocess.run(["uname", "-r"], capture_output=True, text=True).stdout.strip()


@pytest.mark.parametrize("garbage", ["", "x86_64", "Linux\nx86 64"])
def test_uname_garbage_raises(garbage):
    with pytest.raises(ValueError):
        system.parse_uname(garbage)


def test_os_release_from_real_h100():
    values = system.parse_os_release(captured_block("os-release"))
    assert values["ID"] == "ubuntu"
    assert values["VERSION_ID"] == "24.04"
    assert values["PRETTY_NAME"] == "Ubuntu 24.04.3 LTS"
    assert values["VERSION"] == "24.04.3 LTS (Noble Numbat)"


def test_os_release_without_id_raises():
    with pytest.raises(ValueError):
        system.parse_os_release("<html>404</html>")


def test_cpu_and_meminfo_on_this_machine():
    out = subprocess.run(["bash", "-c", system.CPU], capture_output=True, text=True).stdout
    import os
    assert system.parse_cpu(out)["cpus"] == len(os.sched_getaffinity(0))
    mem = system.parse_meminfo(subprocess.run(["bash", "-c", system.MEMINFO], capture_output=True, text=True).stdout)
    total_kb = int(re.search(r"MemTotal:\s+(\d+)", Path("/proc/meminfo").read_text())[1])
    assert mem["mem_total_mb"] == total_kb // 1024
    assert 0 < mem["mem_available_mb"] <= mem["mem_total_mb"]


def test_cpu_arm_without_model_line():
    assert system.parse_cpu("nproc 14\n") == {"cpus": 14, "cpu_model": None}


def test_df_human_line_from_real_h100():
    line = captured_block("df").splitlines()[1]
    assert system.parse_df_line(line) == {"filesystem": "/dev/vda", "mount": "/", "size_gb": 252.0, "free_gb": 64.0}


def test_df_section_from_real_h100_reframed():
    disks = system.parse_df((CAPTURED / "h100" / "df.txt").read_text())
    assert [d["path"] for d in disks] == ["/opt/torch", "/opt/cutlass", "/"]
    assert all(d["free_gb"] == 64.0 for d in disks)


def test_df_command_on_missing_dirs_uses_nearest_ancestor(tmp_path):
    missing = tmp_path / "not" / "yet" / "venv"
    out = subprocess.run(["bash", "-c", system.df_command([str(missing), "/"])],
                         capture_output=True, text=True, check=True).stdout
    disks = system.parse_df(out)
    assert [d["path"] for d in disks] == [str(missing), "/"]
    assert disks[0]["free_gb"] > 0


def test_df_command_quotes_paths(tmp_path):
    hostile = tmp_path / "a b; touch pwned"
    subprocess.run(["bash", "-c", system.df_command([str(hostile)])], capture_output=True, text=True, check=True,
                   cwd=tmp_path)
    assert not (tmp_path / "pwned").exists()


def test_identity_on_this_machine():
    import os
    out = subprocess.run(["bash", "-c", system.IDENTITY], capture_output=True, text=True, check=True).stdout
    parsed = system.parse_identity(out)
    assert parsed["uid"] == os.getuid()
    assert parsed["systemd"] == Path("/run/systemd/system").is_dir()


def test_df_garbage_raises():
    with pytest.raises(ValueError):
        system.parse_df("dir /\ndf: /: Permission denied\n")


@pytest.mark.parametrize("raw, value", [
    ('"Ubuntu 24.04.3 LTS"', "Ubuntu 24.04.3 LTS"), ("'Debian GNU/Linux'", "Debian GNU/Linux"), ("noble", "noble"),
    ('""', ""), ("", ""), ('"a\\"b"', 'a"b'), ("a\\ b", "a b"), ("two  words", "two words"), ('"it\'s"', "it's"),
    ("'$HOME `x`'", "$HOME `x`"), ('"un"terminated"', 'un"terminated'), ('"open', "open"),
])
def test_os_release_values_read_as_the_shell_quotes_them(raw, value):
    """A plain word is taken as it is, anything else as shlex (POSIX) reads it; an unbalanced quote: the text."""
    assert system.parse_os_release(f"ID=x\nV={raw}\n")["V"] == value
