"""How tests/data/trace/ was recorded: the shells' trace (fleet.facts.shells.command()) run by this machine's real
bash (Debian's bash 5) from HOMEs laid out under /tmp/fleet-trace (startup files that set LD_LIBRARY_PATH through a
sourced file, CUDA_VISIBLE_DEVICES, another toolkit's nvcc and CUDA_HOME first, a venv whose python finds a torch),
kept as *.trace.txt; then what the two parsers of that trace made of each, before they became one
(fleet/facts/shells.py parse and fleet/remote/verify_host.py parse_trace, at f08df0b), kept as expected.json:
the facts' record of each, and what the verify program named from it (the startup line of each directory on each
kind's LD_LIBRARY_PATH, the file:line of each variable). Run from the repository root at that commit:
.venv/bin/python tests/data/trace/record.py
Recorded again (issue 45) with the trace's two changes, each a deliberate change of what is pinned: shells_trace.awk
reads `@unset@` beside PS4's `@@` separators (before, an unset LD_LIBRARY_PATH read as `@unset` and named the line
that unset it as PATH's setter: those PATH setters are gone, and `before`/`after` of such a change read null), and
each kind's `families` (every variable of the families a GPU job reads, fleet/remote/families.py). Then (issue 45's
gaps) each kind's four new keys were added to expected.json's facts, empty as these traces (recorded before the
lines that fill them) read: unset_by, limits, limits_set_by and nccl_conf; nothing else in it changed."""
import json, pathlib, shutil, subprocess, sys

sys.path.insert(0, "tests/unit")
from fleet.facts import shells
from toolkits import lay_toolkit

out = pathlib.Path("tests/data/trace")
ROOT = pathlib.Path("/tmp/fleet-trace")


def traced(name, files, venv=False):
    home = ROOT / name
    shutil.rmtree(home, ignore_errors=True)
    home.mkdir(parents=True)
    for rel, text in files.items():
        (home / rel).parent.mkdir(parents=True, exist_ok=True)
        (home / rel).write_text(text.format(home=home, root=ROOT))
    if venv:   # a venv's python3 (a link to the system's) that finds a torch package, and its pip
        site = home / "venv/lib/python3/site-packages/torch"
        site.mkdir(parents=True)
        (site / "__init__.py").write_text("")
        (home / "venv/bin").mkdir(parents=True)
        (home / "venv/bin/python3").write_text(f"#!/bin/sh\nPYTHONPATH={site.parent} exec /usr/bin/python3 \"$@\"\n")
        (home / "venv/bin/python3").chmod(0o755)
        (home / "venv/bin/python").symlink_to("python3")
        (home / "venv/bin/pip").write_text(f"#!{home}/venv/bin/python3\nprint('pip')\n")
        (home / "venv/bin/pip").chmod(0o755)
    text = subprocess.run(["bash", "-c", shells.command()], capture_output=True, text=True, timeout=300,
                          env={"HOME": str(home), "PATH": "/usr/bin:/bin"}).stdout
    (out / f"{name}.trace.txt").write_text(text)


if __name__ == "__main__":
    shutil.rmtree(ROOT, ignore_errors=True)
    lay_toolkit(ROOT / "cuda-12.4", "12.4.1")
    lay_toolkit(ROOT / "cuda-13.0", "13.0.2")
    traced("pod-setup", {   # tests/unit/test_facts_shells.py's: compat first through a sourced file, a secret
        ".bashrc": "export LD_LIBRARY_PATH=/opt/top${{LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}}\ncase $- in\n  *i*) ;;\n"
                   "  *) return;;\nesac\necho 'welcome'\n. \"$HOME/pod_setup.sh\"\n",
        "pod_setup.sh": "export CUDA_HOME=/usr/local/cuda-13.0\nexport LD_LIBRARY_PATH=/usr/local/cuda-13.0/compat:"
                        "$LD_LIBRARY_PATH\nexport HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyz0123\n",
        ".profile": "if [ -f \"$HOME/.bashrc\" ]; then . \"$HOME/.bashrc\"; fi\nexport LD_LIBRARY_PATH=/opt/login:"
                    "$LD_LIBRARY_PATH\nexport PYTHONPATH=/opt/py SECRET_KEY=s3cr3t-value-1234567890\n"})
    traced("visibility", {   # tests/unit/test_verify_visibility.py's: a hidden GPU, another toolkit first, a venv
        ".bashrc": "export CUDA_VISIBLE_DEVICES=1\ncase $- in *i*) ;; *) return;; esac\n"
                   "export PATH={root}/cuda-12.4/bin:$PATH\nexport CUDA_HOME={root}/cuda-12.4\n",
        ".profile": ". ~/.bashrc\nexport PATH={root}/cuda-13.0/bin:{home}/venv/bin:$PATH CUDA_HOME={root}/cuda-13.0\n"
                    "export CUDA_PATH={root}/cuda-12.4 CUDA_VISIBLE_DEVICES=\n"}, venv=True)
    # what the parsers make of every trace the test holds them to
    import pytest
    sys.path.insert(0, "tests/unit")
    import test_trace_parsers as t
    with pytest.MonkeyPatch.context() as monkeypatch:
        (out / "expected.json").write_text(json.dumps(t.views(monkeypatch), indent=1, sort_keys=True) + "\n")
