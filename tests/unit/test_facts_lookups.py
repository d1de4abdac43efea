"""The probe's builtin answers to what it used to ask processes for, held to those processes: what the shells' trace
prints for each command a user types equals `command -v` and `readlink -f` in the same shell, and the UsePAM line
equals `cat | grep -iE | head -n 1`, run for real by this machine's bash in each case."""

import os
import subprocess

import pytest

from fleet.facts import loader, shells


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    d = tmp_path_factory.mktemp("lookups")
    for sub in ("bin1", "v/bin", "rel", "bin2"):
        (d / sub).mkdir(parents=True)
    (d / "bin1/python3").write_text("#!/bin/sh\necho py\n")
    (d / "bin1/python3").chmod(0o755)
    (d / "bin1/nvcc").write_text("not executable")          # command -v names it all the same; hash does not
    (d / "bin1/nvcc").chmod(0o644)
    os.symlink("/nonexistent/python", d / "bin1/python")       # dangling
    os.symlink("/usr/bin/python3", d / "v/bin/python3")        # a venv's chain of links
    os.symlink("python3", d / "v/bin/python")
    (d / "v/bin/pip").write_text(f"#!{d}/v/bin/python3\n")
    (d / "v/bin/pip").chmod(0o755)
    (d / "v/pyvenv.cfg").write_text("home = /usr/bin\n")
    (d / "rel/pip").write_text("#!/bin/sh\n")
    (d / "rel/pip").chmod(0o755)
    (d / "bin2/nvcc").write_text("#!/bin/sh\n")               # an executable nvcc after a non-executable one
    (d / "bin2/nvcc").chmod(0o755)
    return d


CASES = {
    "venv first": "PATH={d}/v/bin:/usr/bin:/bin",
    "non-executable and dangling": "PATH={d}/bin1:/usr/bin:/bin",
    "non-executable before an executable": "PATH={d}/bin1:{d}/bin2:/usr/bin:/bin",
    "aliases": "PATH={d}/v/bin:/usr/bin:/bin; alias python3='/usr/bin/python3 -s'; alias pip=\"echo it's\"",
    "aliases expanded": "shopt -s expand_aliases; PATH={d}/v/bin:/usr/bin; alias nvcc=ls",
    "a function": "PATH={d}/v/bin:/usr/bin:/bin; python() {{ :; }}",
    "no hashing": "PATH={d}/v/bin:/usr/bin:/bin; set +h",
    "nothing found": "PATH=/nonexistent",
    "relative entries": "cd {d}; PATH=rel:.:/usr/bin:/bin",
    "an empty entry": "cd {d}/rel; PATH=:/usr/bin:/bin",
    "hashed before PATH changed": "PATH=/usr/bin:/bin; hash python3; PATH={d}/v/bin:/usr/bin:/bin",
    "hashed by hand": "PATH=/usr/bin:/bin; hash -p /bin/true python3",
}

# What runs when a user types each name: `command -v`, and for an alias (where bash expands them) the alias's first
# word, found as bash finds it (a path as it is, a bare name on PATH); then the file it resolves to. The facts keep
# that the name is an alias, and its text, beside (issue 45 item 4: the cause named with its line).
ORACLE = r"""for c in python3 python pip nvcc; do
  p=$(command -v "$c" 2>/dev/null) || p=
  case $p in "alias "*) set -f; set -- ${BASH_ALIASES[$c]}; set +f
                        case $1 in /*) p=$1 ;; *) p=$(type -P -- "$1" 2>/dev/null) || p= ;; esac ;; esac
  r=; case $p in /*) r=$(readlink -f -- "$p" 2>/dev/null) ;; esac
  printf '%s\t%s\t%s\n' "$c" "$p" "$r"
done"""


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("interactive", [False, True])
def test_each_command_resolves_as_command_v_and_readlink_say(tree, case, interactive):
    setup = CASES[case].format(d=tree)
    flags = ["--norc", "--noprofile"] + (["-i"] if interactive else [])

    def run(body: str) -> str:
        return subprocess.run(["bash", *flags, "-c", f"{setup}\n{body}"], capture_output=True, text=True,
                              stdin=subprocess.DEVNULL, timeout=60).stdout

    want = run(ORACLE).splitlines()
    cmds = [line[len("@@cmd "):].split("\t") for line in run(shells._CMDS).splitlines() if line.startswith("@@cmd ")]
    assert ["\t".join(c[:3]) for c in cmds] == want
    assert len(want) == 4
    aliased = run("for c in python3 python pip nvcc; do [ -n \"${BASH_ALIASES[$c]+x}\" ] && shopt -q expand_aliases "
                  "&& echo \"$c\"; done").split()
    assert [c[0] for c in cmds if c[4] == "alias"] == aliased


SSHD = [({}, "UsePAM yes\n"), ({}, "# x\n  usepam No\nUsePAM yes\n"), ({"a.conf": "UsePAM no\n"}, "UsePAM yes\n"),
        ({"b.conf": "X 1\n", "a.conf": "Port 2\n"}, "\tUSEPAM\tyes\n"), ({}, "#UsePAM yes\n"), ({}, ""),
        ({}, "UsePAM yes"), ({"z.conf": "UsePAMx yes\n"}, "UsePAM  yes\r\n"), ({}, None),
        ({"a.conf": "Include x\n", "b.conf": "usepam YES\n"}, "UsePAM no\n")]


