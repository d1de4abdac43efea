"""What `python3` and `import torch` resolve to, whatever the mechanism (issue 45, item 4), with this machine's real
bash and python3 on startup files in a temp HOME: each trap's cause observed by the trace (alias, function, hash,
PYTHONPATH, PYTHONHOME, a .pth line, the user site, an activated environment, a stray VIRTUAL_ENV), then named by
fleet/decide/resolve.py with its file:line and the fix of that cause, never the env hook's PATH sentence. The same
rules in the verify program are asserted by the lab (tests/lab/test_resolve_lab.py)."""

from __future__ import annotations

import subprocess

import pytest

from fleet.decide import shells as judge
from fleet.facts import shells

SYSTEM = "/usr/bin/python3"


def run(home) -> dict:
    out = subprocess.run(["bash", "-c", shells.command()], capture_output=True, text=True, timeout=600,
                         env={"HOME": str(home), "PATH": "/usr/bin:/bin"}).stdout
    return shells.parse(out)


def venv(path):
    subprocess.run([SYSTEM, "-m", "venv", "--without-pip", str(path)], check=True, timeout=600)
    site = next(path.glob("lib/python3*/site-packages"))
    return path, site


@pytest.fixture(scope="module")
def envs(tmp_path_factory):
    """fleet's venv with a torch (a package named torch), a second venv without one, and a torch source tree."""
    root = tmp_path_factory.mktemp("envs")
    fleet, site = venv(root / "fleet")
    (site / "torch").mkdir()
    (site / "torch" / "__init__.py").write_text("")
    other, other_site = venv(root / "projenv")
    src = root / "pytorch-src" / "torch"
    src.mkdir(parents=True)
    (src / "__init__.py").write_text("from torch._C import *\n")
    return {"fleet": fleet, "site": site, "other": other, "other_site": other_site, "src": src.parent}


def judged(home, envs, bashrc: str, profile: str = "") -> tuple[dict, dict]:
    """The trace of a HOME whose ~/.bashrc starts with fleet's venv first on PATH (as its hook leaves it), then
    `bashrc`; and decide's judgement of it."""
    (home / ".bashrc").write_text(f'export PATH={envs["fleet"]}/bin:$PATH\n' + bashrc)
    (home / ".profile").write_text(f'export PATH={envs["fleet"]}/bin:$PATH\n' + profile)
    found = run(home)
    said = judge.judge({"shells": found}, None, str(envs["fleet"]), str(envs["site"] / "torch"))
    return found, said


def python3(said: dict, kind: str) -> dict:
    hits = [f for f in said["findings"] if f["kind"] == kind and "`python3`" in f["says"]]
    assert len(hits) == 1, said["findings"]
    return hits[0]


def test_an_alias_is_named_with_its_line_in_interactive_shells_only(tmp_path, envs):
    found, said = judged(tmp_path, envs, f"alias python3={SYSTEM}\n")
    assert found["interactive"]["commands"]["python3"]["how"] == "alias"
    assert found["interactive"]["commands"]["python3"]["path"] == SYSTEM
    assert found["noninteractive"]["commands"]["python3"]["how"] == "path"     # `ssh host cmd`: no alias expansion
    hit = python3(said, "interactive")
    assert hit["cause"] == "alias" and hit["where"] == "~/.bashrc:2" and not hit["hook_fixes"]
    assert f"`alias python3={SYSTEM}` at ~/.bashrc:2" in hit["says"] and "which has no torch" in hit["says"]
    assert hit["fix"].startswith("remove the alias at ~/.bashrc:2") and "env_hooks" not in hit["fix"]
    assert not [f for f in said["findings"] if f["kind"] == "noninteractive" and "`python3`" in f["says"]]


def test_a_function_is_named_with_the_line_bash_defined_it_on(tmp_path, envs):
    found, said = judged(tmp_path, envs, "true\npython3() {\n  /usr/bin/python3 \"$@\"\n}\n")
    assert found["noninteractive"]["commands"]["python3"]["how"] == "function"
    hit = python3(said, "noninteractive")
    assert hit["cause"] == "function" and hit["where"] == "~/.bashrc:3"
    assert "remove the function python3() at ~/.bashrc:3" in hit["fix"]


