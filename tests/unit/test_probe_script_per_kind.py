"""A probe's script is the same for every pod of a kind, whoever it is: what a converged pod is sent depends on its
settings and on what its checks render from its facts, never on its hostname, its GPUs' UUIDs or what it read off the
moment. That is why the probe's script, frames and packed stdin are kept for their complete inputs (fleet/sections.py
together and framed, engine/probe.py _parts, fleet/shell.py): a real fleet of one kind of pod builds them once, as the
replayed bench does; a fleet whose checks rendered each host's identity would build them for each host again."""

import copy
import json
from pathlib import Path

import pytest

from fleet import sections, shell
from fleet.engine import probe, session
from fleet.engine.decided import check_sections, decide_tasks
from fleet.inventory import Host

RECORDS = Path(__file__).resolve().parents[2] / "bench" / "data" / "replay-lab-facts"


def sent(host: Host, facts: dict) -> str:
    """What a converged apply's probe sends `host` whose last record is `facts` (observe's first command)."""
    (roles,) = session.roles_of([host], ()).values()
    decided = decide_tasks(roles, host, facts)
    needs = probe.needs_of(host, facts, install=True)
    checks = check_sections(decided, None, have=needs.have, install=True)
    return shell.ends_with_connection(probe.script(needs, [*checks, *probe.upgrades(needs)]), local=False)


def another_pod(facts: dict) -> dict:
    other = copy.deepcopy(facts)
    other["host"] = "pod-other-17"
    other["gathered_at"] = "2026-12-01T03:04:05Z"
    other["system"].update(hostname="pod-other-17", mem_available_mb=12_345, disk_free_gb=77.5)
    for i, gpu in enumerate(other.get("gpus") or []):
        gpu["uuid"] = f"GPU-0f0f0f0f-0000-4000-8000-00000000000{i}"
    return other


@pytest.mark.parametrize("name", ["pod-570", "pod-580", "thor", "spark"])
def test_another_pod_of_the_same_kind_is_sent_the_same_probe(name):
    facts = json.loads((RECORDS / f"{name}.json").read_text())
    user = "nvidia" if name == "spark" else "root"
    first = sent(Host(name, address="192.0.2.1", user=user), facts)
    other = sent(Host("pod-other-17", address="192.0.2.2", user=user), another_pod(facts))
    assert other == first
    assert other is first          # the same text, kept: built once for both
    assert sections.framed(other) == sections.framed(first) and len(sections.framed(first)) > 30
