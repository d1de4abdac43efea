"""What a person sees (issue 25): a no-op apply on the 4 lab hosts is a line per host plus the recap, no line is
wider than 100 columns without -v, no raw Jinja condition shows; `--check` ends with a per-host plan total and
`--detailed-exitcode` exits 4 while changes are pending (2 stays bad input). Every count is checked against the host itself (its
JSON report of the same state, and a second apply that changes nothing)."""

from __future__ import annotations

import os

import pytest
from helpers import fleet

HOSTS = ("thor", "spark", "pod-570", "pod-580")
WIDTH = 100


def fleet_text(*argv: str, width: int = WIDTH, terminal: bool = True) -> tuple[int, str, str]:
    code, text, err = fleet(*argv, width=width, terminal=terminal)   # stderr never wraps: any checkout path
    keep = os.environ.get("FLEET_TEST_TRANSCRIPTS")   # where to keep transcripts for the note (optional)
    if keep:
        with open(os.path.join(keep, "transcript.txt"), "a") as f:
            f.write(f"$ fleet {' '.join(argv)}   (exit {code})\n{text}\n")
    return code, text, err


@pytest.fixture(scope="module")
def runs(lab, fresh_apply, converged_fresh):
    """Fresh hosts: --check, --check --detailed-exitcode and the first apply, as conftest's fresh_apply ran them on a
    100-column terminal (the suite's one fresh converge of the four); then the four hosts as that apply left them
    (converged_fresh.restore: whatever other modules did to them since is gone) and a no-op apply, a no-op --check
    --detailed-exitcode and a no-op apply -v."""
    out = dict(fresh_apply["text"])
    keep = os.environ.get("FLEET_TEST_TRANSCRIPTS")   # where to keep transcripts for the note (optional)
    if keep:
        with open(os.path.join(keep, "transcript.txt"), "a") as f:
            for name in ("check", "check_exit", "first"):
                f.write(f"$ fleet apply (fresh_apply's {name}, exit {out[name][0]})\n{out[name][1]}\n")
    converged_fresh.restore(HOSTS)
    inv = str(lab.inventory_path)
    out.update({"noop": fleet_text("apply", inv),
                "noop_check_exit": fleet_text("apply", inv, "--check", "--detailed-exitcode"),
                "noop_v": fleet_text("apply", inv, "-v", width=240)})
    return out


def test_a_noop_apply_is_a_line_per_host_and_the_recap(runs):
    code, out, _ = runs["noop"]
    assert code == 0, out
    lines = out.rstrip("\n").split("\n")
    # 12 lines on the screen in all (issue 38): these, and the run log's path on stderr (the live display erases
    # the progress lines there)
    assert len(lines) + 1 <= 12, out
    for host in HOSTS:
        line = next((ln for ln in lines if ln.startswith(f"{host}: in state")), None)
        assert line is not None, out
    assert "skipped" not in "\n".join(ln for ln in lines if ln.startswith(HOSTS)).replace("skipped)", "")
    assert "condition is false" not in out and "facts." not in out, out


def test_the_first_apply_says_nothing_of_our_own_deprecated_choices(runs):
    """uv (the lab serves uv's real wheel, 0.13) calls UV_NATIVE_TLS deprecated: fleet sets UV_SYSTEM_CERTS there."""
    code, out, err = runs["first"]
    assert code == 0, out + err
    assert "torch" in err and "deprecated" not in out + err and "UV_NATIVE_TLS" not in out + err, err


def test_no_line_is_wider_than_100_columns_without_v(runs):
    for name in ("check", "first", "noop"):
        code, out, _ = runs[name]
        wide = [ln for ln in out.split("\n") if len(ln) > WIDTH]
        assert not wide, f"{name}: {wide}"
        assert "condition is false" not in out, name


def test_v_still_shows_the_tasks_in_state_and_skipped(runs):
    code, out, _ = runs["noop_v"]
    assert code == 0
    assert " ok " in out and "skipped" in out, out


def test_check_ends_with_a_per_host_total_that_apply_then_changes(runs):
    import re
    code, out, _ = runs["check"]
    assert code == 0, out
    _, first, _ = runs["first"]
    for host in HOSTS:
        planned = re.search(rf"^{re.escape(host)}: (\d+) to change, (\d+) in state", out, re.M)
        assert planned, out
        done = re.search(rf"^{re.escape(host)}: (\d+) changed", first, re.M)
        assert done, first
        assert int(planned.group(1)) == int(done.group(1)) > 0, (host, planned.group(0), done.group(0))
    assert "nothing changed" not in out


def test_detailed_exitcode_is_4_with_changes_pending_and_0_after(runs, lab):
    code, out, _ = runs["check_exit"]
    assert code == 4, out
    # a typo is not a plan: bad input keeps its own status, and nobody is asked anything
    code, out, err = fleet_text("apply", str(lab.inventory_path), "--check", "--detailed-exitcode", "--roles", "torhc")
    assert code == 2 and "did you mean 'torch'" in err, out + err
    code, out, _ = runs["noop_check_exit"]   # the hosts themselves: the apply before left nothing to change
    assert code == 0, out


def test_facts_on_a_terminal_is_a_short_view_per_host_that_the_host_confirms(runs, lab):
    """`fleet facts` at 80 columns on converged hosts: a short view per host, verify first, no name broken, the
    full table a flag away; what it says of pod-570 (compat in use, the torch and python it names, the libcuda an
    `ssh host cmd` loads) is what the host answers when asked (the loader's own map, the venv's python)."""
    import re

    from helpers import ok

    code, out, err = fleet_text("facts", str(lab.inventory_path), width=80)
    assert code == 0, err
    blocks = re.split(r"\n(?=(?:thor|spark|pod-570|pod-580)\s*\n)", out.strip("\n"))
    assert [b.split()[0] for b in blocks] == list(HOSTS), out
    assert len(out.splitlines()) <= 20 * len(HOSTS) and max(map(len, out.splitlines())) <= 80, out
    names = ("verify", "platform", "gpus", "driver", "cuda", "compat", "torch", "libcuda", "python")
    for block in blocks:
        labels = [line.split()[0] for line in block.splitlines()[1:] if not line.startswith(" ")]
        assert labels == list(names), block             # verify first; each name whole, never broken
    pod = {k: v.strip() for k, v in re.findall(r"^(\w+) +(.+)$", blocks[HOSTS.index("pod-570")], re.M)}
    assert pod["compat"].startswith("580.95.05 in use"), pod
    version, python = re.match(r"(\S+) \(CUDA [\d.]+\): (\S+)$", pod["torch"]).groups()
    assert ok(lab, "pod-570", f"{python} -c 'import torch; print(torch.__version__)'").strip() == version
    loaded = ok(lab, "pod-570", "python3 -c \"import ctypes; ctypes.CDLL('libcuda.so.1'); "
                                "print([l.split()[-1] for l in open('/proc/self/maps') if 'libcuda' in l][0])\"")
    assert pod["libcuda"].startswith("ssh cmd: compat 580.95.05 via LD_LIBRARY_PATH"), pod
    assert loaded.strip().endswith("/compat/libcuda.so.580.95.05"), loaded
    assert "fleet facts --all" in err
    code, full, _ = fleet_text("facts", str(lab.inventory_path), "--all", width=80)
    assert code == 0 and "torch.arch_list" in full and "verify.fingerprint_parts.torch" in full, full
    assert max(map(len, full.splitlines())) <= 80, full
