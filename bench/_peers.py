"""What the peers need beside their playbook/deploy: an inventory in their own format written from fleet's
lab inventory (same addresses, users, key, known hosts and source variables), fleet's verify script rendered
as fleet renders it, and how to run each one with its remote commands counted."""

from __future__ import annotations

import json
import os
from pathlib import Path

from fleet.decide import DEFAULTS

BENCH = Path(__file__).resolve().parent
PEERS = BENCH / "peers"
VENV = BENCH / ".venv-peers"
# The variables the peers read: the sources (every one points at the lab mirror) and the torch choice.
CUTLASS_REPO = "https://github.com/NVIDIA/cutlass.git"   # roles/cutlass/role.yaml's default
SOURCE_VARS = ("cuda_keyring_url", "torch_index_url", "jetson_torch_index_url", "pip_index_url", "cutlass_repo",
               "torch_source")


def hosts_of(inventory: Path) -> list:
    from fleet.inventory import load_inventory
    return load_inventory(inventory).select(None)


def host_vars(host, decisions: dict | None = None) -> dict:
    """The sources a peer installs from: what the inventory states, else what fleet decides for that host (the
    lab inventory states none: each host resolves the real hostnames to the lab's mirror, and fleet picks the
    keyring for its OS and CPU and the torch index for its GPU or JetPack)."""
    out = {k: host.vars[k] for k in SOURCE_VARS if k in host.vars}
    d = decisions or {}
    torch = d.get("torch") or {}
    out.setdefault("cuda_keyring_url", (d.get("cuda") or {}).get("keyring"))
    out.setdefault("torch_source", torch.get("source") or "official")
    out.setdefault("pip_index_url", DEFAULTS["pip_index_url"])
    out.setdefault("cutlass_repo", CUTLASS_REPO)
    index = out.get("jetson_torch_index_url" if out["torch_source"] == "jetson" else "torch_index_url")
    index = index or torch.get("index_url") or DEFAULTS["torch_index_url"]
    extra = torch.get("extra_index_url")
    out["torch_pip_args"] = f"--index-url {index}" + (f" --extra-index-url {extra}" if extra else "")
    out["needs_sudo"] = host.user != "root"
    return out


def decisions_of(inventory: Path) -> dict[str, dict]:
    """fleet's decisions for every host, from one `fleet facts` run (the peers then install the same sources)."""
    import subprocess
    import sys

    from fleet.decide import decide
    from fleet.record import store
    from fleet.inventory import load_inventory

    # its exit status says whether every host looks healthy (fresh hosts do not): the records are what counts
    run = subprocess.run([sys.executable, "-m", "fleet", "facts", str(inventory), "-q"], capture_output=True,
                         text=True, cwd=BENCH.parent)
    inv = load_inventory(inventory)
    out = {}
    for name, h in inv.hosts.items():
        record = store.read(inv.facts_dir, name)
        if record is None:
            raise SystemExit(f"fleet facts wrote no record for {name} (exit {run.returncode}):\n{run.stdout[-2000:]}")
        out[name] = decide(record, h.vars).to_json()
    return out


def write_verify(workdir: Path, inventory: Path) -> Path:
    """fleet's verify program as fleet installs it (fleet/remote/verify/ with the loader's rules and trace reader it
    carries) beside its CONFIG_JSON (verify_config(): the peers pass it as the program's argument)."""
    from fleet.resources.verify import verify_program

    out = workdir / "verify.py"
    out.write_text(verify_program().text)
    (workdir / "verify.json").write_text(verify_config(inventory))
    return out


def verify_config(inventory: Path) -> str:
    """The CONFIG_JSON the verify role renders for a lab host: the role's defaults and the inventory's verify_*
    variables; every lab host has a (stand-in) GPU, the peers apply (no --check), no platform perf table."""
    import yaml

    from fleet.roles import BUILTIN_DIR, load_roles

    values = dict(load_roles(["verify"], [BUILTIN_DIR])[0].defaults)   # the role's declared defaults (its `variables:`)
    values.update({k: v for k, v in yaml.safe_load(inventory.read_text()).get("vars", {}).items()
                   if k.startswith("verify_")})
    return json.dumps({"perf": bool(values["verify_perf"]), "gpu_expected": True,
                       "perf_table": values["verify_perf_table"] or [],
                       "memory_share": float(values["verify_perf_memory_share"]),
                       "busy_share": float(values["verify_busy_memory_share"])})


