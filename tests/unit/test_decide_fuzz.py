"""Issue 16 (crash sites found by fuzzing): `fleet decide` on a damaged record answers exit 0/1 (it could
still decide) or 2 (one sentence naming the file), never 3 (an internal error). Damage is deterministic:
a seeded generator deletes keys or substitutes values of another type all over real records."""
from __future__ import annotations

import copy
import json
import random
from pathlib import Path

import pytest

from test_decide import DATA, RECORDS, folded, run_cli

SOURCES = sorted(RECORDS.glob("*.json")) + [DATA / "h100-real.json", DATA / "h100-device" / "h100-device.json"]
SUBSTITUTES = (None, 0, -1, 3.5, True, "", "x", "[N/A]", "580.65.06", [], [1, "a"], {}, {"version": {}})
MUTATIONS_PER_RECORD = 40


@pytest.fixture(autouse=True)
def roles_loaded_once(monkeypatch):
    """The shipped roles do not change between mutations: parse them once (it is most of a run's time)."""
    import fleet.roles

    loaded = fleet.roles.load_roles(None, fleet.roles.roles_dirs())
    monkeypatch.setattr(fleet.roles, "load_roles", lambda *args, **kwargs: loaded)


def paths(doc, prefix=()):
    """Every (parent, key) in the document, depth first."""
    items = doc.items() if isinstance(doc, dict) else enumerate(doc) if isinstance(doc, list) else ()
    for key, value in items:
        yield prefix + (key,)
        yield from paths(value, prefix + (key,))


def damaged(record: dict, rng: random.Random) -> tuple[dict, str]:
    doc = copy.deepcopy(record)
    path = rng.choice(list(paths(doc)))
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    if isinstance(parent, dict) and rng.random() < 0.3:
        del parent[path[-1]]
        return doc, f"del {'.'.join(map(str, path))}"
    parent[path[-1]] = copy.deepcopy(rng.choice(SUBSTITUTES))
    return doc, f"{'.'.join(map(str, path))} = {parent[path[-1]]!r}"


@pytest.mark.parametrize("source", SOURCES, ids=[p.name for p in SOURCES])
def test_damaged_records_never_exit_3(tmp_path, source, roles_loaded_once):
    rng = random.Random(f"issue-16:{source.name}")
    record = json.loads(source.read_text())
    target = tmp_path / "damaged.json"
    seen = {0: 0, 1: 0, 2: 0}
    for _ in range(MUTATIONS_PER_RECORD):
        doc, what = damaged(record, rng)
        target.write_text(json.dumps(doc))
        status, out, err = run_cli(str(target))
        assert status in (0, 1, 2), f"{source.name}: {what} -> exit {status}: {err}"
        if status == 2:
            assert folded(err).startswith("error:") and "damaged.json" in err and "Traceback" not in err, what
        seen[status] += 1
    assert seen[2] > 0, "no mutation was judged unreadable: the fuzzing did not reach the readers"
