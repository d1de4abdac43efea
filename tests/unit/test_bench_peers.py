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


def test_the_peers_run_fleets_installed_verify_program_with_the_roles_config(tmp_path):
    """The peers ship the very file fleet installs (the loader's rules inside: no fleet on their hosts) and pass
    the config the verify role renders for the lab inventory (verify_perf: false there)."""
    import json
    import subprocess
    import sys

    sys.path.insert(0, str(BENCH))
    import _peers

    from fleet.resources.verify import verify_program

    inventory = BENCH.parent / "inventories" / "lab.yaml"
    path = _peers.write_verify(tmp_path, inventory)
    assert path.read_text() == verify_program().text
    config = json.loads((tmp_path / "verify.json").read_text())
    assert config["perf"] is False and config["gpu_expected"] is True
    run = subprocess.run([sys.executable, "-I", "-S", str(path), json.dumps(config)], capture_output=True, text=True,
                         timeout=120)
    assert [c["name"] for c in json.loads(run.stdout)["checks"]] == ["torch_installed"], run.stderr
