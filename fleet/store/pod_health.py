"""A reporting pod's GPU health, as `fleet health` gives it (issue 46): the pod's start script runs the same health
sections `fleet health` sends (fleet/workflows/health.py script()) and its report carries their framed text as
`facts.health_sections`; the controller reads that text with the same parsers and judges it with the same decision
(fleet/decide/health.py), so a pod's verdict and findings are the ones `fleet health` would print for it.

The text is data: split into sections and parsed, never run, rendered or kept. What the store keeps is
`facts.health`: the health facts, the verdict, its reason and advice, and the findings. A text that is not a string
or longer than MAX_TEXT refuses the report; one the parsers cannot read is the verdict "unknown", saying so. The
pod's `expect_gpus` is not known here (the server reads no inventory): the GPUs are judged as found.
"""

from __future__ import annotations

MAX_TEXT = 256 * 1024    # the health sections of an 8-GPU H200 pod: ~40 KB


def judged(facts: dict) -> dict:
    """The facts with `health_sections` replaced by `health` (verdict, reason, advice, findings, the health facts);
    facts without it as they are. Raises ValueError (its sentence; schema.check refuses the report with it) for a
    text that is no string or too long."""
    if "health_sections" not in facts:
        return facts
    text = facts.pop("health_sections")
    if not isinstance(text, str) or len(text) > MAX_TEXT:
        raise ValueError(f"facts.health_sections must be the health sections' text, at most {MAX_TEXT} characters")
    facts["health"] = _health(text)
    return facts


def _health(text: str) -> dict:
    from fleet import sections
    from fleet.decide.health import decide_health
    from fleet.facts.record import health_facts

    try:
        found = health_facts({name[len("facts."):]: sec.output for name, sec in sections.split_sections(text).items()
                              if name.startswith("facts.")})
        verdict = decide_health(found, {})       # as `fleet health` judges them (fleet/workflows/health.py read)
    except Exception as exc:   # noqa: BLE001 - a pod's text fleet cannot read is a verdict, never a crash
        return {"verdict": "unknown", "reason": f"the pod's health output could not be read ({type(exc).__name__})",
                "findings": []}
    judged = verdict.to_json()
    return {**(found.get("health") or {}), "verdict": judged["verdict"], "reason": judged["reason"],
            "advice": judged["advice"], "gpus_seen": judged["gpus"], "findings": judged["findings"]}
