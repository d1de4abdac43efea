"""`fleet bootstrap` on a fresh lab pod (real sshd, real apt/pip/git, the real loader), from its SSH line.

The pod's key is not in any known-hosts file fleet reads for a host without `lab:`: bootstrap takes it on
first use into fleet's own file under the test's HOME, as it would for a rented pod.
"""

from __future__ import annotations

import io
import json

import pytest
import yaml
from rich.console import Console

from fleet.cli import main
from fleet.env import Environment
from fleet_lab import paths

from helpers import ok, pods_inventory_text

POD = "pod-570"
HEADER = "# pods for the bootstrap test\n# (a copy of the lab's sources, without its pods)\n"


def fleet(tmp_path, *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    env = Environment(console=Console(file=out, width=240), err_console=Console(file=err, width=240, soft_wrap=True), cwd=tmp_path)
    return main(list(argv), env), out.getvalue(), err.getvalue()


def pods_inventory(lab, where, **extra_vars) -> str:
    """The lab's variables (its mirror) and its thor, as a person's file with comments, as the default inventory of
    the HOME `where`: no pod in it yet."""
    text = pods_inventory_text(lab, HEADER, **extra_vars)
    path = where / ".config" / "fleet" / "pods.yaml"     # the default inventory of a HOME (fleet/inventory/home.py)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return text


def ssh_line(lab, name: str) -> str:
    return f"ssh root@{lab.inventory.hosts[name].address} -p 22 -i {paths.lab_key(lab.root)}"


@pytest.fixture(scope="module")
def bootstrapped(lab, tmp_path_factory):
    """A fresh pod bootstrapped twice into a temp inventory (JSON, then the summary a person reads)."""
    work = tmp_path_factory.mktemp("bootstrap")
    with pytest.MonkeyPatch.context() as mp:       # the autouse isolated HOME is per test; this is per module
        mp.setenv("HOME", str(work / "home"))
        mp.setenv("XDG_CONFIG_HOME", str(work / "home" / ".config"))
        mp.delenv("SSH_AUTH_SOCK", raising=False)
        lab.reset([POD])
        original = pods_inventory(lab, work / "home")
        first = fleet(work, "bootstrap", ssh_line(lab, POD), "--json")
        after_first = (work / "home" / ".config" / "fleet" / "pods.yaml").read_text()
        second = fleet(work, "bootstrap", ssh_line(lab, POD))
    return work, original, after_first, first, second


def test_a_fresh_pod_ends_verified_and_written_once(bootstrapped, lab):
    work, original, after_first, (code, out, err), _ = bootstrapped
    assert code == 0, out[-3000:] + err[-3000:]
    doc = json.loads(out)
    name = "pod-" + lab.inventory.hosts[POD].address.rsplit(".", 1)[1]
    host = doc["hosts"][name]
    assert host["bootstrap"]["verify"]["passed"] is True
    assert host["changed"] > 0 and host["failed"] == 0
    assert host["bootstrap"]["added"] is True and host["bootstrap"]["platform"] == "x86_64-dgpu"
    assert set(host["bootstrap"]["phases"]) == {"connect", "facts", "apply", "verify"}
    # read off the first probe (it carries `fleet health`'s own sources), before anything was installed: no command
    # nor phase of its own (bench/bootstrap_time.py counts the commands: 6 -> 5 on a pod with nothing to download)
    assert host["bootstrap"]["health"]["verdict"] == "healthy"
    # the key was taken on first use, into fleet's own known-hosts file under this test's HOME
    assert "SHA256:" in host["bootstrap"]["host_key"]
    known = (work / "home" / ".config" / "fleet" / "known_hosts").read_text()
    assert lab.inventory.hosts[POD].address in known
    # the inventory: every line kept, the pod added once, under hosts:
    lines = after_first.splitlines()
    start = lines.index(next(line for line in lines if line.startswith(f"  {name}:")))
    entry = lines[start:start + 5]
    assert [line.strip().split(":")[0] for line in entry] == [name, "address", "port", "user", "key"]
    assert lines[:start] + lines[start + 5:] == original.splitlines()
    assert after_first.count(f"address: {lab.inventory.hosts[POD].address}") == 1
    assert start < lines.index("# groups come after the hosts")
    record = json.loads((work / "home" / ".config" / "fleet" / "facts" / f"{name}.json").read_text())
    assert record["verify"]["passed"] is True and record["torch"]["cuda_available"] is True


def test_a_second_bootstrap_changes_nothing(bootstrapped):
    work, _, after_first, _, (code, out, err) = bootstrapped
    assert code == 0, out + err
    assert (work / "home" / ".config" / "fleet" / "pods.yaml").read_text() == after_first
    assert "nothing: the pod was in state" in out
    assert "already in" in out and "left as it was" in out
    assert "verify passed" in out
    assert "connect: ssh root@" in out and "-p 22 -i " in out   # plain `key: value` lines in a pipe


@pytest.mark.parametrize("extra,reason", [
    ({"torch_min_free_gb": 1000000}, "GB free at"),
    ({"torch_source": "jetson"}, "serves aarch64 (sbsa) wheels and this host is x86_64"),
])
def test_a_pod_that_cannot_be_provisioned_is_not_written(lab, tmp_path, isolated_home, extra, reason):
    lab.reset(["pod-580"])
    original = pods_inventory(lab, isolated_home, **extra)
    code, out, err = fleet(tmp_path, "bootstrap", ssh_line(lab, "pod-580"))
    assert code == 1
    assert "cannot be provisioned" in err and reason in err
    assert (isolated_home / ".config" / "fleet" / "pods.yaml").read_text() == original
    assert "not added" in out


def test_a_changed_host_key_is_still_refused(lab, tmp_path, isolated_home):
    """Bootstrap takes a NEW key on first use; a key that differs from the one on record is never accepted."""
    import subprocess

    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp_path / "other")], check=True)
    known = isolated_home / ".config" / "fleet" / "known_hosts"
    known.parent.mkdir(parents=True)
    other = (tmp_path / "other.pub").read_text().split()
    known.write_text(f"{lab.inventory.hosts['pod-580'].address} {other[0]} {other[1]}\n")
    before = known.read_bytes()
    original = pods_inventory(lab, isolated_home)
    code, out, err = fleet(tmp_path, "bootstrap", ssh_line(lab, "pod-580"), "--wait", "0")
    assert code == 1
    assert "HOST KEY CHANGED" in err and "refusing to connect" in err
    assert known.read_bytes() == before
    assert (isolated_home / ".config" / "fleet" / "pods.yaml").read_text() == original


