"""How tests/data/verify_kinds/ was recorded: the test lab's pod-580 (driver 580.159.04, cuda-compat 580.95.05
installed, compat not decided), applied once, then `fleet verify` clean, with a ~/.bash_profile putting compat first
(and fleet.facts.shells' trace of it), and with /etc/ld.so.conf.d/000-cuda-compat.conf + ldconfig (and ldconfig -p,
the ld.so.conf files). Run from the repository root as root: FLEET_TEST_LAB_NET=127.0.7 .venv/bin/python
tests/data/verify_kinds/record.py; then keep only the libcuda lines of the ldconfig -p file (and its header)."""
import json, pathlib, sys, tempfile
sys.path.insert(0, "tests/lab")
from fleet_lab import testing
from fleet.facts import shells
from helpers import ok
from test_apply_lab import fleet_json
from fleet.shell import quote

out = pathlib.Path("tests/data/verify_kinds")
lab = testing.start_test_lab(pathlib.Path(tempfile.mkdtemp()))
try:
    inv = str(lab.inventory_path)
    lab.reset(["pod-580"])
    code, _ = fleet_json("apply", inv, "--limit", "pod-580")
    assert code == 0
    def verify(name):
        code, doc = fleet_json("verify", inv, "--limit", "pod-580")
        rec = json.loads((lab.inventory.facts_dir / "pod-580.json").read_text())["verify"]
        keep = {k: rec[k] for k in ("passed", "checks", "kinds", "summary") if k in rec}
        (out / f"pod-580-{name}.verify.json").write_text(json.dumps(keep, indent=1) + "\n")
        print(name, code)
    verify("clean")
    ok(lab, "pod-580", "printf '# mine\\nexport LD_LIBRARY_PATH=/usr/local/cuda-13.0/compat:$LD_LIBRARY_PATH\\n' > /root/.bash_profile")
    (out / "pod-580-bash-profile.trace.txt").write_text(ok(lab, "pod-580", f"bash -c {quote(shells.command())}"))
    verify("bash-profile")
    ok(lab, "pod-580", "rm -f /root/.bash_profile; echo /usr/local/cuda-13.0/compat > /etc/ld.so.conf.d/000-cuda-compat.conf; ldconfig")
    (out / "pod-580-ld-cache.ldconfig-p.txt").write_text(ok(lab, "pod-580", "ldconfig -p"))
    (out / "pod-580-ld-cache.ld.so.conf.txt").write_text(ok(lab, "pod-580", "for f in /etc/ld.so.conf /etc/ld.so.conf.d/*.conf; do echo \"== $f\"; cat $f; done"))
    verify("ld-cache")
    ok(lab, "pod-580", "rm -f /etc/ld.so.conf.d/000-cuda-compat.conf; ldconfig")
finally:
    testing.stop_test_lab(lab)
