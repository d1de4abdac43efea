"""`fleet facts` against the lab: real sshd hosts that look like a Thor, a Spark and two H100 pods.

Fresh hosts (nothing applied yet), so these are the facts a user sees before the first `fleet apply`.
"""

import io
import json
import shutil

import pytest
from rich.console import Console

from fleet.cli import main
from fleet.env import Environment
from fleet.record import store


def run_facts(lab, *argv) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    env = Environment(console=Console(file=out, width=220, color_system=None, soft_wrap=True),
                      err_console=Console(file=err, width=220, color_system=None, soft_wrap=True))
    code = main(["facts", str(lab.inventory_path), *argv], env)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def gathered(lab):
    # fresh hosts fleet has never seen: no record (a record listing helper programs a reset host no longer has costs
    # one more command, as it should: tests/lab/test_programs_lab.py)
    lab.reset(list(lab.inventory.hosts))
    shutil.rmtree(lab.inventory.facts_dir, ignore_errors=True)
    code, out, err = run_facts(lab, "--json")
    assert code == 0, err
    return json.loads(out)


def test_one_remote_command_per_host(gathered):
    assert set(gathered["stats"]) == {"thor", "spark", "pod-570", "pod-580"}
    assert all(stats["remote_commands"] == 1 for stats in gathered["stats"].values()), gathered["stats"]


def test_every_probe_source_parsed(gathered):
    for name, record in gathered["hosts"].items():
        assert record["probe"]["errors"] == [], (name, record["probe"])


def test_thor(gathered):
    thor = gathered["hosts"]["thor"]
    assert thor["platform"] == "jetson-thor"
    assert thor["system"]["arch"] == "aarch64"
    assert thor["system"]["kernel"].endswith("-tegra")
    assert [g["compute_cap"] for g in thor["gpus"]] == ["11.0"]
    assert thor["jetson"]["l4t"].startswith("38.") and thor["jetson"]["jetpack"] is not None
    assert thor["driver"]["cuda_max"] == "13.0"


def test_spark(gathered):
    spark = gathered["hosts"]["spark"]
    assert spark["platform"] == "dgx-spark"
    assert spark["system"]["arch"] == "aarch64"
    assert spark["system"]["user"] == "nvidia" and spark["system"]["uid"] != 0
    assert [(g["name"], g["compute_cap"], g["memory_mb"]) for g in spark["gpus"]] == [("NVIDIA GB10", "12.1", None)]
    assert spark["jetson"] is None


@pytest.mark.parametrize("name, driver, cuda_max", [("pod-570", "570.133.20", "12.8"), ("pod-580", "580.159.04", "13.0")])
def test_pods(gathered, name, driver, cuda_max):
    pod = gathered["hosts"][name]
    assert pod["platform"] == "x86_64-dgpu"
    assert pod["system"]["arch"] == "x86_64"
    assert [g["compute_cap"] for g in pod["gpus"]] == ["9.0"]
    assert pod["driver"]["version"] == driver and pod["driver"]["source"] == "proc"
    assert pod["driver"]["cuda_max"] == cuda_max


def test_pod_580_compat_installed_but_not_in_use(gathered):
    compat = gathered["hosts"]["pod-580"]["cuda"]["compat"]
    assert compat["path"] == "/usr/local/cuda-13.0/compat"
    assert compat["version"] == "580.95.05"
    assert compat["in_use"] is False


def test_records_written_and_load(lab, gathered):
    for name, record in gathered["hosts"].items():
        assert store.read(lab.inventory.facts_dir, name) == record
        json.loads((lab.inventory.facts_dir / f"{name}.json").read_text())


def test_table_shows_differences_first(lab, gathered):
    code, out, err = run_facts(lab, "--cached")
    assert code == 0
    # piped: the table is data on stdout; the count of folded rows is commentary on stderr (issue 25)
    assert "identical facts folded" in err and "identical facts folded" not in out
    assert out.index("platform") < out.index("x86_64-dgpu")
    for value in ("jetson-thor", "dgx-spark", "x86_64-dgpu", "570.133.20", "580.159.04", "12.1", "11.0"):
        assert value in out


def test_drift_after_a_change_on_the_host(lab, gathered):
    """Install fleet's env hook marker on pod-580 by hand; the next gather's drift names it, and only it: the kernel
    log, which every process on this machine writes to (another lab's hosts too), grew meanwhile and is no change
    of the host (fleet/facts/readings.py)."""
    with lab.connect("pod-580") as conn:
        assert conn.run("printf '# BEGIN fleet env_hooks\\n# END fleet env_hooks\\n' > /etc/profile.d/fleet.sh").ok
        assert conn.run("echo 'fleet test: the kernel log moves on its own' > /dev/kmsg").ok
    code, out, err = run_facts(lab, "--limit", "pod-580", "--drift")
    assert code == 0, err
    assert "pod-580: 2 changes since the previous record" in out, out
    assert "env.hook_installed" in out and "/etc/profile.d/fleet.sh" in out
    changes = [line.split("\t")[0] for line in out.splitlines() if line.count("\t") == 2]   # path, before, after
    assert "env.hook_installed" in changes and not [path for path in changes if "kernel_log" in path], changes
    lines = [store.read(lab.inventory.facts_dir, "pod-580", previous=p)["health"]["kernel_log_lines"]
             for p in (True, False)]
    assert lines[1] > lines[0], lines   # it did move
    lab.reset(["pod-580"])


def test_unreachable_lab_host_shows_its_last_record(lab, gathered, tmp_path):
    inventory = tmp_path / "lab.yaml"
    text = lab.inventory_path.read_text().replace("facts_dir: facts", f"facts_dir: {lab.inventory.facts_dir}")
    inventory.write_text(text.replace(lab.inventory.hosts["spark"].address, "127.0.2.99"))
    out, err = io.StringIO(), io.StringIO()
    env = Environment(console=Console(file=out, width=220, color_system=None), err_console=Console(file=err, soft_wrap=True))
    assert main(["facts", str(inventory), "--limit", "spark,thor", "--connect-timeout", "2"], env) == 1
    assert "unreachable" in out.getvalue() and "record " in out.getvalue()
    assert "dgx-spark" in out.getvalue()  # the last known values are still shown
