"""The verify record: the verify assert's JSON answer made into what /var/lib/fleet/verify.json and the facts
record hold. Standalone and stdlib only: the engine imports it, and `fleet script` ships this very file to the
host (fleet.remote.source), where it runs as

    python3 -c "$(this file)" VERIFY_PATH PROVIDERS_JSON CHECK_EXIT   < the assert's output

reading the assert's output on stdin, writing the record atomically to VERIFY_PATH, printing its summary and
exiting 0 only when verify passed and the check exited 0. So the script and `fleet apply` write the same record.
"""

import json
import os
import sys
import tempfile
from datetime import datetime, timezone


def last_json(output):
    """The last line of `output` that starts with '{', parsed; None when there is none or it does not parse."""
    for line in reversed(output.strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                return json.loads(line)
            except ValueError:
                return None
    return None


def verify_record(data, providers):
    record = dict(data)
    missing = record.get("missing_libraries") or []
    record["missing_providers"] = {lib: providers.get(lib, "unknown") for lib in missing}
    if record.get("passed"):
        record["summary"] = "verify passed: " + ", ".join(c["name"] for c in record.get("checks", []))
    else:
        # each failed check with its detail: "cuda_available_interactive: in an interactive shell: CUDA error 803
        # ... from /usr/local/cuda-13.0/compat/libcuda.so.580.95.05: ...; fix: ...", never a bare name
        extra = "; ".join(f"{lib} (provided by role {role})" for lib, role in record["missing_providers"].items())
        details = [f"{c['name']}: {c['detail']}" if c.get("detail") else c["name"]
                   for c in record.get("checks", []) if not c.get("passed")]
        record["summary"] = "verify failed: " + "; ".join(details) + (f"; missing {extra}" if extra else "")
    skipped = (record.get("perf") or {}).get("skipped")
    if skipped:
        record["summary"] += f" ({skipped})"
    # what the links between the GPUs came to, in words (issue 28): "one GPU: no links to check", or the all-reduce
    for check in record.get("checks", []):
        if check.get("passed") and check.get("name") in ("gpu_links", "allreduce") and check.get("detail"):
            record["summary"] += f" ({check['detail']})"
    record["at"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
    return record


def write_atomic(path, text):
    """Write `text` to `path` through a temp file in its directory: the file is whole or untouched."""
    directory = os.path.dirname(path) or "."
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".fleet-write.")
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def main(argv):
    path, providers, check_exit = argv[0], json.loads(argv[1]), argv[2]
    data = last_json(sys.stdin.read())
    if data is None:
        print("verify printed no result")
        return 1
    record = verify_record(data, providers)
    try:
        write_atomic(path, json.dumps(record, indent=1) + "\n")
    except OSError as exc:
        print(f"{record['summary']}; but {path} could not be written: {exc}")
        return 1
    print(record["summary"])
    return 0 if record.get("passed") and check_exit == "0" else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
