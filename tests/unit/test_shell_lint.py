"""Lint what ships to a host: every fleet/remote/*.sh (as written and as stripped) and every role template that is
a shell program (roles/*/templates/*.sh.j2), rendered for each of the lab's hosts (their recorded facts records,
bench/data/replay-lab-facts) and for the recorded H100 pod under an older driver (where cuda_compat renders its
gate), pass `bash -n` (or `dash -n` for a POSIX sh program) and shellcheck (Debian's package `shellcheck`,
scripts/setup.sh installs it). A finding is fixed in the program, or disabled on its line with a reason."""

import json
import subprocess
from pathlib import Path

import pytest

from fleet import remote
from fleet.decide import decide
from fleet.roles import BUILTIN_DIR, load_role, render_role

ROOT = Path(__file__).resolve().parents[2]
REMOTE = ROOT / "fleet" / "remote"
FACTS = sorted((ROOT / "bench" / "data" / "replay-lab-facts").glob("*.json")) + \
    [ROOT / "tests" / "data" / "records" / "h100-pod-570.json"]
SH_TEMPLATES = sorted(p.name for p in BUILTIN_DIR.glob("*/templates/*.sh.j2"))
# Findings a rendered template keeps on purpose, with the reason. A `# shellcheck disable=` line in the template
# would ship to every host and change the file a converged host holds (one rewrite each), so these stay here.
EXCUSED = {
    "env.sh.j2": {"SC3028": "${BASH_EXECUTION_STRING-} is read under dash too, where it is unset and so empty: the "
                            "hook tells fleet's own bash -c commands from a user's shell under bash only"},
}


def shellcheck(text: str, shell: str, name: str, excused=()) -> None:
    excluded = ["-e", ",".join(excused)] if excused else []
    run = subprocess.run(["shellcheck", "-s", shell, "-f", "gcc", *excluded, "-"], input=text, capture_output=True,
                         text=True)
    assert run.returncode == 0, f"{name}: shellcheck -s {shell} found:\n{run.stdout}{run.stderr}"


def syntax(text: str, shell: str, name: str) -> None:
    run = subprocess.run([shell, "-n"], input=text, capture_output=True, text=True)
    assert run.returncode == 0, f"{name}: {shell} -n: {run.stderr}"


@pytest.mark.parametrize("name", remote.programs())
def test_each_remote_program_is_clean_bash(name):
    text = (REMOTE / f"{name}.sh").read_text()
    syntax(text, "bash", f"fleet/remote/{name}.sh")
    syntax(remote.program(name), "bash", f"fleet/remote/{name}.sh, stripped")
    shellcheck(text, "bash", f"fleet/remote/{name}.sh")


def rendered_templates() -> dict[str, list[tuple[str, str]]]:
    """template name -> [(host, rendered text)] over every built-in role, for each recorded host."""
    out: dict[str, list[tuple[str, str]]] = {}
    for path in FACTS:
        facts = json.loads(path.read_text())
        host = {"name": path.stem, "user": "root", "root": True}
        decisions = decide(facts, {}).to_json()
        for role_yaml in sorted(BUILTIN_DIR.glob("*/role.yaml")):
            role = load_role(role_yaml)
            templates = {spec.params.get("template"): spec.name for spec in role.tasks
                         if isinstance(spec.params, dict) and str(spec.params.get("template", "")).endswith(".sh.j2")}
            if not templates:
                continue
            for task in render_role(role, {}, facts, decisions, host):
                template = next((t for t, n in templates.items() if task.spec.name.startswith(n.split(" {{")[0])), None)
                target = type(task.resource).template_target
                if task.enabled and template and target and task.resource.p.get(target):
                    out.setdefault(template, []).append((path.stem, task.resource.p[target]))
    return out


def test_every_shell_template_is_rendered_and_clean():
    rendered = rendered_templates()
    assert sorted(rendered) == SH_TEMPLATES   # each is linted as some host receives it
    for template, texts in rendered.items():
        for host, text in texts:
            first = text.split("\n", 1)[0]
            shell = "bash" if "bash" in first else "sh"
            syntax(text, "bash" if shell == "bash" else "dash", f"{template} rendered for {host}")
            shellcheck(text, shell, f"{template} rendered for {host}", EXCUSED.get(template, {}))