def write_ansible(workdir: Path, inventory: Path, lab_root: Path, verify: Path, decisions: dict | None = None) -> Path:
    import yaml

    hosts = {}
    for h in hosts_of(inventory):
        hosts[h.name] = dict(host_vars(h, (decisions or {}).get(h.name)), ansible_host=h.address, ansible_port=h.port, ansible_user=h.user)
    doc = {"all": {"hosts": hosts, "vars": {
        "ansible_ssh_private_key_file": str(lab_root / "id_ed25519"),
        "ansible_ssh_common_args": f"-o UserKnownHostsFile={lab_root / 'known_hosts'} -o StrictHostKeyChecking=yes",
        "ansible_ssh_executable": str(_counting_wrapper(workdir, "ssh")),
        "ansible_sftp_executable": str(_counting_wrapper(workdir, "sftp")),
        "ansible_scp_executable": str(_counting_wrapper(workdir, "scp")),
        "peers_common": str(PEERS / "common"), "verify_py": str(verify),
        "verify_config": (verify.parent / "verify.json").read_text()}}}
    path = workdir / "ansible-hosts.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def _counting_wrapper(workdir: Path, tool: str) -> Path:
    """Each ssh/sftp/scp Ansible starts is one remote command (a session on the host): log its arguments."""
    path = workdir / f"count-{tool}"
    path.write_text(f"#!/bin/sh\nprintf '%s\\n' \"$*\" >> \"$BENCH_COUNT_LOG\"\nexec {tool} \"$@\"\n")
    path.chmod(0o755)
    return path


def write_pyinfra(workdir: Path, inventory: Path, lab_root: Path, verify: Path, decisions: dict | None = None) -> Path:
    rows = []
    for h in hosts_of(inventory):
        data = dict(host_vars(h, (decisions or {}).get(h.name)), ssh_hostname=h.address, ssh_port=h.port, ssh_user=h.user,
                    ssh_key=str(lab_root / "id_ed25519"), ssh_known_hosts_file=str(lab_root / "known_hosts"),
                    ssh_strict_host_key_checking="yes", peers_common=str(PEERS / "common"), verify_py=str(verify),
                    verify_config=(verify.parent / "verify.json").read_text())
        rows.append((h.name, data))
    path = workdir / "pyinfra_inventory.py"
    path.write_text(f"hosts = {rows!r}\n")
    return path


def ansible_command(hosts_file: Path, forks: int) -> list[str]:
    return [str(VENV / "bin" / "ansible-playbook"), "-i", str(hosts_file), "-f", str(forks),
            str(PEERS / "ansible" / "site.yml")]


def ansible_env(log: Path) -> dict:
    return dict(os.environ, ANSIBLE_CONFIG=str(PEERS / "ansible" / "ansible.cfg"), BENCH_COUNT_LOG=str(log),
                ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0")


def pyinfra_command(inventory_file: Path) -> list[str]:
    return [str(VENV / "bin" / "python"), str(PEERS / "pyinfra" / "run.py"), "-y", "--no-wait",
            str(inventory_file), str(PEERS / "pyinfra" / "deploy.py")]


def pyinfra_env(log: Path) -> dict:
    return dict(os.environ, BENCH_COUNT_LOG=str(log))


def count_by_address(log: Path, addresses: dict[str, str]) -> dict[str, int]:
    """Remote commands per host name from a count log (one line per session: its arguments, or an address)."""
    import re
    counts = dict.fromkeys(addresses.values(), 0)
    if not log.exists():
        return counts
    for line in log.read_text().splitlines():
        m = re.search(r"(?<![\d.])(\d+\.\d+\.\d+\.\d+)(?![\d.])", line)
        if m and m.group(1) in addresses:
            counts[addresses[m.group(1)]] += 1
    return counts


def versions() -> dict[str, str]:
    import subprocess
    out = subprocess.run([str(VENV / "bin" / "python"), "-c",
                          "import json; from importlib.metadata import version as v; "
                          "print(json.dumps({p: v(p) for p in ('ansible-core', 'pyinfra', 'paramiko')}))"],
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out)


def ensure_venv() -> None:
    if not (VENV / "bin" / "ansible-playbook").exists() or not (VENV / "bin" / "pyinfra").exists():
        raise SystemExit(f"the peers are not installed: python3 -m venv {VENV} && "
                         f"{VENV}/bin/pip install -r {PEERS / 'requirements.txt'}")
