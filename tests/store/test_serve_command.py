"""`fleet serve`'s own refusals (exit 2, one sentence, nothing served) and its TLS, end to end with the pod's
sender trusting the certificate it is given (FLEET_REPORT_CA)."""

import io
import json
import os
import subprocess

import pytest
from rich.console import Console

from fleet import remote
from fleet.cli import main
from fleet.env import Environment
from fleet.store import open_store, query
from fleet_lab.report_server import ServeProcess

TOKEN = "serve-command-token-0123456789ab"


def serve(tmp_path, *argv):
    err = io.StringIO()
    env = Environment(console=Console(file=io.StringIO()), err_console=Console(file=err, width=300, soft_wrap=True), cwd=tmp_path)
    return main(["serve", "--store", f"sqlite:///{tmp_path}/h.sqlite3", *argv], env), err.getvalue()


@pytest.mark.parametrize("argv, token, says", [
    (["--listen", "0.0.0.0:8470"], TOKEN, "not a loopback address, and no TLS: give --tls-cert and --tls-key"),
    (["--listen", "10.1.2.3:8470"], TOKEN, "not a loopback address"),
    (["--listen", "8470"], TOKEN, "is not ADDRESS:PORT"),
    (["--listen", "127.0.0.1:8470"], None, "FLEET_SERVE_TOKEN is not a usable token (unset, or shorter than 16"),
    (["--listen", "127.0.0.1:8470"], "short", "is not a usable token"),
    (["--listen", "127.0.0.1:8470", "--tls-cert", "c.pem"], TOKEN, "give both --tls-cert and --tls-key"),
])
def test_refused_before_anything_is_served(tmp_path, monkeypatch, argv, token, says):
    if token is None:
        monkeypatch.delenv("FLEET_SERVE_TOKEN", raising=False)
    else:
        monkeypatch.setenv("FLEET_SERVE_TOKEN", token)
    code, err = serve(tmp_path, *argv)
    assert code == 2 and says in err


def test_a_token_file_others_can_read_is_refused(tmp_path, monkeypatch):
    monkeypatch.delenv("FLEET_SERVE_TOKEN", raising=False)
    (tmp_path / "token").write_text(TOKEN)
    os.chmod(tmp_path / "token", 0o644)
    code, err = serve(tmp_path, "--token-file", "token")
    assert code == 2 and "can be read by other users; chmod 600 it" in err


def test_a_password_in_the_store_url_is_refused_and_not_echoed(tmp_path, monkeypatch):
    monkeypatch.setenv("FLEET_SERVE_TOKEN", TOKEN)
    err = io.StringIO()
    env = Environment(console=Console(file=io.StringIO()), err_console=Console(file=err, width=300, soft_wrap=True), cwd=tmp_path)
    code = main(["serve", "--store", "postgresql://fleet:s3cret-pw@db/fleet"], env)
    assert code == 2 and "carries a password" in err.getvalue() and "s3cret-pw" not in err.getvalue()


def test_tls_end_to_end(tmp_path):
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                    "-nodes", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1", "-days", "1",
                    "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True,
                   stdin=subprocess.DEVNULL)
    url = f"sqlite:///{tmp_path}/h.sqlite3"
    server = ServeProcess(url, TOKEN, cwd=tmp_path, tls=(cert, key)).start()
    try:
        base = {"PATH": os.environ["PATH"], "FLEET_REPORT_SPOOL": str(tmp_path / "spool"),
                "FLEET_REPORT_TOKEN": TOKEN}
        argv = ["python3", "-s", "-c", remote.source("report_send"), server.url, "pod-tls", "0.1.0", "0", "0",
                str(tmp_path / "none.json")]
        untrusted = subprocess.run(argv, env=base, capture_output=True, text=True, stdin=subprocess.DEVNULL)
        assert "0 sent, 1 kept" in untrusted.stdout and "CERTIFICATE_VERIFY_FAILED" in untrusted.stdout
        trusted = subprocess.run(argv, env={**base, "FLEET_REPORT_CA": str(cert)}, capture_output=True, text=True,
                                 stdin=subprocess.DEVNULL)
        assert trusted.stdout.strip() == "report: 2 sent, 0 kept to send next time, 0 refused"
    finally:
        server.kill()
    with open_store(url) as store:
        assert [row.host for row in query.hosts(store)] == ["pod-tls"]
        assert store.rows("SELECT COUNT(*) FROM receipts")[0][0] == 2
