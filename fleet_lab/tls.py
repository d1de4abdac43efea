"""The lab's certificate authority and the mirror's server certificate (python `cryptography`, which comes
with paramiko). Lab hosts trust the CA through their system store and pip's `cert =`; this machine's own
trust store is never touched.

    <mirror>/tls/ca.pem          the lab CA (installed into every lab host)
    <mirror>/tls/server.pem      the mirror's certificate: every real source hostname as a DNS SAN
    <mirror>/tls/server.key      its key (0600; the mirror directory is never shown to hosts)
"""

from __future__ import annotations

import datetime
import os
from pathlib import Path

# The real hostnames of every default source (fleet/decide/variables.py, the roles' defaults): the lab's
# hosts resolve each to the mirror server, so what ships is what the lab tests.
SOURCE_HOSTNAMES = ("developer.download.nvidia.com", "download.pytorch.org", "pypi.jetson-ai-lab.io",
                    "pypi.org", "files.pythonhosted.org", "github.com", "archive.ubuntu.com",
                    "repo.download.nvidia.com")   # JetPack's apt repository, in every Jetson's sources
CA_NAME = "fleet lab stand-in CA (not a public CA)"


def tls_dir(mirror: Path) -> Path:
    return mirror / "tls"


def build(out: Path) -> None:
    """A fresh CA and a server certificate for SOURCE_HOSTNAMES, written into `out`."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(days=1)
    until = now + datetime.timedelta(days=3650)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, CA_NAME),
                         x509.NameAttribute(NameOID.ORGANIZATION_NAME, "fleet lab")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number()).not_valid_before(now).not_valid_after(until)
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
          .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True)
          .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, SOURCE_HOSTNAMES[0])]))
            .issuer_name(ca_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now).not_valid_after(until)
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(n) for n in SOURCE_HOSTNAMES]), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
            .sign(ca_key, hashes.SHA256()))
    out.mkdir(parents=True, exist_ok=True)
    pem = serialization.Encoding.PEM
    (out / "ca.pem").write_bytes(ca.public_bytes(pem))
    (out / "server.pem").write_bytes(cert.public_bytes(pem) + ca.public_bytes(pem))
    fd = os.open(out / "server.key", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
