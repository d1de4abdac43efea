"""docs/DECISIONS.md is generated from fleet/decide (scripts/decisions_matrix.py): CI fails when it is stale,
and it covers at least 30 situations (issue 12)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_decisions_md_is_what_the_code_decides_now():
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "decisions_matrix.py"), "--check"],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr


def test_decisions_md_covers_thirty_situations_with_their_reasons():
    rows = [line for line in (ROOT / "docs" / "DECISIONS.md").read_text().splitlines()
            if line.startswith("| ") and not line.startswith("| situation")]
    assert len(rows) >= 30
    assert all(line.count(" | ") >= 5 and len(line.rsplit(" | ", 1)[1]) > 20 for line in rows)
    refused = [line for line in rows if "**refused**" in line]
    assert refused and len(refused) < len(rows)
