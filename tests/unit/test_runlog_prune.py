"""Run logs are pruned (issue 38): the default folder keeps the newest N, by their names' start times; a file
given with --log, and files fleet did not name, are never touched."""

from __future__ import annotations

from fleet.record import runlog


def test_the_default_folder_keeps_the_newest_and_nothing_else_is_touched(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    monkeypatch.setenv("FLEET_RUN_LOGS_KEEP", "3")
    folder = runlog.runs_dir()
    folder.mkdir(parents=True)
    (folder / "notes.jsonl").write_text("mine\n")
    for day in range(1, 6):
        runlog.write(folder / f"202611{day:02d}T120000Z-{100 + day}-apply.jsonl", ['{"run": 1}'])
    assert sorted(p.name for p in folder.iterdir()) == [
        "20261103T120000Z-103-apply.jsonl", "20261104T120000Z-104-apply.jsonl", "20261105T120000Z-105-apply.jsonl",
        "notes.jsonl"]
    elsewhere = tmp_path / "mine.jsonl"
    for _ in range(5):
        runlog.write(elsewhere, ['{"run": 1}'])
    assert len(elsewhere.read_text().splitlines()) == 5
