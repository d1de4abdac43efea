"""An SSH server that stands in for many converged hosts at little cost: it runs nothing, it replays.

Each simulated host is a port of one asyncio process (asyncssh). A command it receives (the command line and
the script fleet feeds on stdin) is looked up in a recording of what a real host answered to exactly that
command (bench/_fleet_recorded.py writes recordings: one JSON line per remote command); the recorded stdout,
stderr and exit status go back. A command that was never recorded gets exit 127 and a line saying so, so a
benchmark whose controller sends something new fails loudly instead of measuring a wrong answer.

What is measured against it is therefore the controller: SSH from the controller's side (the server's own
cost is one process, reported apart), fleet's parsing, deciding, rendering and record writing.

    python bench/_replay.py RECORDING.jsonl --address 127.0.70.1 --port 20000 --hosts 1000 \
        --profiles thor,spark,pod-570,pod-580 --authorized KEY.pub --host-key DIR

Port `port + i` replays the recorded host `profiles[i % len(profiles)]`. It prints `ready` once every port
listens, then serves until stdin closes or it is signalled. Why asyncssh: a thousand listening SSH endpoints
in one process and a handshake each, which paramiko's thread-per-connection server cannot do on two cores.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import gzip
import hashlib
import json
import re
import signal
import sys
from pathlib import Path

import asyncssh

_LENGTH = re.compile(r"head -c (\d+)")


def key(command: str, stdin: str) -> str:
    """What identifies a command: its line and the script it carries, as the host's bash reads them (the
    payload's length and its gzip bytes left out, so another zlib's output is the same command)."""
    script = stdin.encode()
    if stdin:
        try:
            script = base64.b64decode(stdin)
            if "gzip -dc" in command:
                script = gzip.decompress(script)
        except (ValueError, OSError, EOFError):
            script = stdin.encode()
    line = _LENGTH.sub("head -c N", command)
    return hashlib.sha256(line.encode() + b"\0" + script).hexdigest()


def load(path: Path) -> dict[str, dict[str, tuple[int, str, str]]]:
    """recorded host -> {key(command, stdin): (exit, stdout, stderr)}"""
    answers: dict[str, dict[str, tuple[int, str, str]]] = {}
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            answers.setdefault(r["host"], {})[key(r["command"], r["stdin"])] = (r["exit"], r["stdout"], r["stderr"])
    return answers


class Stats:
    def __init__(self):
        self.connections = 0
        self.commands = 0
        self.unknown = 0


def _session(answers: dict, stats: Stats):
    async def handle(process: asyncssh.SSHServerProcess) -> None:
        command = process.command or ""
        stats.commands += 1
        want = _LENGTH.search(command)
        stdin = ""
        if want:   # fleet's wrapper reads exactly this many bytes of script; stdin may stay open after them
            size = int(want.group(1))
            while len(stdin) < size:
                chunk = await process.stdin.read(size - len(stdin))
                if not chunk:
                    break
                stdin += chunk
        answer = answers.get(key(command, stdin))
        if answer is None:
            stats.unknown += 1
            process.stderr.write(f"replay: no recording of this command ({len(stdin)} bytes of script)\n")
            process.exit(127)
            return
        code, out, err = answer
        if out:
            process.stdout.write(out)
        if err:
            process.stderr.write(err)
        process.exit(code)
    return handle


class _Server(asyncssh.SSHServer):
    stats: Stats

    def connection_made(self, conn) -> None:
        self.stats.connections += 1

    def begin_auth(self, username: str) -> bool:
        return True    # publickey auth against the authorized key (asyncssh checks it)


async def serve(args) -> None:
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)   # a listening and an accepted socket per host
    want = 256 + 2 * args.hosts
    if soft != resource.RLIM_INFINITY and soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want if hard == resource.RLIM_INFINITY else min(want, hard), hard))
    answers = load(args.recording)
    profiles = args.profiles.split(",")
    missing = [p for p in profiles if p not in answers]
    if missing:
        raise SystemExit(f"replay: {args.recording} has no recording of {', '.join(missing)} "
                         f"(it has {', '.join(sorted(answers))})")
    host_key = asyncssh.read_private_key(str(args.host_key))
    authorized = asyncssh.import_authorized_keys(args.authorized.read_text())
    stats = Stats()
    server_class = type("Server", (_Server,), {"stats": stats})
    servers = []
    for i in range(args.hosts):
        servers.append(await asyncssh.listen(
            args.address, args.port + i, server_host_keys=[host_key], authorized_client_keys=authorized,
            process_factory=_session(answers[profiles[i % len(profiles)]], stats), server_factory=server_class,
            encoding="utf-8", errors="surrogateescape", allow_scp=False, agent_forwarding=False,
            x11_forwarding=False, line_editor=False, keepalive_interval=0, backlog=512))
    print("ready", flush=True)
    done = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, done.set)
    loop.add_reader(sys.stdin.fileno(), lambda: sys.stdin.buffer.read1(1 << 16) or done.set())
    await done.wait()
    for server in servers:
        server.close()
    print(json.dumps({"connections": stats.connections, "commands": stats.commands, "unknown": stats.unknown}),
          flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("recording", type=Path)
    parser.add_argument("--address", default="127.0.70.1")
    parser.add_argument("--port", type=int, default=20000)
    parser.add_argument("--hosts", type=int, default=4)
    parser.add_argument("--profiles", required=True, help="recorded host names, comma-separated, taken in turn")
    parser.add_argument("--authorized", type=Path, required=True, help="the controller's public key")
    parser.add_argument("--host-key", type=Path, required=True, help="the server's private host key")
    asyncio.run(serve(parser.parse_args()))


if __name__ == "__main__":
    main()
