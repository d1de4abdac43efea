"""`fleet decide FACTS.json...` as one job, offline: each facts record read, the pure decisions made with exactly the
variables apply renders with (engine.session.decide_facts), and the built-in roles whose `when:` holds for it.

    decide_files(paths, values, roles) -> DecideRun

The command parses and prints; this holds no words of its own (fleet/report/decide.py owns them)."""

from __future__ import annotations

import time
from dataclasses import dataclass

from fleet.connection.parallel import Outcome
from fleet.errors import ExitStatus


@dataclass(frozen=True)
class DecideRun:
    """Each record's decisions, the roles that act on it and those that do not, by the name it is shown under."""

    decided: dict
    acting: dict[str, list[str]]
    skipped: dict[str, list[str]]
    outcomes: dict[str, Outcome]

    @property
    def status(self) -> ExitStatus:
        """1 when a host is refused (the reason says what it needs)."""
        return ExitStatus.HOST_FAILED if any(d.refuse for d in self.decided.values()) else ExitStatus.OK


def decide_files(paths: list[str], values: dict, roles) -> DecideRun:
    from fleet.engine.session import decide_facts as decide
    from fleet.report import terminal_safe

    decided, acting, skipped, outcomes = {}, {}, {}, {}
    for path in paths:
        started = time.monotonic()
        facts, decisions = _decide_file(decide, path, values)
        host = terminal_safe(decisions.host)    # the record's own word: a JSON key too, where scrub does not look
        name = host if host not in decided else f"{host} ({path})"
        decided[name] = decisions
        acting[name] = acting_roles(roles, facts, decisions, values)
        skipped[name] = [r.name for r in roles if r.name not in acting[name]]
        outcomes[name] = Outcome(host=name, value=decisions, seconds=time.monotonic() - started)
    return DecideRun(decided, acting, skipped, outcomes)


def _decide_file(decide, path: str, values: dict):
    import json

    from fleet.decide import FactsError, VariableError
    from fleet.errors import InputError
    from fleet.jsontext import document
    from fleet.report import terminal_safe

    try:
        with open(path, encoding="utf-8") as handle:
            facts = document(handle.read())   # 100,000 `[`: a JSONDecodeError, not a RecursionError
    except OSError as exc:
        raise InputError(f"cannot read the facts file ({exc.strerror}): give the path of a record "
                         f"written by `fleet facts`", path=path) from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        line = getattr(exc, "lineno", None)
        reason = exc.msg if isinstance(exc, json.JSONDecodeError) else "not UTF-8 text"
        raise InputError(f"not a JSON facts record ({reason}): re-gather it with `fleet facts`",
                         path=path, line=line) from None
    try:
        return facts, decide(facts, values)
    except FactsError as exc:   # the sentence quotes the record's value: remote text, made terminal-safe
        raise InputError(terminal_safe(exc), path=path) from None
    except VariableError as exc:
        raise InputError(str(exc)) from None


def acting_roles(roles, facts: dict, d, values: dict) -> list[str]:
    """The built-in roles whose `when:` holds for this host: no role list lives in the decisions."""
    from fleet.engine.session import variables
    from fleet.roles import role_applies

    if d.refuse:
        return []
    djson = d.to_json()
    host = {"name": d.host, "user": "root", "root": True}
    values = variables(facts, values)   # as apply renders them: the venv on a pod's volume
    return [r.name for r in roles if role_applies(r, values, facts, djson, host)]
