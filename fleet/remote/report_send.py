"""A pod's report after each run of its start script (`fleet script --report TARGET`). Standalone, stdlib only:
the script ships this file's text and runs it as

    python3 -I -c "$(this file)" TARGET HOST FLEET_VERSION EXIT CHANGED VERIFY_PATH  < HEALTH_SECTIONS

It writes the report (the run's exit and changed count, the verify record the run left, the kernel driver, and
the framed output of the GPU health sections on its stdin, which the controller judges) into
a spool directory first (/var/lib/fleet/reports as root, else ~/.local/state/fleet/reports; FLEET_REPORT_SPOOL
overrides it), then sends every spooled report, oldest first: to `fleet serve` (TARGET an https://
URL, or http:// to a loopback address) with the token from FLEET_REPORT_TOKEN in the pod's environment, never
from argv; or into a directory (TARGET dir:PATH, a shared volume that `fleet collect` reads). A report that
cannot go now stays spooled and goes with the next run; its report id travels with it, so the server counts it
once however often it is sent. A report the server refuses (4xx) is set aside as NAME.refused, with the reason
printed. Never fails the script: it prints one line and exits 0.
"""

import json
import os
import ssl
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from datetime import datetime, timezone

LOOPBACK = ("127.", "[::1]", "localhost")
TIMEOUT = 20


def spool_dir():
    if os.environ.get("FLEET_REPORT_SPOOL"):
        return os.environ["FLEET_REPORT_SPOOL"]
    if os.geteuid() == 0:
        return "/var/lib/fleet/reports"
    state = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return os.path.join(state, "fleet", "reports")


def driver_version():
    for path in ("/sys/module/nvidia/version", "/proc/driver/nvidia/version"):
        try:
            with open(path) as handle:
                text = handle.read()
        except OSError:
            continue
        for word in text.split():
            if word.count(".") >= 1 and word.replace(".", "").isdigit():
                return word
    return None


def read_verify(path):
    """The verify record the run left (the script's verify step writes it), else None."""
    try:
        with open(path) as handle:
            record = json.load(handle)
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


HEALTH_MAX = 256 * 1024


def read_health():
    """The health sections' framed output (fleet/remote/report.sh pipes it in), else None."""
    try:
        text = sys.stdin.buffer.read(HEALTH_MAX).decode("utf-8", "replace")
    except (OSError, ValueError, AttributeError):
        return None
    return text if text.strip() else None


def build(host, version, exit_code, changed, verify_path):
    facts = {"host": host, "driver": {"version": driver_version()}}
    health = read_health()
    if health is not None:
        facts["health_sections"] = health
    verify = read_verify(verify_path)
    if verify is not None:
        verify.pop("host", None)
        facts["verify"] = verify
    return {"schema": 1, "report_id": uuid.uuid4().hex, "host": host, "kind": "script",
            "at": datetime.now(timezone.utc).isoformat(timespec="seconds"), "fleet_version": version,
            "status": "ok" if exit_code == 0 else "failed", "exit": exit_code, "changed": changed, "facts": facts}


def write_atomic(directory, name, data):
    os.makedirs(directory, mode=0o700, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".fleet-report.")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, os.path.join(directory, name))
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def post(url, data, token):
    """True when stored (or already); raises Refused on a 4xx that sending again will not change."""
    request = urllib.request.Request(url, data=data, method="POST", headers={
        "Content-Type": "application/json", "Authorization": "Bearer " + token})
    context = ssl.create_default_context(cafile=os.environ.get("FLEET_REPORT_CA") or None)
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT, context=context) as answer:
            answer.read(4096)
            return True
    except urllib.error.HTTPError as exc:
        if exc.code in (400, 401, 403, 413, 415, 422):
            try:
                why = json.loads(exc.read(4096)).get("error")
            except ValueError:
                why = None
            raise Refused(f"{exc.code}: {why or exc.reason}") from None
        return False


class Refused(Exception):
    pass


def send_all(target, spool):
    names = sorted(n for n in os.listdir(spool) if n.endswith(".json"))   # named by time: oldest first
    sent = kept = refused = 0
    why = ""
    token = os.environ.get("FLEET_REPORT_TOKEN", "")
    if not target.startswith("dir:") and not token:
        return 0, len(names), 0, "FLEET_REPORT_TOKEN is not set in this environment"
    for i, name in enumerate(names):
        path = os.path.join(spool, name)
        with open(path, "rb") as handle:
            data = handle.read()
        try:
            if target.startswith("dir:"):
                write_atomic(target[4:], name, data)
                done = True
            else:
                done = post(target, data, token)
        except Refused as exc:
            os.replace(path, path + ".refused")
            refused += 1
            why = f"{name} refused ({exc})"
            continue
        except (OSError, urllib.error.URLError) as exc:
            done, why = False, f"{target} not reachable ({getattr(exc, 'reason', exc)})"
        if not done:
            kept += len(names) - i
            why = why or f"{target} answered with an error"
            break
        os.unlink(path)
        sent += 1
    return sent, kept, refused, why


def main(argv):
    target, host, version, exit_code, changed, verify_path = argv[1:7]
    if not (target.startswith(("https://", "dir:")) or target.startswith("http://")
            and target[7:].startswith(LOOPBACK)):
        print("report: not sent: the target is neither https://, http:// to a loopback address, nor dir:PATH")
        return 0
    spool = spool_dir()
    report = build(host, version, int(exit_code), int(changed), verify_path)
    write_atomic(spool, f"{int(time.time() * 1000):015d}-{report['report_id']}.json",
                 json.dumps(report, sort_keys=True).encode())
    sent, kept, refused, why = send_all(target, spool)
    print(f"report: {sent} sent, {kept} kept to send next time, {refused} refused" + (f" ({why})" if why else ""))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv))
    except Exception as exc:   # never the script's failure: it has done its work
        print(f"report: not sent ({type(exc).__name__}: {exc})")
        sys.exit(0)
