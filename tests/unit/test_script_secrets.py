"""`fleet script -o` keeps a credential where only its owner reads it, and never in a comment (issue 49: the index
password and a git token were in a 0755 file and repeated in its comments)."""

from __future__ import annotations

import io
import stat
import textwrap

from rich.console import Console

from fleet.cli import main
from fleet.env import Environment

TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0" * 2
PASSWORD = "s3cr3t-Pa55word"

ROLE = f"""
    description: a private index and a private repository
    tasks:
      - name: a repository read with a token (https://x-access-token:{TOKEN}@github.com/org/private)
        git: {{repo: "https://x-access-token:{TOKEN}@github.com/org/private", ref: v1.0.0, dest: "{{{{ work }}}}/repo"}}
      - name: a private index
        pip: {{packages: [torch==2.11.0], venv: "{{{{ work }}}}/venv", index_url: "https://me:{PASSWORD}@pypi.example/simple"}}
    """


def test_the_script_is_owner_only_and_its_comments_hold_no_credential(tmp_path):
    (tmp_path / "roles" / "creds").mkdir(parents=True)
    (tmp_path / "roles" / "creds" / "role.yaml").write_text(textwrap.dedent(ROLE))
    (tmp_path / "work").mkdir()
    (tmp_path / "inv.yaml").write_text(f"roles_path: roles\nroles: [creds]\nhosts:\n  here: {{connection: local, vars: "
                                       f"{{work: {tmp_path / 'work'}}}}}\n")
    (tmp_path / "old.sh").write_text("an older script, once 0755\n")
    (tmp_path / "old.sh").chmod(0o755)
    out, err = io.StringIO(), io.StringIO()
    env = Environment(console=Console(file=out, width=200), err_console=Console(file=err, width=200, soft_wrap=True), cwd=tmp_path)
    assert main(["script", str(tmp_path / "inv.yaml"), "--limit", "here", "-o", "old.sh"], env) == 0, err.getvalue()
    mode = stat.S_IMODE((tmp_path / "old.sh").stat().st_mode)
    assert mode == 0o700, oct(mode)                          # read back with stat: no group, no other
    text = (tmp_path / "old.sh").read_text()
    assert TOKEN in text and PASSWORD in text                # the code needs them ...
    comments = [line for line in text.splitlines() if line.lstrip().startswith("#")]
    assert any("github.com/org/private" in line for line in comments)
    leaked = [line for line in comments if TOKEN in line or PASSWORD in line]
    assert not leaked, leaked                                # ... a reader of its comments does not
