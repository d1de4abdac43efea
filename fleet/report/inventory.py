"""What `fleet hosts` and `fleet validate` print: an inventory as fleet reads it, no host contacted."""

from __future__ import annotations

from rich.markup import escape
from rich.table import Table

from fleet.report import Reporter


def print_hosts(reporter: Reporter, hosts, by_host: dict[str, list], *, json_out: bool) -> None:
    if json_out:
        from fleet.report import JSON_FORMAT

        doc = {"format": JSON_FORMAT, "hosts": {h.name: {
            "target": h.target, "connection": h.connection, "address": h.address, "port": h.port,
            "user": h.user, "groups": list(h.groups), "roles": [r.name for r in by_host[h.name]]} for h in hosts}}
        reporter.env.console.print_json(data=doc, ensure_ascii=True, allow_nan=False)
        return
    table = Table(box=None, pad_edge=False, padding=(0, 2, 0, 0))
    for column in ("host", "reached as", "groups", "roles"):
        table.add_column(column, no_wrap=column != "roles", overflow="fold")
    for host in hosts:
        table.add_row(escape(host.name), escape(host.target), escape(",".join(host.groups) or "-"),
                      escape(" ".join(r.name for r in by_host[host.name]) or "none"))
    reporter.print(table)


def print_valid(reporter: Reporter, path: str, hosts, by_host: dict[str, list]) -> None:
    roles = sorted({r.name for rs in by_host.values() for r in rs})
    reporter.print(f"{escape(str(path))}: valid: {len(hosts)} host{'s' if len(hosts) != 1 else ''}, "
                   f"{len(roles)} role{'s' if len(roles) != 1 else ''} ({escape(' '.join(roles))}); "
                   "no host was contacted")
