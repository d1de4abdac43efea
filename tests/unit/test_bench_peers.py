"""The benchmark's peers (bench/peers/) parse, and cover fleet's eight roles. No network, no peers installed:
the playbook is YAML, the deploy Python; the benchmark itself never runs in the suite."""

import ast
from pathlib import Path

import jinja2
import yaml

BENCH = Path(__file__).resolve().parents[2] / "bench"
PEERS = BENCH / "peers"
ROLES = ("cuda_toolkit", "cuda_compat", "nvpl", "cudss", "env_hooks", "cutlass", "torch", "verify")


def test_ansible_playbook_is_one_play_over_every_role():
    play = yaml.safe_load((PEERS / "ansible" / "site.yml").read_text())
    assert len(play) == 1 and play[0]["hosts"] == "all"
    modules = {k for task in play[0]["tasks"] for k in task if k.startswith("ansible.builtin.")}
    # apt (toolkit, compat), pip (nvpl, cudss, torch), template/blockinfile/copy (env_hooks), git (cutlass),
    # script (verify)
    assert {"ansible.builtin.apt", "ansible.builtin.pip", "ansible.builtin.template", "ansible.builtin.blockinfile",
            "ansible.builtin.copy", "ansible.builtin.git", "ansible.builtin.script"} <= modules


def test_pyinfra_deploy_and_runner_are_python():
    for name in ("deploy.py", "run.py"):
        ast.parse((PEERS / "pyinfra" / name).read_text(), filename=name)


def test_shared_env_template_renders_fleet_order():
    text = jinja2.Template((PEERS / "common" / "env.sh.j2").read_text()).render(
        peer_tool="t", cuda_path="/usr/local/cuda-13.0", python_env="/opt/fleet/venv", cutlass_dir="/opt/cutlass",
        ld_library_path=["/usr/local/cuda-13.0/compat", "/usr/local/cuda-13.0/targets/x86_64-linux/lib"])
    assert "fleet_ld=/usr/local/cuda-13.0/compat:/usr/local/cuda-13.0/targets/x86_64-linux/lib\n" in text


def test_every_role_is_named_in_both_peers():
    for path in (PEERS / "ansible" / "site.yml", PEERS / "pyinfra" / "deploy.py"):
        text = path.read_text()
        for role in ROLES:
            assert f"--- {role}" in text or f"{role} and" in text or f"and {role}" in text, (path.name, role)


def test_requirements_pin_both_peers():
    pins = dict(line.split("==") for line in (PEERS / "requirements.txt").read_text().splitlines()
                if line and not line.startswith("#"))
    assert set(pins) == {"ansible-core", "pyinfra"}