@pytest.mark.parametrize("drop_ins,main", SSHD)
def test_the_usepam_line_is_what_cat_grep_head_print(tmp_path, drop_ins, main):
    (tmp_path / "sshd_config.d").mkdir()
    for name, text in drop_ins.items():
        (tmp_path / "sshd_config.d" / name).write_text(text)
    if main is not None:
        (tmp_path / "sshd_config").write_text(main)
    pipeline = ("u=$(cat /etc/ssh/sshd_config.d/*.conf /etc/ssh/sshd_config 2>/dev/null | "
                "grep -iE '^[[:space:]]*UsePAM[[:space:]]' | head -n 1)")

    def run(snippet: str) -> str:
        text = (snippet + '\nprintf "[%s]" "$u"').replace("/etc/ssh", str(tmp_path))
        return subprocess.run(["bash", "-c", text], capture_output=True, text=True, timeout=60,
                              env={"LC_ALL": "C", "PATH": "/usr/bin:/bin"}).stdout

    assert run(loader.USEPAM) == run(pipeline)


VERSION_JSON = [
    # CUDA 13.0's own (pretty-printed, the toolkit's version two lines under "cuda")
    '{\n   "cuda" : {\n      "name" : "CUDA SDK",\n      "version" : "13.0.2"\n   },\n   "cuda_cccl" : {\n'
    '      "name" : "CUDA C++ Core Compute Libraries",\n      "version" : "13.0.85"\n   }\n}\n',
    '{"cuda": {"name": "CUDA SDK", "version": "12.8.1"}, "nvcc": {"version": "12.8.93"}}',
    '{\n "cuda":\n {\n  "a": 1,\n  "b": 2,\n  "c": 3,\n  "version": "9.9"\n }\n}\n',      # beyond -A3: nothing
    '{\n "nvcc": {"version": "1.2"},\n "cuda": {\n "version": "13.1.0" }\n}',
    '{"version": "x"}\n',
    '',
    '{\n "cuda" : { "version" : "13.0.0", "version" : "13.0.1" }\n}',
    '{\n "cuda":{"version":"13.0.48"}\n}',       # compact: what the old grep kept, kept
    '"cuda" : x\n"version" : "a: b"\n',
]


@pytest.mark.parametrize("text", VERSION_JSON)
def test_nvcc_version_json_is_read_as_grep_reads_it(tmp_path, text):
    (tmp_path / "version.json").write_text(text)
    f = str(tmp_path / "version.json")
    pipeline = (f"x=$(grep -m1 -A3 '\"cuda\" *:' {f} | grep -m1 -o '\"version\" *: *\"[^\"]*\"')")
    funcs = shells._CMDS.split("\nfor c in", 1)[0]      # the helper functions the block defines first
    builtin = f"{funcs}\nfleet_nvcc_json {f}"
    tail = '; x=${x##*: }; x=${x//\\"/}; printf "[%s]" "$x"'

    def run(snippet: str) -> str:
        return subprocess.run(["bash", "-c", snippet + tail], capture_output=True, text=True, timeout=60,
                              env={"LC_ALL": "C", "PATH": "/usr/bin:/bin"}).stdout

    assert run(builtin) == run(pipeline)


@pytest.fixture(scope="module")
def fake_cuda(tmp_path_factory):
    """A directory holding a libcuda.so.1 the real loader takes (a copy of libm: trace mode runs no code of it)."""
    d = tmp_path_factory.mktemp("cuda")
    libm = next(p for p in ("/lib/x86_64-linux-gnu/libm.so.6", "/usr/lib/x86_64-linux-gnu/libm.so.6",
                            "/lib/aarch64-linux-gnu/libm.so.6", "/usr/lib64/libm.so.6") if os.path.exists(p))
    (d / "lib").mkdir()
    (d / "lib" / "libcuda.so.1.0").write_bytes(open(libm, "rb").read())
    os.symlink("libcuda.so.1.0", d / "lib" / "libcuda.so.1")
    for i in range(30):
        (d / f"empty{i:02d}").mkdir()
    return d


LOADER_CASES = {
    "none found": "unset LD_LIBRARY_PATH LD_PRELOAD",
    "on LD_LIBRARY_PATH": "export LD_LIBRARY_PATH={d}/lib",
    "after empty directories": "export LD_LIBRARY_PATH={d}/empty00:{d}/empty01:{d}/lib",
    "a long search": "export LD_LIBRARY_PATH=" + ":".join("{d}/empty%02d" % i for i in range(30)) + ":{d}/lib",
    "preloaded": "export LD_PRELOAD={d}/lib/libcuda.so.1",
    "preload missing": "export LD_PRELOAD=/nonexistent/libcuda.so.1",
}


@pytest.mark.parametrize("case", sorted(LOADER_CASES))
def test_the_loader_query_reads_ld_debug_as_a_read_loop_does(fake_cuda, case):
    """fleet_ldq walks LD_DEBUG's lines in the variable (read on a here-string takes a system call a byte): the same
    lines as `while IFS= read -r l; do ...; done <<< "$o"`, held to that loop on the real loader's output."""
    setup = LOADER_CASES[case].format(d=fake_cuda)
    loop = loader.QUERY.replace("  o+=$'\\n'\n  while [ -n \"$o\" ]; do\n    l=${o%%$'\\n'*}; o=${o#*$'\\n'}\n",
                                "  while IFS= read -r l; do\n").replace("    esac\n  done\n}", "    esac\n  done <<< \"$o\"\n}")
    assert loop != loader.QUERY

    def run(query: str) -> str:
        return subprocess.run(["bash", "--norc", "-c", f"{setup}\n{query}"], capture_output=True, text=True,
                              timeout=60, env={"PATH": "/usr/bin:/bin", "LC_ALL": "C"}).stdout

    got = run(loader.QUERY)
    assert got == run(loop)
    assert "@@ldvar LD_LIBRARY_PATH=" in got
    if case in ("on LD_LIBRARY_PATH", "after empty directories", "a long search", "preloaded"):
        assert f"@@ldobj {fake_cuda}/lib/libcuda.so.1" in got or "@@ldfind" in got
