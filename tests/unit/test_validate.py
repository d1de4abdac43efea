"""Bad variables fail before any host is touched: every name and value of the inventory's vars (all, group,
host) and of --set is checked against the one defaults table, the probe's settings and every available
role's defaults and templates; exit 2 naming file:line, and nobody contacted (tests/data/variables/)."""

import io
import re
import socket
from pathlib import Path

import pytest
from rich.console import Console

from fleet.cli import main
from fleet.env import Environment
from fleet.errors import InputError
from fleet.facts.sources import DEFAULTS as PROBE_DEFAULTS
from fleet.inventory import load_inventory
from fleet.roles import load_roles, roles_dirs
from fleet.engine.session import check_variables as check_hosts
from fleet.inventory.validate import parse_assignments
from fleet.roles.declared import variables_of as declared
from fleet.variables import Rejected, Variable

CASES = sorted((Path(__file__).resolve().parent.parent / "data" / "variables").glob("*.yaml"))


@pytest.fixture
def listener():
    """A port where any connection attempt queues, so a test can prove no host was contacted."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    sock.setblocking(False)
    yield sock
    sock.close()


def contacted(sock) -> int:
    count = 0
    while True:
        try:
            sock.accept()[0].close()
        except BlockingIOError:
            return count
        count += 1


def expectations(path: Path) -> tuple[int, list[str]]:
    text = path.read_text()
    return int(re.search(r"# expect-line: (\d+)", text)[1]), re.findall(r"# expect: (.*)", text)


@pytest.mark.parametrize("command", [["apply", "--check"], ["apply"], ["script", "--limit", "pod-1"]])
@pytest.mark.parametrize("case", CASES, ids=lambda p: p.stem)
def test_a_bad_variable_exits_2_at_its_line_before_any_host(case, command, tmp_path, listener):
    path = tmp_path / case.name
    path.write_text(case.read_text().replace("PORT", str(listener.getsockname()[1])))
    line, texts = expectations(case)
    out, err = io.StringIO(), io.StringIO()
    env = Environment(console=Console(file=out, width=400), err_console=Console(file=err, width=400, soft_wrap=True), cwd=tmp_path)

    status = main([command[0], str(path), *command[1:]], env)

    message = " ".join(err.getvalue().split())
    assert status == 2, message
    assert message.startswith(f"error: {path}:{line}: "), message
    for text in texts:
        assert text in message
    assert contacted(listener) == 0, "a host was contacted although a variable is bad"


def test_every_case_is_a_different_rule():
    assert len(CASES) >= 10


def test_known_names_come_from_the_one_table_the_probe_and_every_roles_defaults_and_templates(tmp_path):
    role_dir = tmp_path / "roles" / "hf_like"
    (role_dir / "templates").mkdir(parents=True)
    (role_dir / "role.yaml").write_text(
        "defaults: {cache_size_gb: 5}\n"
        "when: \"facts.system.workspace and cache_wanted\"\n"
        "tasks:\n  - name: env\n    file: {path: \"{{ cache_dir }}/env.sh\", template: env.j2}\n")
    (role_dir / "templates" / "env.j2").write_text("export HF_HOME={{ hf_home | shq }}\n")
    known = declared(load_roles(None, roles_dirs()) + load_roles(["hf_like"], [tmp_path / "roles"]))
    assert {"cuda_version", "torch_index_url"} <= set(known)           # fleet.decide DEFAULTS
    assert set(PROBE_DEFAULTS) <= set(known) and "cutlass_dir" in known   # the probe's settings
    assert known["cutlass_ref"].default == "v4.3.0" and known["verify_perf"].default is True   # built-in roles'
    assert (known["cache_size_gb"].default, known["cache_size_gb"].type) == (5, "int")   # a user role's defaults
    assert {"cache_wanted", "cache_dir", "hf_home"} <= set(known)       # read by its when, values, template
    assert not {"facts", "decisions", "host"} & set(known)


def test_a_variable_only_a_role_in_roles_path_reads_is_accepted_even_when_roles_leaves_it_out(tmp_path):
    (tmp_path / "roles" / "mine").mkdir(parents=True)
    (tmp_path / "roles" / "mine" / "role.yaml").write_text(
        "defaults: {my_dir: /srv/mine}\ntasks:\n  - name: d\n    directory: {path: \"{{ my_dir }}\"}\n")
    inv_path = tmp_path / "inv.yaml"
    inv_path.write_text("roles_path: roles\nvars: {my_dir: /data/mine}\nhosts:\n  a: {address: 192.0.2.1}\n")
    inv = load_inventory(inv_path)
    check_hosts(list(inv.hosts.values()), inv.roles_path, {"a": load_roles(["verify"], roles_dirs())})
    inv_path.write_text("roles_path: roles\nvars: {my_dir: data/mine}\nhosts:\n  a: {address: 192.0.2.1}\n")
    inv = load_inventory(inv_path)
    with pytest.raises(InputError, match=r"inv.yaml:2: my_dir='data/mine' is a path on the host and must be "
                                         r"absolute: write one like /srv/mine"):
        check_hosts(list(inv.hosts.values()), inv.roles_path)


def test_a_bad_top_level_value_is_one_problem_however_many_hosts(tmp_path):
    inv_path = tmp_path / "inv.yaml"
    inv_path.write_text("vars: {cutlass_repo: nowhere}\nhosts:\n" +
                        "".join(f"  h{i}: {{address: 192.0.2.{i}}}\n" for i in range(1, 6)))
    inv = load_inventory(inv_path)
    with pytest.raises(InputError) as caught:
        check_hosts(list(inv.hosts.values()), inv.roles_path)
    assert str(caught.value).count("cutlass_repo") == 1


KNOWN = declared(load_roles(None, roles_dirs()))


@pytest.mark.parametrize("name, value, default, fine", [
    ("verify_perf", "false", True, True),            # --set gives text
    ("verify_perf", False, True, True),
    ("verify_timeout", "900", 900, True),
    ("verify_timeout", True, 900, False),            # YAML true is not a number
    ("verify_timeout", "15m", 900, False),
    ("cuda_apt_repo", "https://mirror.example/cuda/{distro}/{arch}/", "x", True),
    ("cuda_apt_repo", "file:///srv/mirror/apt/", "x", True),
    ("cuda_apt_repo", "ftp://mirror.example/cuda/", "x", False),
    ("cutlass_repo", "git@github.com:NVIDIA/cutlass.git", "x", True),
    ("cutlass_repo", "ssh://git@example.org/cutlass.git", "x", True),
    ("cutlass_repo", "/srv/mirror/cutlass", "x", True),   # a local repository on the host (git clone takes it)
    ("cuda_keyring_url", "", "", True),              # "" = the role's own choice
    ("pip_tmpdir", "/workspace/tmp", "", True),
    ("pip_tmpdir", "tmp", "", False),
    ("cuda_version", 13.0, "13.0", True),            # YAML reads 13.0 as a number
    ("cutlass_ref", ["v4.3.0"], "v4.3.0", False),
    ("verify_perf_table", [{"match": "H100"}], [], True),
    ("verify_perf_table", "H100", [], False),
    ("my_list", ["a", "b"], None, True),           # a role reads it without a default: any type
    ("my_mirror_url", "mirror.local/x", None, False),   # but a URL-named value still needs a scheme
    # plain text for what runs as root (issue 26): an on-path attacker's .deb ran its postinst as root
    ("cuda_keyring_url", "http://mirror.example/cuda-keyring_1.1-1_all.deb", "", False),
    ("cuda_keyring_url", "https://mirror.example/cuda-keyring_1.1-1_all.deb", "", True),
    ("cuda_apt_repo", "http://mirror.example/cuda/", "x", False),
    ("pip_index_url", "HTTP://pypi.example/simple", "https://pypi.org/simple", False),
    ("torch_extra_index_url", "http://wheels.example/cu130", "", False),
    ("nvpl_redist_url", "http://mirror.example/nvpl/", "x", False),
    ("cutlass_repo", "http://github.com/NVIDIA/cutlass.git", "x", False),
    ("cutlass_repo", "git://github.com/NVIDIA/cutlass.git", "x", False),
    ("my_mirror_url", "http://mirror.local/x", None, False),
    # a tree of fleet's own, never a system directory (a venv over /usr/local shadowed python3 for every user)
    ("python_env", "/opt/fleet/venv", "/opt/fleet/venv", True),
    ("python_env", "/", "/opt/fleet/venv", False),
    ("python_env", "/usr", "/opt/fleet/venv", False),
    ("python_env", "/usr/local/", "/opt/fleet/venv", False),
    ("python_env", "/root", "/opt/fleet/venv", False),
    ("python_env", "venv", "/opt/fleet/venv", False),
    ("python_env", "/opt/fleet/../../usr/local", "/opt/fleet/venv", False),
    ("nvpl_home", "/usr/local", "/opt/nvpl", False),
    ("cudss_home", "/usr", "/opt/cudss", False),
    ("cudss_home", "/opt/cudss", "/opt/cudss", True),
    ("pip_tmpdir", "/workspace/../tmp", "", False),
])
def test_value_rules(name, value, default, fine):
    """Each value judged by its name's one declaration (`default`: what the declaration holds, for the reader)."""
    var = KNOWN.get(name) or Variable(name, "any", None)   # a name a role reads without declaring it
    try:
        var.convert(value)
    except Rejected:
        assert not fine
    else:
        assert fine