def test_a_failed_apply_keeps_the_entry_so_the_pod_can_be_resumed(lab, tmp_path, isolated_home):
    """Written once the pod is known provisionable, before the first change (fleet/workflows/bootstrap.py says why)."""
    lab.reset(["pod-580"])
    pods_inventory(lab, isolated_home, cutlass_ref="v0.0.0-no-such-tag")
    code, out, err = fleet(tmp_path, "bootstrap", ssh_line(lab, "pod-580"), "--json")
    doc = json.loads(out)
    name = next(iter(doc["hosts"]))
    assert code == 1
    assert "cutlass: CUTLASS at v0.0.0-no-such-tag" in doc["hosts"][name]["bootstrap"]["error"]
    assert "run the same bootstrap again" in doc["hosts"][name]["bootstrap"]["error"]
    assert doc["hosts"][name]["bootstrap"]["added"] is True
    path = isolated_home / ".config" / "fleet" / "pods.yaml"
    text = path.read_text()
    assert text.count(f"address: {lab.inventory.hosts['pod-580'].address}") == 1
    # the retry, as a person types it: the same line with the setting that fixes it. Its --set is kept in the pod's
    # entry, so the `next` command its summary prints (run as printed) runs with it and changes nothing.
    code, out, err = fleet(tmp_path, "bootstrap", ssh_line(lab, "pod-580"), "--set", "cutlass_ref=v4.3.0")
    assert code == 0, out[-3000:] + err[-3000:]
    assert f"inventory: already in ~/.config/fleet/pods.yaml as {name}; --set kept in its vars: cutlass_ref=v4.3.0" \
        in out, out
    entry = yaml.safe_load(path.read_text())["hosts"][name]
    assert entry["vars"] == {"cutlass_ref": "v4.3.0"}, entry
    assert path.read_text().replace("      cutlass_ref: v4.3.0\n", "").replace(
        "    vars:                  # --set at bootstrap\n", "") == text         # every other line as it was
    nxt = next(line.split(": ", 1)[1] for line in out.splitlines() if line.startswith("next: "))
    assert nxt == f"fleet apply --limit {name}", out
    code, out, err = fleet(tmp_path, *nxt.split()[1:], "--json")
    assert code == 0, out[-3000:] + err[-3000:]
    again = json.loads(out)["hosts"][name]
    assert (again["changed"], again["failed"]) == (0, 0), again
    assert ok(lab, "pod-580", "git -C /opt/cutlass describe --tags").strip() == "v4.3.0"


