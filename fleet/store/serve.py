"""`fleet serve`: pods' reports in, over HTTP(S), into the history store. Write-only: one route, POST /v1/reports,
and nothing that reads the store back.

aiohttp (aio-libs) serves it: one event loop holds a thousand pods' connections at once where a thread per
connection would hold a thousand threads, it bounds a request's body itself (client_max_size: 413 before the
body is read whole) and terminates TLS with the standard ssl module, so a non-loopback address needs no proxy in
front. The store's writes run on a small thread pool (psycopg and sqlite3 are blocking): one thread on SQLite
(one writer at a time anyway), eight on PostgreSQL.

Each request: the fleet's token (Authorization: Bearer, compared in constant time; 401 without it), a JSON
body of at most schema.MAX_BYTES (413), the report checked by schema.check (422 with its sentence), no older
than the retention (422), then stored: 200 {"outcome": "stored" | "unchanged" | "duplicate"}. A store that
fails answers 503: the pod keeps the report and sends it next time. Nothing a report carries is logged.
"""

from __future__ import annotations

import asyncio
import hmac
import ipaddress
import json
import ssl
import sys
import time
from concurrent.futures import ThreadPoolExecutor

from fleet.errors import InputError
from fleet.store import schema

ROUTE = "/v1/reports"
TOKEN_MIN = 16


def parse_listen(text: str) -> tuple[str, int]:
    """'127.0.0.1:8470', '[::1]:8470', 'localhost:8470' -> (address, port)."""
    host, sep, port = text.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise InputError(f"--listen {text!r} is not ADDRESS:PORT; write e.g. --listen 127.0.0.1:8470")
    return host, int(port)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_token(token: str | None, where: str) -> str:
    token = (token or "").strip()
    if len(token) < TOKEN_MIN or any(ch.isspace() or not ch.isprintable() for ch in token):
        raise InputError(f"{where} is not a usable token (unset, or shorter than {TOKEN_MIN} printable characters "
                         "without spaces); make one with: openssl rand -hex 32")
    return token


def tls_context(cert: str | None, key: str | None, host: str) -> ssl.SSLContext | None:
    """TLS from the certificate and key given; none on a loopback address; else refused (a token and reports
    would cross the network in the clear)."""
    if cert and key:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        try:
            context.load_cert_chain(cert, key)
        except (OSError, ssl.SSLError) as exc:
            raise InputError(f"cannot load the TLS certificate {cert} and key {key} ({exc}); give PEM files") from None
        return context
    if cert or key:
        raise InputError("give both --tls-cert and --tls-key, or neither (loopback only)")
    if not is_loopback(host):
        raise InputError(f"--listen {host}: not a loopback address, and no TLS: give --tls-cert and --tls-key, or "
                         "listen on 127.0.0.1 behind a TLS proxy")
    return None


def make_app(store, token: str, *, retain: float, workers: int | None = None):
    from aiohttp import web

    pool = ThreadPoolExecutor(max_workers=workers or (1 if store.engine.name == "sqlite" else 8),
                              thread_name_prefix="fleet-store")
    expected = f"Bearer {token}".encode()

    def answer(status: int, **body) -> web.Response:
        return web.json_response(body, status=status)

    async def ingest(request: web.Request) -> web.Response:
        if not hmac.compare_digest(request.headers.get("Authorization", "").encode(), expected):
            return answer(401, error="no or a wrong token: send Authorization: Bearer $FLEET_REPORT_TOKEN")
        if request.content_type != "application/json":
            return answer(415, error="a report is sent as application/json")
        try:
            body = await request.read()
        except web.HTTPRequestEntityTooLarge:
            return answer(413, error=f"a report is at most {schema.MAX_BYTES} bytes")
        try:
            sent = json.loads(body)
        except (ValueError, RecursionError):
            return answer(400, error="the body is not JSON")
        try:
            checked = schema.check(sent)
        except schema.Refused as exc:
            return answer(422, error=str(exc))
        if checked["at_s"] < time.time() - retain:
            return answer(422, error="the report is older than the store keeps history; it is not stored")
        try:
            outcome = await asyncio.get_running_loop().run_in_executor(pool, store.add, checked)
        except Exception as exc:   # noqa: BLE001 - the pod keeps the report and sends it again
            print(f"fleet serve: the store refused a write ({type(exc).__name__}); answered 503", file=sys.stderr,
                  flush=True)
            return answer(503, error="the store is unavailable; send the report again later")
        return answer(200, outcome=outcome)

    async def close_pool(app) -> None:
        pool.shutdown(wait=True)

    app = web.Application(client_max_size=schema.MAX_BYTES)
    app.router.add_post(ROUTE, ingest)
    app.on_cleanup.append(close_pool)
    return app


def serve(store, token: str, host: str, port: int, *, retain: float, context: ssl.SSLContext | None,
          say=print) -> None:
    """Serve until SIGINT/SIGTERM (aiohttp's run_app ends the loop gracefully on either)."""
    from aiohttp import web

    app = make_app(store, token, retain=retain)
    scheme = "https" if context else "http"
    say(f"fleet serve: listening on {scheme}://{host}:{port}{ROUTE} into {store.url}")
    web.run_app(app, host=host, port=port, ssl_context=context, backlog=2048, print=None, access_log=None,
                handle_signals=True)
