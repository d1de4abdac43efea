"""Issue 23 through real sshd, real ld.so/ldconfig: the traps of one family that decide which libcuda.so.1 a
process loads, each staged by its real mechanism on a pod with driver 580.159.04 and cuda-compat 580.95.05
installed (compat must NOT be used: its libcuda answers 803 under that driver, fleet_lab/native/libcuda.c), then
`fleet apply`, then EACH kind of process asked over SSH which libcuda.so.1 it loads and what cuInit says, and
whether torch has CUDA (never fleet's own verdict):

    round 1  ~/.bash_profile puts compat first (bash -l reads it and never ~/.profile: the H100 trap),
             /etc/ld.so.conf.d/000-cuda-compat.conf + ldconfig (every process), a stub libcuda in
             /etc/ld.so.preload (every process, CUDA_ERROR_STUB_LIBRARY 34), /etc/profile.d/cuda-compat.sh
    round 2  (on the converged pod) ~/.bash_profile gone and ~/.bash_login doing it, a compat line in
             /etc/ld.so.conf, the stub directory in the ld cache (/etc/ld.so.conf.d/00-cuda-stubs.conf)

Each round: the facts name each file at fault before apply, the plan names each, after apply every kind loads
the driver's libcuda with cuInit 0, nothing was deleted (moved aside or commented out), and a second apply
changes nothing. pytest -s prints what fleet said, for the issue note.
"""

from __future__ import annotations

import json
import shlex

import pytest

from helpers import ok
from test_apply_lab import fleet, fleet_json

POD = "pod-580"        # the lab's own: driver 580.159.04, cuda-compat-13-0 installed
COMPAT = "/usr/local/cuda-13.0/compat"
STUBS = "/usr/local/cuda-13.0/targets/x86_64-linux/lib/stubs"
DRIVER_LIB = "/usr/lib/x86_64-linux-gnu/libcuda.so.580.159.04"
EXPORT = f"export LD_LIBRARY_PATH={COMPAT}${{LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}}\n"
# A stub as the toolkit's: soname libcuda.so.1, cuInit answers CUDA_ERROR_STUB_LIBRARY (34)
STUB_C = "int cuInit(unsigned f){return 34;} int cuDriverGetVersion(int *v){*v=13000;return 0;}"

# Each kind of process, as it really starts: a service/cron/`docker exec` (env -i, no startup file), `ssh host cmd`
# (this very exec), an interactive and a login shell from a fresh environment (no tty).
ASK = ("python3 -c 'import ctypes,os; l=ctypes.CDLL(\"libcuda.so.1\"); c=l.cuInit(0); "
       "m=[x.split()[-1] for x in open(\"/proc/self/maps\") if \"libcuda\" in x]; "
       "print(\"cuInit\", c, os.path.realpath(m[0]))'; "
       "/opt/fleet/venv/bin/python -c 'import torch; print(\"torch\", torch.cuda.is_available())' 2>/dev/null "
       "|| echo 'torch none'")
FRESH = "env -i HOME=/root TERM=dumb PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
KINDS = {
    "bare": f"env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root bash --norc --noprofile -c {shlex.quote(ASK)}",
    "ssh": ASK,
    "interactive": f"{FRESH} setsid -w bash -i -c {shlex.quote(ASK)} </dev/null 2>/dev/null",
    "login": f"{FRESH} setsid -w bash -l -c {shlex.quote(ASK)} </dev/null 2>/dev/null",
}


def ask(lab) -> dict:
    """{kind: (cuInit code, the libcuda file mapped, torch.cuda.is_available() or None)}, one SSH exec."""
    script = "; ".join(f"echo '@@kind {kind}'; {cmd}" for kind, cmd in KINDS.items())
    out, seen, kind = ok(lab, POD, script), {}, None
    for line in out.splitlines():
        if line.startswith("@@kind "):
            kind = line[7:]
            seen[kind] = [None, None, None]
        elif line.startswith("cuInit ") and kind:
            _, code, lib = line.split(" ", 2)
            seen[kind][0:2] = [int(code), lib]
        elif line.startswith("torch ") and kind:
            seen[kind][2] = {"True": True, "False": False}.get(line.split()[1])
    assert set(seen) == set(KINDS), out
    return {k: tuple(v) for k, v in seen.items()}