def test_a_hash_p_line_is_named(tmp_path, envs):
    wrapper = tmp_path / "python3-system"     # a name hashed to another program: what runs is that program
    wrapper.write_text(f'#!/bin/sh\nexec {SYSTEM} "$@"\n')
    wrapper.chmod(0o755)
    found, said = judged(tmp_path, envs, f"hash -p {wrapper} python3\n")
    cmd = found["noninteractive"]["commands"]["python3"]
    assert cmd["how"] == "hash" and cmd["path"] == str(wrapper) and cmd["hashed"] == f"{envs['fleet']}/bin/python3"
    hit = python3(said, "noninteractive")
    assert hit["cause"] == "hash" and hit["where"] == "~/.bashrc:2" and "`hash -r` after it" in hit["fix"]


def test_a_python_hashed_by_its_bare_name_is_asked_as_bash_runs_it(tmp_path, envs):
    """bash runs a hashed path with argv[0] the bare name, from which CPython finds its prefix by searching PATH
    (getpath): the system's binary hashed as `python3` still runs fleet's venv, torch and all. Asked the same way."""
    (tmp_path / ".bashrc").write_text(f"export PATH={envs['fleet']}/bin:$PATH\nhash -p {SYSTEM} python3\n")
    typed = subprocess.run(["bash", "-c", '. ~/.bashrc; python3 -c "import sys; print(sys.prefix)"'],
                           capture_output=True, text=True, env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"})
    assert typed.stdout.strip() == str(envs["fleet"])
    found = run(tmp_path)
    cmd = found["noninteractive"]["commands"]["python3"]
    assert cmd["how"] == "hash" and cmd["path"] == SYSTEM
    assert found["noninteractive"]["pythons"][SYSTEM]["prefix"] == str(envs["fleet"])
    said = judge.judge({"shells": found}, None, str(envs["fleet"]), str(envs["site"] / "torch"))
    assert not [f for f in said["findings"] if "`python3`" in f["says"] and f["kind"] != "login"]   # no ~/.profile


def test_pythonpath_to_a_source_tree_is_named_in_login_shells(tmp_path, envs):
    found, said = judged(tmp_path, envs, "", f"export PYTHONPATH={envs['src']}\n")
    assert found["login"]["pythons"][f"{envs['fleet']}/bin/python3"]["torch_from"] == {"by": "PYTHONPATH"}
    hit = python3(said, "login")
    assert hit["cause"] == "PYTHONPATH" and hit["variable"] == "PYTHONPATH" and hit["where"] == "~/.profile:2"
    assert f"take {envs['src']} off PYTHONPATH at ~/.profile:2" in hit["fix"] and "torch._C" in hit["fix"]
    assert not [f for f in said["findings"] if f["kind"] == "interactive" and "`python3`" in f["says"]]


def test_pythonhome_that_stops_python_starting_is_named(tmp_path, envs):
    found, said = judged(tmp_path, envs, "export PYTHONHOME=/nonexistent\n")
    assert not found["noninteractive"]["pythons"][f"{envs['fleet']}/bin/python3"]["ran"]
    hit = python3(said, "noninteractive")
    assert hit["cause"] == "PYTHONHOME" and hit["where"] == "~/.bashrc:2" and "does not even start" in hit["says"]
    assert "remove PYTHONHOME at ~/.bashrc:2" in hit["fix"]


def test_a_pth_line_is_named_by_file_and_line(tmp_path, envs):
    pth = envs["site"] / "zz-extra.pth"
    pth.write_text(f"# a comment\n{envs['src']}\n")
    try:
        # the venv's own torch found first: not this one; so the test's venv lacks its own torch for a moment
        (envs["site"] / "torch").rename(envs["site"] / "torch.off")
        found, said = judged(tmp_path, envs, "")
    finally:
        (envs["site"] / "torch.off").rename(envs["site"] / "torch")
        pth.unlink()
    answer = found["noninteractive"]["pythons"][f"{envs['fleet']}/bin/python3"]
    assert answer["torch"] == f"{envs['src']}/torch" and answer["torch_from"]["by"] == "pth"
    hit = python3(said, "noninteractive")
    assert hit["cause"] == ".pth" and hit["where"] == f"{pth}:2" and f"delete line 2 of {pth}" in hit["fix"]


def test_the_user_site_under_pythonuserbase_is_named(tmp_path, envs):
    base = tmp_path / "userbase"
    ver = subprocess.run([SYSTEM, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"], capture_output=True,
                         text=True, check=True).stdout.strip()
    site = base / "lib" / f"python{ver}" / "site-packages" / "torch"
    site.mkdir(parents=True)
    (site / "__init__.py").write_text("")
    found, said = judged(tmp_path, envs, f"export PYTHONUSERBASE={base}\nexport PATH=/usr/bin:$PATH\n")
    assert found["noninteractive"]["pythons"][SYSTEM]["torch_from"] == {"by": "user"}
    hit = python3(said, "noninteractive")
    assert hit["cause"] == "user site" and hit["where"] == "~/.bashrc:2" and "PYTHONNOUSERSITE=1" in hit["fix"]


def test_an_environment_activated_after_the_guard_is_named_and_agrees_with_virtual_env(tmp_path, envs):
    found, said = judged(tmp_path, envs, f". {envs['other']}/bin/activate\n")
    shell = found["interactive"]
    assert shell["VIRTUAL_ENV"] == str(envs["other"])
    assert shell["pythons"][shell["commands"]["python3"]["path"]]["prefix"] == str(envs["other"])
    hit = python3(said, "interactive")
    assert hit["cause"] == "activated" and hit["variable"] == "VIRTUAL_ENV"
    assert hit["where"].startswith("~/.bashrc:2 (via ") and f"set python_env={envs['other']}" in hit["fix"]
    assert not [f for f in said["findings"] if f.get("cause") == "VIRTUAL_ENV"]     # python3 and VIRTUAL_ENV agree
    (envs["other_site"] / "torch").mkdir()
    try:
        (envs["other_site"] / "torch" / "__init__.py").write_text("")
        _, said = judged(tmp_path, envs, f". {envs['other']}/bin/activate\n")
    finally:
        subprocess.run(["rm", "-rf", str(envs["other_site"] / "torch")], check=True)
    assert not [f for f in said["findings"] if "`python3`" in f["says"]]       # its own torch: a note, no finding
    assert any(f"{envs['other']}" in n and "activated at ~/.bashrc:2" in n for n in said["notes"]), said["notes"]


def test_a_virtual_env_that_python3_does_not_run_is_named(tmp_path, envs):
    _, said = judged(tmp_path, envs, f"export VIRTUAL_ENV={envs['other']}\n")
    hit = [f for f in said["findings"] if f.get("cause") == "VIRTUAL_ENV" and f["kind"] == "noninteractive"]
    assert len(hit) == 1 and hit[0]["where"] == "~/.bashrc:2" and f"sys.prefix is {envs['fleet']}" in hit[0]["says"]


def test_path_alone_keeps_the_hooks_fix(tmp_path, envs):
    _, said = judged(tmp_path, envs, "export PATH=/usr/bin:$PATH\n")
    hit = python3(said, "noninteractive")
    assert hit["cause"] == "PATH" and hit["hook_fixes"] and "env_hooks_venv_on_path" in hit["fix"]


def test_an_alias_line_keeps_no_secret(tmp_path, envs):
    found, said = judged(tmp_path, envs, "alias python3='HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyz0123 /usr/bin/python3'\n")
    cmd = found["interactive"]["commands"]["python3"]
    assert "hf_abcdef" not in str(found) and "hf_abcdef" not in str(said)
    assert cmd["how"] == "alias" and cmd["by"]["line"] == 2 and "HF_TOKEN=***" in cmd["alias"]


def test_a_comment_above_a_function_leaves_the_lines_verify_fingerprints_alone(tmp_path, envs):
    """The fingerprint digests each kind's @@cmd and @@py lines (fleet/remote/fingerprint_trace.sh) and leaves line
    numbers out, so a comment does not re-run verify: a function's line is its own @@def line, not in @@cmd."""
    body = "python3() {\n  /usr/bin/python3 \"$@\"\n}\n"

    def lines(bashrc: str) -> list[str]:
        (tmp_path / ".bashrc").write_text(bashrc)
        out = subprocess.run(["bash", "-c", shells.command()], capture_output=True, text=True, timeout=600,
                             env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}).stdout
        return [line for line in out.splitlines() if line.startswith(("@@cmd ", "@@py "))]

    before, after = lines(body), lines("# a comment\n" + body)
    assert before == after and any("\tfunction\t" in line for line in before)
    found = run(tmp_path)
    assert found["noninteractive"]["commands"]["python3"]["by"]["line"] == 2