def test_a_key_the_pod_refuses_is_named_as_the_i_key_without_waiting_for_a_booting_pod(lab, tmp_path, isolated_home):
    """Issue 50: a wrong -i cost a renter the whole --wait (300 s) and then blamed an inventory that did not exist
    yet. A refused key is tried again only as long as a provider may still be installing keys, and the sentence
    names the -i key."""
    import subprocess

    key = tmp_path / "not-the-pods-key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    address = lab.inventory.hosts["pod-580"].address
    code, out, err = fleet(tmp_path, "bootstrap", f"ssh root@{address} -p 22 -i {key}", "--json")
    assert code == 1, out + err
    doc = next(iter(json.loads(out)["hosts"].values()))["bootstrap"]
    said = " ".join(doc["error"].split())
    assert f"refused the key -i {key} (tried for 20s, as long as a provider may still be installing keys)" in said
    assert "give -i the private key whose public half is in the pod's settings" in said
    assert "inventory" not in said and "'key:'" not in said
    assert doc["phases"]["connect"] < 300 and doc["added"] is False       # not the whole --wait
    assert not (isolated_home / ".config" / "fleet" / "pods.yaml").exists()


def test_a_lab_pod_bootstraps_with_the_defaults_and_its_pins_into_a_new_inventory(lab, tmp_path):
    """The README's rehearsal (issue 25): no inventory yet, fleet's defaults, the lab's keyring pinned for this pod
    only (--keyring-pins), the perf smoke off as inventories/lab.yaml has it (--set verify_perf=off, written false: the stand-in
    torch computes in pure Python). Then the host is asked, and the summary's `fleet apply` changes nothing."""
    lab.reset([POD])
    pins = paths.lab_keyring_pins(lab.root)
    code, out, err = fleet(tmp_path, "bootstrap", ssh_line(lab, POD), "--name", "lab-pod", "--inventory",
                           "lab-pods.yaml", "--keyring-pins", str(pins), "--set", "verify_perf=off", "--json")
    assert code == 0, out[-3000:] + err[-3000:]
    host = json.loads(out)["hosts"]["lab-pod"]
    assert host["bootstrap"]["added"] is True and host["failed"] == 0 and host["changed"] > 0
    # the pins and the --set value are this pod's own, in its entry: no top-level keyring_pins for other hosts
    doc = yaml.safe_load((tmp_path / "lab-pods.yaml").read_text())
    assert "keyring_pins" not in doc and "vars" not in doc
    wanted = dict(line.split()[::-1] for line in pins.read_text().splitlines() if line.strip())
    assert doc["hosts"]["lab-pod"]["vars"] == {"verify_perf": False, "cuda_keyring_pins": wanted}
    # the host itself: dpkg, the loader in a plain `ssh host cmd` shell, and the verify record its own run wrote
    status = ok(lab, POD, "dpkg-query -W -f='${Package} ${Status}\\n' cuda-keyring cuda-toolkit-13-0 cuda-compat-13-0")
    assert sorted(status.split("\n")[:3]) == ["cuda-compat-13-0 hold ok installed", "cuda-keyring install ok installed",
                                              "cuda-toolkit-13-0 hold ok installed"], status   # held, as the roles say
    # which libcuda.so.1 the real loader gives torch's process (cuda-compat's: this pod's kernel driver is older)
    probe = ok(lab, POD, "/opt/fleet/venv/bin/python -c 'import ctypes, torch; ctypes.CDLL(\"libcuda.so.1\"); "
                         "print(torch.cuda.is_available()); "
                         "print(next(l.split()[-1] for l in open(\"/proc/self/maps\") if \"libcuda.so\" in l))'")
    available, loaded = probe.split()
    assert available == "True" and loaded.startswith("/usr/local/cuda-13.0/compat/libcuda.so"), probe
    record = json.loads(ok(lab, POD, "cat /var/lib/fleet/verify.json"))
    assert record["passed"] is True, record
    # the apply the summary names, without any flag: the pod's entry carries what it was provisioned with
    code, out, err = fleet(tmp_path, "apply", str(tmp_path / "lab-pods.yaml"), "--limit", "lab-pod", "--json")
    assert code == 0, out[-3000:] + err[-3000:]
    again = json.loads(out)["hosts"]["lab-pod"]
    assert (again["changed"], again["failed"]) == (0, 0) and again["verify"].startswith("passed"), again


def test_keyring_pins_that_cannot_be_read_are_bad_input_and_nothing_is_touched(lab, tmp_path):
    bad = tmp_path / "pins.sha256"
    bad.write_text("not-a-digest  https://developer.download.nvidia.com/x.deb\n")
    code, out, err = fleet(tmp_path, "bootstrap", ssh_line(lab, POD), "--keyring-pins", str(bad), "--wait", "0")
    assert code == 2 and f"{bad}:1 is not 'SHA256  https://URL'" in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pins.sha256"]
    code, out, err = fleet(tmp_path, "bootstrap", ssh_line(lab, POD), "--keyring-pins", str(tmp_path / "none"))
    assert code == 2 and "cannot read keyring_pins file" in err and "--keyring-pins" in err, err