def show(title: str, text: str) -> None:
    print(f"\n===== {title}\n{text.strip()}")


def record(lab, name: str = POD) -> dict:
    return json.loads((lab.inventory.facts_dir / f"{name}.json").read_text())


@pytest.fixture(scope="module")
def pod_lab(lab):
    """The lab's pod-580 (an H100 pod on driver 580.159.04 with cuda-compat-13-0 installed), made fresh again when
    the module ends: its traps and what fleet did to them are this module's own."""
    yield lab
    lab.reset([POD])


def apply_round(lab, inventory: str, title: str) -> dict:
    before = ask(lab)
    code, plan, _ = fleet("apply", inventory, "--limit", POD, "--check", "--diff")
    show(f"{title}: fleet apply --check --diff (before)", plan)
    facts_before = record(lab)
    first = fleet_json("apply", inventory, "--limit", POD)
    host = first[1]["hosts"][POD]
    show(f"{title}: fleet apply (JSON, env_hooks and verify)", "\n".join(
        f"{t['status']:8} {t['role']}: {t['task']} — {t['reason']}" for t in host["tasks"]
        if t["role"] in ("env_hooks", "verify")))
    after = ask(lab)
    show(f"{title}: each kind asked after apply", json.dumps(after, indent=1))
    second = fleet_json("apply", inventory, "--limit", POD)
    return {"before": before, "plan": plan, "check_code": code, "facts_before": facts_before, "first": first,
            "after": after, "record": record(lab), "second": second}


@pytest.fixture(scope="module")
def round1(pod_lab, converged_fresh):
    lab, inventory = pod_lab, str(pod_lab.inventory_path)
    code, doc = converged_fresh(POD)   # a converged pod first (torch in place: conftest's, shared), then the traps
    assert code == 0, json.dumps(doc["hosts"][POD], indent=1)[-3000:]
    ok(lab, POD, "set -e\n"
       f"printf '%s' {shlex.quote(EXPORT)} > /root/.bash_profile\n"
       f"echo {COMPAT} > /etc/ld.so.conf.d/000-cuda-compat.conf\n"
       f"mkdir -p {STUBS}; printf '%s' {shlex.quote(STUB_C)} > /tmp/stub.c\n"
       f"gcc -shared -fPIC -Wl,-soname,libcuda.so.1 -o {STUBS}/libcuda.so /tmp/stub.c\n"
       f"echo {STUBS}/libcuda.so >> /etc/ld.so.preload\n"
       f"printf 'int nvmlInit(void){{return 9;}}\\n' > /tmp/nvml.c; gcc -shared -fPIC -o {STUBS}/libnvidia-ml.so /tmp/nvml.c\n"
       f"echo {STUBS}/libnvidia-ml.so >> /etc/ld.so.preload\n"   # two lines: a commented-out pair would misparse
       f"printf '%s' {shlex.quote(EXPORT)} > /etc/profile.d/cuda-compat.sh\n"
       "ldconfig\n")
    # facts before apply: fleet facts on the trapped pod
    code, _ = fleet_json("facts", inventory, "--limit", POD)
    return {"facts": record(lab), **apply_round(lab, inventory, "round 1")}


@pytest.fixture(scope="module")
def round2(pod_lab, round1):
    lab, inventory = pod_lab, str(pod_lab.inventory_path)
    ok(lab, POD, "set -e\n"
       "rm /root/.bash_profile\n"
       f"printf '%s' {shlex.quote(EXPORT)} > /root/.bash_login\n"
       f"sed -i '1i {COMPAT}' /etc/ld.so.conf\n"        # before its include: first in the cache
       f"echo {STUBS} > /etc/ld.so.conf.d/00-cuda-stubs.conf\n"
       f"printf 'export LD_PRELOAD={STUBS}/libcuda.so\\n' >> /root/.bashrc\n"   # the loader's first step
       "ldconfig\n")
    code, _ = fleet_json("facts", inventory, "--limit", POD)
    return {"facts": record(lab), **apply_round(lab, inventory, "round 2")}


