"""LocalConnection: this machine, through a child bash in its own session (so Ctrl-C can kill all of it)."""

from __future__ import annotations

import codecs
import os
import subprocess
import threading

from fleet.connection.base import Connection, Result
from fleet.connection.capture import Capture


class LocalConnection(Connection):
    """This machine, through a child bash. `sudo` applies only when fleet itself is not root
    (shell.user_is_root of a `connection: local` host)."""

    _proc: subprocess.Popen | None = None

    def abort(self) -> None:
        proc = self._proc
        if proc is not None and proc.poll() is None:
            try:
                os.killpg(proc.pid, 9)   # its own session (start_new_session): the whole command goes
            except ProcessLookupError:
                pass

    def _exec(self, command: str, *, stdin: str | None, timeout, on_output, on_error=None) -> Result:
        self._proc = proc = subprocess.Popen(["bash", "-c", command], stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
                                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                             start_new_session=True)
        out, err = Capture(on_output), Capture(on_error)
        threads = [threading.Thread(target=_pump, args=(proc.stdout, out), daemon=True),
                   threading.Thread(target=_pump, args=(proc.stderr, err), daemon=True)]
        if stdin:
            threads.append(threading.Thread(target=_feed, args=(proc.stdin, stdin), daemon=True))
        for thread in threads:
            thread.start()
        try:
            code = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(proc.pid, 9)
            except ProcessLookupError:  # it ended between the timeout and the kill
                pass
            proc.wait()
            for thread in threads:
                thread.join()
            out.finish()
            err.finish()
            return Result(124, out.text(), err.text() + f"\nfleet: timed out after {timeout:g}s\n")
        for thread in threads:
            thread.join()
        out.finish()     # a last line without a newline
        err.finish()
        return Result(code, out.text(), err.text())


def _feed(stream, data: str) -> None:
    try:
        stream.write(data.encode())
        stream.close()
    except BrokenPipeError:  # the command ended without reading it all; its exit status says why
        pass


def _pump(stream, sink: "Capture") -> None:
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    while True:
        chunk = os.read(stream.fileno(), 1 << 16)   # what is there now: lines stream, a newline-less flood is chunked
        if not chunk:
            break
        sink.write(decoder.decode(chunk))
    sink.write(decoder.decode(b"", final=True))
    sink.finish()
    stream.close()
