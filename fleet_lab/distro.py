"""A stand-in for the distribution's archive (http://archive.ubuntu.com/ubuntu, suite noble, component main),
holding the packages slim images lack (the profiles' `without`: git, curl, python3-venv, python3.11-venv), so
`apt-get install git` on such a host works the way it does on a real one.

Each package is repacked from this machine's installed copy, as dpkg-repack does: the files dpkg lists for it,
its control stanza from dpkg's status (Status/Conffiles taken out, a line added to the description saying it
is a lab repack), its conffiles and maintainer scripts. They are this machine's (Debian) builds, which is
what the lab hosts run anyway (their /usr is this machine's). The archive is laid out as Ubuntu's
(dists/noble/{InRelease,Release}, dists/noble/main/binary-amd64/Packages, pool/main/) and signed with the
lab's apt key, which the profiles that carry these sources install as ubuntu-archive-keyring.gpg.
"""

from __future__ import annotations

import hashlib
import shutil
import tempfile
from pathlib import Path

from .debs import _run, sign_release, write_packages

SUITE = "noble"
PACKAGES = ("git", "curl", "python3-venv", "python3.11-venv")
INFO = Path("/var/lib/dpkg/info")
KEYRING = "/usr/share/keyrings/ubuntu-archive-keyring.gpg"
# Ubuntu 24.04's deb822 sources (as its cloud and container images ship them), over plain HTTP like Ubuntu's.
SOURCES = (f"Types: deb\nURIs: http://archive.ubuntu.com/ubuntu/\nSuites: {SUITE}\nComponents: main\n"
           f"Signed-By: {KEYRING}\n")
_SCRIPTS = ("preinst", "postinst", "prerm", "postrm", "conffiles")


def build(out: Path, gpg_home: Path) -> None:
    """<out>/pool/main/*.deb and a signed dists/noble for every PACKAGES entry this machine has installed."""
    pool = out / "pool" / "main"
    pool.mkdir(parents=True, exist_ok=True)
    status = Path("/var/lib/dpkg/status").read_text()
    stanzas = []
    for name in PACKAGES:
        stanza = _installed_stanza(status, name)
        if stanza is None or _listing(name) is None:
            continue
        deb = repack(name, stanza, pool)
        data = deb.read_bytes()
        stanzas.append(_control(stanza).rstrip("\n").split("\nDescription:")[0]
                       + f"\nFilename: pool/main/{deb.name}\nSize: {len(data)}"
                       + f"\nSHA256: {hashlib.sha256(data).hexdigest()}"
                       + "\nDescription:" + _control(stanza).split("\nDescription:", 1)[1].rstrip("\n"))
    dist = out / "dists" / SUITE
    binary = dist / "main" / "binary-amd64"
    indexes = write_packages(binary, stanzas)
    sign_release(dist, ["Origin: Ubuntu", "Label: fleet lab stand-in for the Ubuntu archive", f"Suite: {SUITE}",
                        f"Codename: {SUITE}", "Architectures: amd64", "Components: main"], indexes, gpg_home)


def repack(name: str, stanza: str, pool: Path) -> Path:
    """The installed package `name` as a .deb (files, symlinks, conffiles, maintainer scripts)."""
    listing = _listing(name)
    fields = dict(line.split(": ", 1) for line in stanza.splitlines() if ": " in line and not line[0].isspace())
    version = fields["Version"].split(":", 1)[-1]
    with tempfile.TemporaryDirectory(prefix="fleet-repack-") as tmp:
        stage = Path(tmp)
        for line in listing.read_text().splitlines():
            src = Path(line)
            if not line.startswith("/") or not (src.is_symlink() or src.is_file()):
                continue   # directories come with their files; a path dpkg lists but this machine lacks stays out
            target = stage / line.lstrip("/")
            target.parent.mkdir(parents=True, exist_ok=True)
            if src.is_symlink():
                target.symlink_to(src.readlink())
            else:
                shutil.copy2(src, target)
        debian = stage / "DEBIAN"
        debian.mkdir()
        (debian / "control").write_text(_control(stanza))
        for script in _SCRIPTS:
            src = listing.with_name(f"{listing.stem}.{script}")
            if src.exists():
                shutil.copy2(src, debian / script)
        for d in stage.rglob("*"):
            if d.is_dir() and not d.is_symlink():
                d.chmod(0o755)
        out = pool / f"{name}_{version}_{fields['Architecture']}.deb"
        # -Znone: these never leave this machine, and compressing git's 45 MB costs a loaded CI machine seconds
        _run(["dpkg-deb", "--root-owner-group", "-Znone", "--build", str(stage), str(out)], "dpkg-deb")
    return out


def _listing(name: str) -> Path | None:
    return next((p for p in (INFO / f"{name}.list", INFO / f"{name}:amd64.list") if p.exists()), None)


def _installed_stanza(status: str, name: str) -> str | None:
    for stanza in status.split("\n\n"):
        if f"\n{stanza}\n".find(f"\nPackage: {name}\n") >= 0 and "Status: install ok installed" in stanza:
            return stanza.strip("\n") + "\n"
    return None


def _control(stanza: str) -> str:
    """The status stanza as a control file: Status and Conffiles (with their continuation lines) taken out, a
    note closing the Description (wherever that field sits: git's Homepage comes after it)."""
    fields: list[list[str]] = []
    for line in stanza.splitlines():
        if line[:1] in (" ", "\t") and fields:
            fields[-1].append(line)
        elif line:
            fields.append([line])
    out = []
    for field in fields:
        if field[0].startswith(("Status:", "Conffiles:")):
            continue
        if field[0].startswith("Description:"):
            field = field + [" .", " fleet lab: repacked from the lab machine's installed copy (as dpkg-repack "
                                   "does), not Ubuntu's."]
        out += field
    return "\n".join(out) + "\n"