def kinds_of(facts: dict) -> dict:
    return facts["loader"]["kinds"]


def test_round1_the_traps_really_break_each_kind_before(round1):
    before = round1["before"]
    for kind in ("bare", "ssh", "interactive", "login"):       # the preloaded stub reaches every process
        assert before[kind][0] == 34 and before[kind][1] == f"{STUBS}/libcuda.so", (kind, before)


def test_round1_facts_name_each_file_at_fault_before_apply(round1):
    facts = round1["facts"]
    kinds = kinds_of(facts)
    for kind in ("bare", "ssh", "interactive", "login"):
        assert kinds[kind]["step"] == "/etc/ld.so.preload" and kinds[kind]["set_by"] == "/etc/ld.so.preload:1", kinds
        assert kinds[kind]["stub"] is True and kinds[kind]["libcuda"] == f"{STUBS}/libcuda.so"
    conf = {(c["file"], c["dir"]) for c in facts["loader"]["conf"]}
    assert ("/etc/ld.so.conf.d/000-cuda-compat.conf", COMPAT) in conf
    cache = [c for c in facts["loader"]["cache"] if c["name"] == "libcuda.so.1"]
    assert any(c["compat"] and c["version"] == "580.95.05" for c in cache), cache
    # the login shell's path: ~/.bash_profile put compat first (behind the preload, but named)
    login_changes = facts["shells"]["login"]["ld_changes"]
    assert any(c["file"] == "/root/.bash_profile" and c["line"] == 1 for c in login_changes), login_changes


def test_round1_plan_names_each_file_and_decide_judges_them(round1):
    plan = round1["plan"]
    for where in ("/etc/ld.so.conf.d/000-cuda-compat.conf", f"/etc/ld.so.preload:1 ({STUBS}/libcuda.so)",
                  "~/.bash_profile"):
        assert where in plan, (where, plan[-4000:])
    # --diff: what moves and what is commented out, as diff lines
    assert "+++ /var/lib/fleet/aside/etc/ld.so.conf.d/000-cuda-compat.conf (moved aside)" in plan, plan[-4000:]
    assert f"+++ /etc/ld.so.preload (after)\n@@ -1 @@\n-{STUBS}/libcuda.so\n" in plan, plan[-4000:]


def test_round1_after_apply_every_kind_loads_the_drivers_libcuda_and_torch_has_cuda(round1):
    after = round1["after"]
    for kind, (code, lib, torch) in after.items():
        assert code == 0 and lib == DRIVER_LIB, (kind, after)
        assert torch is True, (kind, after)