def test_set_assignments_are_checked_like_inventory_values():
    known = declared(load_roles(None, roles_dirs()))
    assert parse_assignments(["cuda_version=12.8", "verify_perf=false"], known) == {
        "cuda_version": "12.8", "verify_perf": False}
    with pytest.raises(InputError, match="--set cuda_verison: unknown variable 'cuda_verison'.*did you mean "
                                         "'cuda_version'"):
        parse_assignments(["cuda_verison=13.0"], known)
    with pytest.raises(InputError, match=r"--set torch_source: torch_source='conda' is not one of official, jetson"):
        parse_assignments(["torch_source=conda"], known)
    with pytest.raises(InputError, match="is not NAME=VALUE"):
        parse_assignments(["cuda_version"], known)


def test_plain_http_for_what_runs_as_root_is_bad_input_with_the_https_fix(tmp_path):
    inv_path = tmp_path / "inv.yaml"
    inv_path.write_text("hosts:\n  h1:\n    address: 192.0.2.1\n    vars:\n"
                        "      cuda_keyring_url: http://mirror.example/cuda-keyring_1.1-1_all.deb\n")
    inv = load_inventory(inv_path)
    with pytest.raises(InputError) as caught:
        check_hosts(list(inv.hosts.values()), inv.roles_path)
    assert caught.value.exit_status == 2
    assert str(caught.value) == (
        f"{inv_path}:5: cuda_keyring_url='http://mirror.example/cuda-keyring_1.1-1_all.deb' is plain http://, and "
        "what fleet installs from it runs as root, so anyone on the network path could replace it: write "
        "https://mirror.example/cuda-keyring_1.1-1_all.deb (or file:///... for a local mirror)")


def test_a_system_directory_for_the_venv_is_bad_input_naming_the_line(tmp_path):
    inv_path = tmp_path / "inv.yaml"
    inv_path.write_text("vars:\n  python_env: /usr/local\nhosts:\n  h1: {address: 192.0.2.1}\n")
    inv = load_inventory(inv_path)
    with pytest.raises(InputError) as caught:
        check_hosts(list(inv.hosts.values()), inv.roles_path)
    assert caught.value.exit_status == 2
    assert str(caught.value) == (f"{inv_path}:2: python_env='/usr/local' is a system directory that fleet would fill "
                                 "as root: write a directory of its own, like /opt/fleet/venv")
