"""A program of several modules of fleet/remote shipped as one file (fleet.remote.bundle): its text, and so the digest
it is installed by (fleet/programs.py Program), is the modules' own text in one order, whatever order they are
named in; it changes when one of their texts does and only then; and on the host its modules import each other as
they do in fleet's source."""

import subprocess
import sys

from fleet import remote
from fleet.programs import Program
from fleet.resources.verify import verify_program

VERIFY = ("families", "loader_rules", "resolve_rules", "trace", *remote.package("verify"))


def test_the_same_modules_in_any_order_are_the_same_text_and_digest():
    text = remote.bundle("verify.runner", VERIFY)
    assert remote.bundle("verify.runner", tuple(reversed(VERIFY)) + VERIFY[:2]) == text
    assert verify_program().text == text and verify_program().digest == Program("verify", text).digest
    for name in VERIFY:   # each module's own text, as it is in fleet's source (repr: one string literal each)
        assert repr(remote.source(name)) in text
    assert text.endswith(remote.source("boot"))


def test_a_changed_module_changes_the_digest(monkeypatch):
    before = Program("verify", remote.bundle("verify.runner", VERIFY)).digest
    source = remote.source

    def edited(name):
        return source(name) + ("# one more line\n" if name == "verify.perf" else "")

    monkeypatch.setattr(remote, "source", edited)
    assert Program("verify", remote.bundle("verify.runner", VERIFY)).digest != before


def test_the_package_is_every_module_of_its_folder():
    assert remote.package("verify") == ("verify", "verify.allreduce", "verify.config", "verify.copies", "verify.cuda",
                                        "verify.explain", "verify.gpus", "verify.jobenv", "verify.kinds", "verify.links",
                                        "verify.loader", "verify.perf", "verify.runner")


def test_on_the_host_the_modules_are_one_package_and_a_bad_config_is_said_so(tmp_path):
    path = tmp_path / "verify"
    path.write_text(verify_program().text)
    code = (f"import runpy, sys; runpy.run_path({str(path)!r}); from fleet_remote.verify import kinds, loader; "
            "import fleet_remote.verify.runner as r; "
            "print(kinds.loader is loader, r.__spec__.origin, 'fleet' in sys.modules)")
    asked = subprocess.run([sys.executable, "-I", "-S", "-c", code], capture_output=True, text=True, timeout=120)
    assert asked.stdout.split() == ["True", "<fleet", "verify.runner>", "False"], asked
    bad = subprocess.run([sys.executable, "-I", "-S", str(path), "[1]"], capture_output=True, text=True, timeout=120)
    assert bad.returncode == 1 and "bad config '[1]': not a JSON object" in bad.stdout