def test_round1_nothing_deleted_moved_aside_or_commented_and_fleets_words_are_true(pod_lab, round1):
    aside = ok(pod_lab, POD, "cat /var/lib/fleet/aside/etc/ld.so.conf.d/000-cuda-compat.conf; "
                             "test ! -e /etc/ld.so.conf.d/000-cuda-compat.conf && echo gone; cat /etc/ld.so.preload; "
                             "cat /etc/profile.d/cuda-compat.sh; head -n 1 /root/.bash_profile; tail -n 3 /root/.bash_profile")
    assert aside.startswith(f"{COMPAT}\ngone\n"), aside
    assert STUBS not in aside.split("gone\n", 1)[1].split("export", 1)[0], aside   # out of ld.so.preload ...
    kept = ok(pod_lab, POD, "cat /var/lib/fleet/aside/etc/ld.so.preload")
    assert kept.split() == [f"{STUBS}/libnvidia-ml.so", f"{STUBS}/libcuda.so"], kept        # ... and kept aside
    # the loader preloads nothing it cannot open: glibc's ld.so.preload has no safe way to comment out a second line
    assert ok(pod_lab, POD, "env -i /bin/true 2>&1; echo rc=$?").strip() == "rc=0"
    assert aside.count(EXPORT.strip()) == 2                    # profile.d's and ~/.bash_profile's user lines stay
    assert "# BEGIN fleet env_hooks (login)" in aside and aside.rstrip().endswith("# END fleet env_hooks (login)")
    code, doc = round1["first"]
    assert code == 0, json.dumps(doc["hosts"][POD], indent=1)[-3000:]
    tasks = doc["hosts"][POD]["tasks"]
    aside_task = next(t for t in tasks if t["task"].startswith("no harmful libcuda directory"))
    assert aside_task["status"] == "changed"
    why = next(t["reason"] for t in tasks if t["role"] == "env_hooks" and t["status"] == "changed")
    assert "neutralizes ~/.bash_profile" in why, why
    assert "/etc/ld.so.conf.d/000-cuda-compat.conf:1" in why and "/etc/ld.so.preload:1" in why, why
    # the summary's "fixed": each entry taken out (the host, asked above, has it aside) and the line neutralized
    fixed = doc["hosts"][POD]["fixed"]
    assert "moved /etc/ld.so.conf.d/000-cuda-compat.conf aside to /var/lib/fleet/aside/etc/ld.so.conf.d/" \
           "000-cuda-compat.conf" in fixed, fixed
    assert any(f.startswith("took /etc/ld.so.preload:1 ") for f in fixed), fixed
    assert any(f.startswith("neutralized ~/.bash_profile") for f in fixed), fixed


def test_round1_second_apply_changes_nothing_and_the_facts_agree(round1):
    code, second = round1["second"]
    assert code == 0 and second["hosts"][POD]["changed"] == 0, second["hosts"][POD]["tasks"]
    kinds = kinds_of(round1["record"])
    assert all(k["libcuda"] and k["version"] == "580.159.04" and not k["stub"] for k in kinds.values()), kinds


def test_round2_traps_break_before_and_facts_name_the_files(round2):
    before, facts = round2["before"], round2["facts"]
    assert before["login"][1].startswith(COMPAT) and before["login"][0] == 803, before
    kinds = kinds_of(facts)
    assert kinds["login"]["step"] == "LD_LIBRARY_PATH" and kinds["login"]["set_by"] == "~/.bash_login:1", kinds
    assert kinds["bare"]["step"] == "ld cache", kinds
    assert kinds["bare"]["set_by"] == "/etc/ld.so.conf:1" and kinds["bare"]["version"] == "580.95.05", kinds
    assert before["bare"] == (803, f"{COMPAT}/libcuda.so.580.95.05", False), before
    # the interactive shell preloads the stub a line at the end of ~/.bashrc exported: 34, whatever the paths say
    assert before["interactive"][0] == 34 and before["interactive"][1] == f"{STUBS}/libcuda.so", before
    assert kinds["interactive"]["step"] == "LD_PRELOAD" and kinds["interactive"]["stub"] is True, kinds
    stubs = [c for c in facts["loader"]["cache"] if c["stub"]]
    assert stubs and all(c["dir"] == STUBS for c in stubs), facts["loader"]["cache"]
    for where in ("/etc/ld.so.conf:1", "/etc/ld.so.conf.d/00-cuda-stubs.conf", "~/.bash_login"):
        assert where in round2["plan"], (where, round2["plan"][-4000:])


def test_round2_after_apply_every_kind_loads_the_drivers_libcuda_and_converges(pod_lab, round2):
    for kind, (code, lib, torch) in round2["after"].items():
        assert code == 0 and lib == DRIVER_LIB and torch is True, (kind, round2["after"])
    files = ok(pod_lab, POD, "cat /etc/ld.so.conf; ls /var/lib/fleet/aside/etc/ld.so.conf.d/; tail -n 2 /root/.bash_login")
    assert f"# fleet ld_aside: {COMPAT}" in files and "00-cuda-stubs.conf" in files, files
    assert files.rstrip().endswith("# END fleet env_hooks (login)"), files
    code, second = round2["second"]
    assert code == 0 and second["hosts"][POD]["changed"] == 0, second["hosts"][POD]["tasks"]


