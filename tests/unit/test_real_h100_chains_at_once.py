"""What the lent H100 answered this session (tests/data/h100-device/session2): read from the records it wrote, so
that the claims in its README stay tied to them."""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).resolve().parents[1] / "data" / "h100-device" / "session2"


def test_the_first_apply_ran_its_chains_at_once_on_the_real_host():
    doc = json.loads((HERE / "first.json").read_text())
    tasks = [t for t in doc["hosts"]["h100"]["tasks"] if t.get("started") is not None]
    by_chain: dict[str, list] = {}
    for t in tasks:
        by_chain.setdefault(t["chain"], []).append((t["started"], t["ended"]))
    assert set(by_chain) == {"env_hooks", "cutlass"}
    hooks = (min(a for a, _ in by_chain["env_hooks"]), max(b for _, b in by_chain["env_hooks"]))
    clone = by_chain["cutlass"][0]
    assert clone[0] < hooks[1] and hooks[0] < clone[1]             # the two overlapped on the host's clock
    assert doc["hosts"]["h100"]["failed"] == 0


def test_the_second_apply_was_one_command_and_verify_saw_one_gpu():
    doc = json.loads((HERE / "noop.json").read_text())
    assert doc["hosts"]["h100"]["changed"] == 0 and doc["stats"]["h100"]["remote_commands"] == 1
    text = (HERE / "transcript.txt").read_text()
    assert "gpu_links, perf_matmul, perf_attention (one GPU: no links to check)" in text
    assert '"gpu_count": 1' in text and '"nvswitch": false' in text and '"container": true' in text
