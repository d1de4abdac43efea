"""`fleet serve --store URL --listen ADDR:PORT`: pods' reports in, into the history store."""

from __future__ import annotations

import argparse

HELP = "take pods' reports (fleet script --report URL) into the history store"
DESCRIPTION = """\
Listen for the reports pods send after each run of their start script (`fleet script --report URL`) and keep
them in the history store, where `fleet facts --where/--failed/--stale/--history` finds them. Write-only: one
route, POST /v1/reports, and no way to read anything back. Each report must carry the fleet's token
(Authorization: Bearer), be JSON of at most 512 KB in fleet's report format, and speak for its own host alone;
a report sent twice counts once.

The token comes from FLEET_SERVE_TOKEN or --token-file (never the command line); the pods get the same value
as FLEET_REPORT_TOKEN in their environment (a template secret). A non-loopback address needs TLS
(--tls-cert, --tls-key).

  FLEET_SERVE_TOKEN=$(cat token) fleet serve --store postgresql://fleet@db/fleet --listen 127.0.0.1:8470
  fleet serve --store sqlite:///var/lib/fleet/history.sqlite3 --listen 0.0.0.0:8470 --token-file token \\
      --tls-cert cert.pem --tls-key key.pem
"""


def register(subparsers) -> None:
    from fleet.commands import _common

    parser = _common.command(subparsers, "serve", HELP, DESCRIPTION)
    parser.add_argument("--store", metavar="URL", default=None,
                        help="sqlite:///PATH or postgresql://USER@HOST/DB (default: $FLEET_STORE)")
    parser.add_argument("--listen", metavar="ADDR:PORT", default="127.0.0.1:8470",
                        help="where to listen (default 127.0.0.1:8470; a non-loopback address needs TLS)")
    parser.add_argument("--token-file", metavar="FILE", default=None,
                        help="the fleet's report token, read from FILE (else $FLEET_SERVE_TOKEN)")
    parser.add_argument("--tls-cert", metavar="PEM", default=None, help="TLS certificate chain")
    parser.add_argument("--tls-key", metavar="PEM", default=None, help="TLS private key")
    parser.add_argument("--retain", metavar="DURATION", default=None,
                        help="refuse reports older than this, and purge history older than it at start "
                             "(default 365d)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace, env) -> int:
    import os
    import sys

    from fleet import parse
    from fleet.errors import ExitStatus, InputError
    from fleet.store import DEFAULT_RETAIN, open_store, settings
    from fleet.store import serve

    found = settings(None, url=args.store)
    host, port = serve.parse_listen(args.listen)
    context = serve.tls_context(args.tls_cert, args.tls_key, host)
    if args.token_file:
        path = env.cwd / args.token_file
        try:
            if os.stat(path).st_mode & 0o077:
                raise InputError(f"--token-file {path} can be read by other users; chmod 600 it")
            token = serve.check_token(path.read_text(encoding="utf-8"), f"--token-file {path}")
        except OSError as exc:
            raise InputError(f"cannot read --token-file {path} ({exc.strerror})") from None
    else:
        token = serve.check_token(os.environ.get("FLEET_SERVE_TOKEN"), "FLEET_SERVE_TOKEN")
    try:
        retain = parse.duration(args.retain) if args.retain else DEFAULT_RETAIN
    except parse.Rejected as exc:
        raise InputError(f"--retain: {exc}") from None
    try:
        import aiohttp  # noqa: F401
    except ImportError:
        raise InputError("fleet serve needs aiohttp: pip install 'fleet[serve]'") from None
    store = open_store(found.url)
    try:
        store.purge(retain)
        serve.serve(store, token, host, port, retain=retain, context=context,
                    say=lambda line: print(line, file=sys.stderr, flush=True))
    finally:
        store.close()
    return ExitStatus.OK
