"""The lab mirror's server holds many connections at once, as a real mirror does (issue 46: 19 of 30 pods' first
applies could not connect to it, "connection timed out" after ~130 s of SYN retries): connections that open and say
nothing (a TLS handshake not begun) hold neither the listen queue nor the other connections' handshakes."""

import functools
import http.client
import os
import socket
import ssl
import threading

from fleet_lab import serve, tls

ADDRESS = os.environ.get("FLEET_TEST_LAB_NET", "127.0.27") + ".253"


def test_a_request_is_answered_behind_hundreds_of_silent_connections(tmp_path):
    tls.build(tmp_path / "tls")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(tmp_path / "tls" / "server.pem", tmp_path / "tls" / "server.key")
    handler = functools.partial(serve.Handler, directory=str(tmp_path))
    server = serve.Server((ADDRESS, 0), handler)
    server.context = context
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    silent = []
    try:
        for _ in range(300):      # more than socketserver's queue of 5; none begins its handshake
            silent.append(socket.create_connection((ADDRESS, port), timeout=30))
        client = ssl.create_default_context(cafile=str(tmp_path / "tls" / "ca.pem"))
        conn = http.client.HTTPSConnection(ADDRESS, port, context=client, timeout=60)
        conn._tunnel_host = None
        sock = socket.create_connection((ADDRESS, port), timeout=60)
        conn.sock = client.wrap_socket(sock, server_hostname="developer.download.nvidia.com")
        conn.request("GET", "/compute/nothing-here", headers={"Host": "developer.download.nvidia.com"})
        answer = conn.getresponse()
        assert answer.status == 404          # answered: the site's missing file, as a mirror says it
        conn.close()
    finally:
        for sock in silent:
            sock.close()
        server.shutdown()
        server.server_close()
