"""fleet ships without its lab: with fleet_lab unimportable, `import fleet`, every module of fleet and every
command but `lab` work, and `fleet lab` says how to get the lab (exit 2). Run in a fresh interpreter whose
import system refuses fleet_lab (a meta-path finder), as where only the product is installed."""

from __future__ import annotations

import subprocess
import sys
import textwrap

PROGRAM = textwrap.dedent("""
    import sys

    class NoLab:
        def find_spec(self, name, path=None, target=None):
            if name == "fleet_lab" or name.startswith("fleet_lab."):
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            return None

    sys.meta_path.insert(0, NoLab())
    import importlib, io, pkgutil, tempfile, pathlib
    import fleet
    from fleet.remote import SCRIPTS
    # fleet.__main__ runs the CLI on import; fleet/remote's SCRIPTS are the host's programs, compiled, never imported
    scripts = {f"fleet.remote.{name}" for name in SCRIPTS}
    for info in pkgutil.walk_packages(fleet.__path__, "fleet."):
        if info.name in scripts:
            compile(pathlib.Path(fleet.__path__[0], "remote", info.name.split(".")[-1] + ".py").read_text(),
                    info.name, "exec")
        elif info.name != "fleet.__main__":
            importlib.import_module(info.name)
    from rich.console import Console
    from fleet.cli import main
    from fleet.commands import NAMES
    from fleet.env import Environment

    def run(*argv):
        out, err = io.StringIO(), io.StringIO()
        env = Environment(console=Console(file=out, width=200), err_console=Console(file=err, width=200, soft_wrap=True))
        try:
            code = main(list(argv), env)
        except SystemExit as exc:   # argparse's --help
            code = exc.code
        return code, out.getvalue() + err.getvalue()

    for name in NAMES:
        if name != "lab":
            assert run(name, "--help")[0] == 0, name
    inv = pathlib.Path(tempfile.mkdtemp()) / "local.yaml"
    inv.write_text("hosts:\\n  here: {connection: local}\\n")
    code, out = run("run", str(inv), "--", "echo", "fleet-without-lab")
    assert code == 0 and "fleet-without-lab" in out, out
    code, out = run("lab", "status")
    print("LAB", code, " ".join(out.split()))
    assert "fleet_lab" not in sys.modules
    print("OK")
""")


def test_fleet_and_its_commands_work_without_the_lab_package():
    proc = subprocess.run([sys.executable, "-c", PROGRAM], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[-1] == "OK"
    lab = next(line for line in lines if line.startswith("LAB "))
    assert lab.startswith("LAB 2 ") and "fleet_lab" in lab and "pip install -e '.[test]'" in lab
