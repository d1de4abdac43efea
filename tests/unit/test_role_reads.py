"""A name a user's role reads that nothing gives (issue 38): found before any host is contacted, exit 2, with the
file and line that reads it and the closest name that is given, as the same typo in the inventory is."""

from __future__ import annotations

import io
import time

from rich.console import Console

from fleet.cli import main
from fleet.env import Environment

ROLE = """\
description: my env file
defaults: {cutlass_dir: /opt/cutlass, greeting: hello}
tasks:
  - name: env file
    file: {path: /etc/mine.sh, template: mine.sh.j2}
  - name: only where asked
    command: {cmd: "echo {{ extra_word }}", creates: /tmp/x}
    when: extra_word is defined
"""
TEMPLATE = """# line 1
export GREETING={{ greeting }}
{% if true %}
export CUTLASS_HOME={{ cutlass_dri }}
{% endif %}
"""


def test_a_typo_in_a_role_template_is_found_offline_with_a_did_you_mean(tmp_path):
    role = tmp_path / "roles" / "mine"
    (role / "templates").mkdir(parents=True)
    (role / "role.yaml").write_text(ROLE)
    (role / "templates" / "mine.sh.j2").write_text(TEMPLATE)
    inv = tmp_path / "pods.yaml"
    # TEST-NET-3: nothing answers there; a connection attempt would wait out the 10 s connect timeout
    inv.write_text("roles_path: [roles]\nroles: [mine]\nhosts:\n  pod-a: {address: 203.0.113.10}\n")
    err = io.StringIO()
    env = Environment(console=Console(file=io.StringIO(), width=200), err_console=Console(file=err, width=400, soft_wrap=True))
    began = time.monotonic()
    code = main(["apply", str(inv), "--check"], env)
    assert code == 2, err.getvalue()
    assert time.monotonic() - began < 5, "a host was contacted"
    said = " ".join(err.getvalue().split())
    assert f"{role / 'templates' / 'mine.sh.j2'}:4: role mine reads 'cutlass_dri'" in said, said
    assert "did you mean 'cutlass_dir'?" in said, said
    assert "extra_word" not in said, said        # guarded by the role itself (`is defined`): its own business
