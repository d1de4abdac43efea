"""A real PostgreSQL for tests and benchmarks: a temporary cluster (initdb + pg_ctl) listening only on a Unix
socket in its own directory, run as the `postgres` user (the server refuses to run as root), trusting local
connections. Debian's `postgresql` package provides the binaries (scripts/setup.sh installs it); about a second
to start.

    with TempCluster() as cluster:
        url = cluster.database("t1")      # postgresql://postgres@/t1?host=/tmp/fleet-pg-.../
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile


class ClusterError(RuntimeError):
    pass


def bin_dir() -> str:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]))
    if not found:
        raise ClusterError("no PostgreSQL server here (/usr/lib/postgresql/*/bin/initdb): install Debian's "
                           "postgresql package (scripts/setup.sh does)")
    return os.path.dirname(found[-1])


class TempCluster:
    def __init__(self, user: str = "postgres"):
        self.bin = bin_dir()
        self.user = user if _exists(user) else "nobody"
        self.root = tempfile.mkdtemp(prefix="fleet-pg-")
        self.data = os.path.join(self.root, "data")
        self.started = False
        entry = pwd.getpwnam(self.user)
        os.chown(self.root, entry.pw_uid, entry.pw_gid)
        os.chmod(self.root, 0o755)

    def _as_user(self, *argv: str) -> subprocess.CompletedProcess:
        command = list(argv) if os.getuid() != 0 else ["runuser", "-u", self.user, "--", *argv]
        done = subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True, text=True, cwd=self.root)
        if done.returncode != 0:
            raise ClusterError(f"{' '.join(argv[:2])} failed ({done.returncode}): {done.stderr.strip()[-800:]}")
        return done

    def start(self) -> "TempCluster":
        self._as_user(f"{self.bin}/initdb", "-D", self.data, "-A", "trust", "-U", "postgres", "-E", "UTF8",
                      "--no-sync", "--locale=C")
        options = f"-k {self.root} -c listen_addresses='' -F -c max_connections=200"
        self._as_user(f"{self.bin}/pg_ctl", "-D", self.data, "-o", options, "-l", os.path.join(self.root, "log"),
                      "-w", "-t", "120", "start")
        self.started = True
        return self

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@/{database}?host={self.root}"

    def database(self, name: str) -> str:
        """A new, empty database; its URL."""
        import psycopg

        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def stop(self) -> None:
        try:
            if self.started:
                self._as_user(f"{self.bin}/pg_ctl", "-D", self.data, "-m", "immediate", "-w", "stop")
        finally:
            self.started = False
            shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


def _exists(user: str) -> bool:
    try:
        pwd.getpwnam(user)
        return True
    except KeyError:
        return False
