"""bench/h200/copies_health.sh's recorder (bench/h200/copies_record.py) reads what the verify program writes: a run's
checks and `copies` as copies.judge leaves them (the keys tests/unit/h200_copies_records_pending.py reads)."""

import importlib.util
import json
from pathlib import Path

from fleet.remote.verify import copies
from fleet.remote.verify.config import Run
from fleet.knowledge import copy_floors

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "h200" / "copies_record.py"


def _recorder():
    spec = importlib.util.spec_from_file_location("copies_record", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_recorder_reads_what_the_program_writes(tmp_path):
    run = Run({"copy_table": copy_floors.rows()})
    figures = {"gpus": [{"index": 0, "h2d_gbs": 55.5, "d2h_gbs": 55.3}, {"index": 1, "h2d_gbs": 55.1, "d2h_gbs": 30.2}],
               "pairs": [{"src": 0, "dst": 1, "read_gbs": 372.0, "write_gbs": 366.0},
                         {"src": 1, "dst": 0, "read_gbs": 371.0, "write_gbs": 365.0}]}
    row = run.config.copy_row("NVIDIA H200")
    figures.update(bytes=256 << 20, seconds=1.7, floors=row)
    run.out["copies"] = figures
    copies.judge(run, figures, row, {(0, 1): "NV18"})
    record = tmp_path / "verify.json"
    record.write_text(json.dumps(run.result("/venv/bin/python3")))
    line = _recorder().line("1", 1, 12.5, json.loads(record.read_text()))
    assert line["checks"] == {"copies_host": False, "copies_pairs": True}
    assert line["copies"]["floors"]["pair_read_floor_gbs"] == 335.0 and line["copies"]["seconds"] == 1.7
    assert [c["name"] for c in line["failed"]] == ["copies_host"]
    assert "GPU 1 device-to-host 30.2 GB/s" in line["failed"][0]["detail"]
