"""Where a probe's time goes ON the host: `python bench/sections.py [--repeat N] apply INVENTORY [fleet options]` runs
that fleet command (N times, default 1) with every section of every remote command timed by the host itself (bash's $EPOCHREALTIME around each
framed section, reported on stderr and taken out again before fleet reads it), then prints, per section name, the
median milliseconds over the hosts and the runs, largest first, and the whole command's on-host time; then when each
section ended, counted from the command's start (`end:NAME`): what a section that starts late waits for shows there.

Figures for a person to read (bench/README.md), never assertions. Needs bash >= 5 on the hosts ($EPOCHREALTIME)."""

from __future__ import annotations

import collections
import re
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fleet import connection, sections  # noqa: E402

_MARK = re.compile(r"@@bench-t (\S+) (\d+)\n?")
_END = re.compile(r"@@bench-e (\S+) (\d+)\n?")
TIMES: dict[str, list[int]] = collections.defaultdict(list)
ENDS: dict[str, list[int]] = collections.defaultdict(list)


def _timed(original):
    def section(name, body, **kwargs):
        return ("bench_t0=$EPOCHREALTIME\n" + original(name, body, **kwargs) +
                f"bench_t1=$EPOCHREALTIME; printf '@@bench-t %s %s\\n' {name} "
                "\"$(( ${bench_t1/./} - ${bench_t0/./} ))\" >&2\n"
                f"[ -z \"${{bench_all-}}\" ] || printf '@@bench-e %s %s\\n' {name} "
                "\"$(( ${bench_t1/./} - ${bench_all/./} ))\" >&2\n")
    return section


def _timed_own_shell(original):
    """The same timing for a background section framed in its own shell (sections._in_own_shell): the end is printed
    by an EXIT trap, so the trap prints the time too (the frame is the one that ships: no extra subshell)."""
    def own(name, body):
        text = original(name, body)
        trap = "trap 'printf \"\\n@@fleet:end"
        if trap not in text:          # a body that keeps section()'s subshell: section() is timed already
            return text
        head, rest = text.split(trap, 1)
        report = (f"bench_t1=$EPOCHREALTIME; printf '\\''@@bench-t %s %s\\n'\\'' {name} "
                  "\"$(( ${bench_t1/./} - ${bench_t0/./} ))\" >&3; "
                  f"[ -z \"${{bench_all-}}\" ] || printf '\\''@@bench-e %s %s\\n'\\'' {name} "
                  "\"$(( ${bench_t1/./} - ${bench_all/./} ))\" >&3; ")
        # the trap's own status first (what the section reports), the times to the script's stderr (fd 3, kept
        # before the body's stderr is folded into its stdout)
        rest = rest.replace("' EXIT\n", "; " + report + "' EXIT\n", 1)
        rest = rest.replace("exec 2>&1 </dev/null\n", "exec 3>&2 2>&1 </dev/null\n", 1)
        return "bench_t0=$EPOCHREALTIME\n" + head + "trap 'fleet_rc=$?; printf \"\\n@@fleet:end" + \
            rest.replace('@@\\n\" \"$?\"; ', '@@\\n\" \"$fleet_rc\"; ', 1)
    return own


def _run(original):
    def run(self, script, **kwargs):
        script = ("bench_all=$EPOCHREALTIME\n" + script + "\nbench_end=$EPOCHREALTIME; printf '@@bench-t "
                  "WHOLE-COMMAND %s\\n' \"$(( ${bench_end/./} - ${bench_all/./} ))\" >&2\n")
        result = original(self, script, **kwargs)
        for name, micros in _MARK.findall(result.stderr or ""):
            TIMES[name].append(int(micros))
        for name, micros in _END.findall(result.stderr or ""):
            ENDS[name].append(int(micros))
        try:
            from dataclasses import replace
            return replace(result, stderr=_END.sub("", _MARK.sub("", result.stderr or "")))
        except TypeError:
            return result
    return run


def report(times: dict[str, list[int]], top: int = 40) -> str:
    rows = sorted(((statistics.median(v) / 1000, k, len(v)) for k, v in times.items()), reverse=True)
    lines = ["median ms  samples  section"]
    lines += [f"{ms:9.1f}  {n:7d}  {name}" for ms, name, n in rows[:top]]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    repeat = 1
    if argv[:1] == ["--repeat"]:
        repeat, argv = int(argv[1]), argv[2:]
    sections.section = _timed(sections.section)
    sections._in_own_shell = _timed_own_shell(sections._in_own_shell)
    from fleet.engine import probe
    probe.section = sections.section           # imported by name there
    connection.Connection.run = _run(connection.Connection.run)
    from fleet.cli import main as fleet_main
    rc = 0
    for _ in range(repeat):
        try:
            rc = fleet_main(list(argv)) or rc
        except SystemExit as exc:
            rc = (exc.code if isinstance(exc.code, int) else 1) or rc
    print(report(TIMES), file=sys.stderr)
    print(report({f"end:{name}": micros for name, micros in ENDS.items()}).replace(
        "median ms  samples  section", "median ms  samples  end:section (from the command's start)"), file=sys.stderr)
    return rc or 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
