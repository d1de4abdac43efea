"""One JSON line of a verify run for bench/h200/copies_health.sh: python3 copies_record.py LABEL EXIT SECONDS RECORD
(RECORD: the host's own verify record, /var/lib/fleet/verify.json): the run's exit and seconds, passed, the record's
`copies` (fleet/remote/verify/copies.py) and `links`, and the failed checks."""

import json
import sys


def line(label: str, code: int, seconds: float, record: dict) -> dict:
    return {"run": label, "exit": code, "seconds": seconds, "passed": record.get("passed"),
            "copies": record.get("copies"), "links": record.get("links"),
            "checks": {c["name"]: c.get("passed") for c in record.get("checks", [])
                       if c["name"].startswith("copies")},
            "failed": [c for c in record.get("checks", []) if not c.get("passed")]}


if __name__ == "__main__":
    label, code, seconds, path = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
    with open(path) as fh:
        print(json.dumps(line(label, code, seconds, json.load(fh))))
