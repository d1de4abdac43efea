"""`fleet decide FACTS.json... [--set NAME=VALUE]... [--json]`: what fleet would decide, offline.

Reads facts records written by `fleet facts` (or by hand), runs the pure decisions
(fleet/decide/) and prints each decision with its reason. Contacts no host.
"""

from __future__ import annotations

import argparse

HELP = "show what fleet would decide for hosts with these facts, and why (offline)"
DESCRIPTION = """\
Read one or more facts records (facts/<host>.json, written by `fleet facts`) and print what fleet would
decide for each host: the CUDA toolkit and where it comes from, whether cuda-compat is used, which torch
wheel and whether it runs this GPU, NVPL and cuDSS, the LD_LIBRARY_PATH, and which roles act, each with
its reason. Nothing is contacted. Exit status is 1 when a host is refused (the reason says what it needs).

  fleet decide facts/pod-570.json
  fleet decide facts/thor.json --set torch_source=jetson --set cudss_source=apt
  fleet decide facts/*.json --json
"""


def register(subparsers) -> None:
    parser = subparsers.add_parser("decide", help=HELP, description=DESCRIPTION,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("facts", nargs="+", metavar="FACTS.json", help="facts record(s) of the host(s)")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE", dest="assignments",
                        help="a variable, e.g. cuda_version=13.0 or torch_source=jetson (may repeat)")
    parser.add_argument("--json", action="store_true", help="print one JSON document on stdout instead of tables")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace, env) -> int:
    import time

    from fleet.engine.session import decide_facts as decide
    from fleet.errors import ExitStatus
    from fleet.connection.parallel import Outcome
    from fleet.report import Reporter, terminal_safe

    from fleet.roles import load_roles, roles_dirs

    roles = load_roles(None, roles_dirs())
    values = parse_assignments(args.assignments, roles)
    decided, acting, skipped, outcomes = {}, {}, {}, {}
    for path in args.facts:
        started = time.monotonic()
        facts, decisions = _decide_file(decide, path, values)
        host = terminal_safe(decisions.host)    # the record's own word: a JSON key too, where scrub does not look
        name = host if host not in decided else f"{host} ({path})"
        decided[name] = decisions
        acting[name] = acting_roles(roles, facts, decisions, values)
        skipped[name] = [r.name for r in roles if r.name not in acting[name]]
        outcomes[name] = Outcome(host=name, value=decisions, seconds=time.monotonic() - started)
    reporter = Reporter(env)
    if args.json:
        reporter.json({name: {**d.to_json(), "roles": acting[name]} for name, d in decided.items()}, outcomes)
    else:
        for name, decisions in decided.items():
            print_decisions(reporter, name, decisions, acting[name], skipped[name])
    refused = [name for name, d in decided.items() if d.refuse]
    return ExitStatus.HOST_FAILED if refused else ExitStatus.OK


def parse_assignments(assignments: list[str], roles) -> dict[str, str]:
    """['cuda_version=13.0'] -> {'cuda_version': '13.0'}; names and values checked as the inventory's are."""
    from fleet.inventory.validate import parse_assignments as checked
    from fleet.roles.declared import variables_of

    return checked(assignments, variables_of(roles))


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


def print_decisions(reporter, name: str, d, acting: list[str], skipped: list[str]) -> None:
    """One block per host: each decision, its value and its reason; then the roles that act. Values and reasons
    quote the facts record (GPU names, versions, paths): remote text, printed only through markup_safe."""
    from rich.table import Table

    from fleet.report import markup_safe as escape

    status, style = ("REFUSED", "red") if d.refuse else ("ok", "green")
    reporter.host_block(name, status, "", style)
    grid = Table.grid(padding=(0, 2))
    grid.add_column(no_wrap=True)
    grid.add_column(no_wrap=True)
    grid.add_column(overflow="fold")  # URLs and paths must stay whole: a person copies them
    for label, value, reason in _rows(d, acting, skipped):
        grid.add_row(f"[bold]{label}[/bold]", escape(value), escape(reason))
    reporter.print(grid)
    if d.refuse:
        reporter.print(f"[bold red]refused:[/bold red] {escape(d.refuse)}")


def _rows(d, acting: list[str], skipped: list[str]) -> list[tuple[str, str, str]]:
    cuda = "none" if d.cuda.wanted is None else f"{d.cuda.wanted} {d.cuda.action}" + (
        f" ({d.cuda.source})" if d.cuda.source else "")
    torch = f"{d.torch.version} {d.torch.source}" + (f" cu{d.torch.cuda.replace('.', '')}" if d.torch.cuda else " cpu")
    torch += "" if d.torch.supported else " UNSUPPORTED"
    rows = [
        ("cuda", cuda, d.cuda.reason),
        ("compat", "on" if d.compat.use else "off", d.compat.reason),
        ("torch", torch, d.torch.reason),
        ("nvpl", _library(d.nvpl), d.nvpl.reason),
        ("cudss", _library(d.cudss), d.cudss.reason),
        ("LD_LIBRARY_PATH", f"{len(d.ld_library_path)} dir{'s' if len(d.ld_library_path) != 1 else ''}", "\n".join(d.ld_library_path) or "nothing to add"),
    ]
    fabric = d.fabric or {}
    if fabric:   # the links between the GPUs (issue 28): the fabric manager, or the provider's fix
        reason = fabric.get("reason", "")
        if fabric.get("warn") and fabric["warn"] != reason:
            reason += f"; WARNING: {fabric['warn']}"
        rows.insert(-1, ("fabric", f"{fabric.get('gpus', 0)} GPU(s) {fabric.get('action')}", reason))
    health = d.health or {}
    if health.get("verdict") not in (None, "none"):   # the GPUs themselves (issue 36): what, which GPU, NVIDIA's action
        shown = "return this pod" if health["verdict"] == "return" else health["verdict"]
        rows.insert(-1, ("GPU health", shown, health.get("reason", "")))
    if d.refuse:
        return rows + [("roles", "none", "the host is refused: no role runs")]
    rows.append(("roles", f"{len(acting)} act", " ".join(acting) + (f" (skipped: {' '.join(skipped)})" if skipped else "")))
    return rows


def _library(library) -> str:
    return f"from {library.source}" if library.needed else "not needed"