# -- where compat IS decided (driver 570.133.20): fleet's own drop-in is kept, a stub still goes -----------------

POD570 = "pod-570"     # the lab's own: driver 570.133.20
FLEET_CONF = "/etc/ld.so.conf.d/000-fleet-cuda-compat.conf"


@pytest.fixture(scope="module")
def decided(lab, converged_fresh):
    """The lab's pod-570, an H100 pod on driver 570.133.20 (CUDA 13 needs cuda-compat: decided), converged
    (conftest's converged_fresh, shared); then fleet's own compat drop-in written by hand (the cuda_compat role's
    gate writes it on its branch) and a stub directory in the ld cache; then apply. The pod is made fresh again at
    the end."""
    pod, inventory = lab, str(lab.inventory_path)
    try:
        code, doc = converged_fresh(POD570)
        assert code == 0, json.dumps(doc["hosts"][POD570], indent=1)[-3000:]
        ok(pod, POD570, "set -e\n"
           f"echo {COMPAT} > {FLEET_CONF}\n"
           f"mkdir -p {STUBS}; printf '%s' {shlex.quote(STUB_C)} > /tmp/stub.c\n"
           f"gcc -shared -fPIC -Wl,-soname,libcuda.so.1 -o {STUBS}/libcuda.so /tmp/stub.c\n"
           f"echo {STUBS} > /etc/ld.so.conf.d/00-cuda-stubs.conf\n"
           "ldconfig\n")
        before = ok(pod, POD570, "ldconfig -p | grep 'libcuda.so.1 '")
        bare_before = ok(pod, POD570, KINDS["bare"])
        code, plan, _ = fleet("apply", inventory, "--limit", POD570, "--check")
        show("compat decided: fleet apply --check", plan)
        first = fleet_json("apply", inventory, "--limit", POD570)
        files = ok(pod, POD570, f"cat {FLEET_CONF}; ls /etc/ld.so.conf.d /var/lib/fleet/aside/etc/ld.so.conf.d; "
                                "ldconfig -p | grep 'libcuda.so.1 '")
        bare = ok(pod, POD570, KINDS["bare"])
        second = fleet_json("apply", inventory, "--limit", POD570)
        yield {"before": before, "bare_before": bare_before, "plan": plan, "first": first, "files": files, "bare": bare, "second": second}
    finally:
        lab.reset([POD570])


def test_compat_decided_keeps_fleets_drop_in_and_takes_the_stub_out(decided):
    assert f"{STUBS}/libcuda.so.1" in decided["before"]          # ldconfig made the stub's soname link
    assert f"cuInit 34 {STUBS}/libcuda.so" in decided["bare_before"], decided["bare_before"]   # first in the cache
    plan = decided["plan"]
    assert "moves /etc/ld.so.conf.d/00-cuda-stubs.conf aside" in plan and f"moves {FLEET_CONF}" not in plan, plan[-3000:]
    files = decided["files"]
    assert files.startswith(f"{COMPAT}\n") and "000-fleet-cuda-compat.conf" in files and "00-cuda-stubs.conf" in files
    assert STUBS not in files.split("\n", 1)[1].split("libcuda.so.1 ", 1)[-1], files   # the cache no longer lists it
    # a bare process gets the compat libcuda through fleet's drop-in, and it works on this older driver
    assert "cuInit 0 /usr/local/cuda-13.0/compat/libcuda.so.580.95.05" in decided["bare"], decided["bare"]
    code, second = decided["second"]
    assert code == 0 and second["hosts"][POD570]["changed"] == 0, second["hosts"][POD570]["tasks"]
