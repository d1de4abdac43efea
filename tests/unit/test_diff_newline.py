"""--diff where a file lacks its final newline (issue 38): the change shows as diff(1) shows it ("\\ No newline at
end of file"), not as a last line changed into itself; `patch`, given the diff, turns the file as it is now into
the file apply writes."""

from __future__ import annotations

import subprocess
from types import SimpleNamespace

from fleet.engine.plan import diff


def _diff(path, now: str, after: str) -> str:
    task = SimpleNamespace(resource=SimpleNamespace(wanted_text=lambda: after, p={"path": str(path)}))
    return diff(task, SimpleNamespace(diff=now))


def test_a_missing_final_newline_is_named_and_patch_agrees(tmp_path):
    target = tmp_path / "env.sh"
    now, after = "export A=1\nexport B=2", "export A=1\nexport B=2\n"
    text = _diff(target, now, after)
    assert "-export B=2\n\\ No newline at end of file\n+export B=2\n" in text, text
    target.write_text(now)
    (tmp_path / "change.diff").write_text(text)
    subprocess.run(["patch", str(target), str(tmp_path / "change.diff")], check=True, capture_output=True)
    assert target.read_text() == after


def test_files_with_their_newlines_diff_as_before(tmp_path):
    text = _diff(tmp_path / "f", "a\nb\n", "a\nc\n")
    assert "No newline" not in text and "-b\n+c\n" in text
    assert _diff(tmp_path / "f", "a\n", "a\n") is None
