"""Issue 24, decisions round two, over every situation of the generated matrix (scripts/decisions_matrix.py,
docs/DECISIONS.md) and table-driven cases: one fix per answer, and every offered fix accepted when fed back."""
from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import pytest

from fleet.decide import DEFAULTS, decide

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("decisions_matrix", ROOT / "scripts" / "decisions_matrix.py")
matrix = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(matrix)

SITUATIONS = matrix.situations()
IDS = [label for label, _, _ in SITUATIONS]
# "set NAME=VALUE" where NAME is a variable: what a text proposes
_OFFER = re.compile(r"\b(" + "|".join(sorted(DEFAULTS, key=len, reverse=True)) + r")=([^\s,;()]+)")


def texts(d) -> list[str]:
    """Every text of a decision a person reads: the refusal and each reason, and the providers' reasons."""
    out = [d.refuse or ""] + list(d.reasons.values())
    out += [p.reason for p in d.missing_providers.values()]
    return out


def offered(d) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for text in texts(d):
        for name, value in _OFFER.findall(text):
            found.setdefault(name, set()).add(value.rstrip("."))
    return found


@pytest.mark.parametrize(("label", "facts", "variables"), SITUATIONS, ids=IDS)
def test_every_text_of_an_answer_proposes_the_same_fix(label, facts, variables):
    d = decide(facts, variables)
    assert {name: values for name, values in offered(d).items() if len(values) > 1} == {}, texts(d)


@pytest.mark.parametrize(("label", "facts", "variables"), SITUATIONS, ids=IDS)
def test_every_offered_fix_fed_back_is_not_refused(label, facts, variables):
    d = decide(facts, variables)
    if not d.refuse:
        return
    fix = {name: sorted(values)[0] for name, values in offered(d).items()}
    if not fix:   # a fix outside fleet's variables (reflash, install a driver): nothing to feed back
        assert re.search(r"reflash|install|reboot|reload", d.refuse), d.refuse
        return
    again = decide(facts, {**variables, **fix})
    assert again.refuse is None, f"{d.refuse}\n  fed back {fix}:\n  {again.refuse}"


@pytest.mark.parametrize(("label", "facts", "variables"), SITUATIONS, ids=IDS)
def test_no_text_cites_a_repository_test_path_and_orin_never_names_thor(label, facts, variables):
    d = decide(facts, variables)
    blob = json.dumps(d.to_json())
    assert "tests/" not in blob
    if facts.get("platform") == "jetson-orin":
        assert "Thor" not in " ".join(texts(d))
