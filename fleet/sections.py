"""One remote command made of many named sections, and the parser of its output.

Round trips are the cost, so a probe (facts and every task's check) is a single script. Each section runs in
its own subshell, so one failing section never stops the others, and frames its output with markers that
carry its exit status.
"""

from __future__ import annotations

import functools
import hashlib
import re
from dataclasses import dataclass

_BEGIN = "@@fleet:begin {name}@@"
_NAME_RE = re.compile(r"^[A-Za-z0-9_.:-]+\Z")


@dataclass(frozen=True)
class Section:
    name: str
    rc: int
    output: str


def section(name: str, body: str, *, stop_on_failure: bool = False, stdin: str = "</dev/null") -> str:
    """Shell that runs `body` in a subshell with stderr folded into stdout, framed by markers.

    With stop_on_failure the whole script ends after a failing section (later tasks depend on earlier ones).
    `stdin`: the body's stdin redirection (never the script's own: a script sent on stdin would be read).
    """
    if not _NAME_RE.match(name):
        raise ValueError(f"section name {name!r} must be letters, digits and . _ : -")
    stop = "[ \"$fleet_rc\" -eq 0 ] || exit \"$fleet_rc\"\n" if stop_on_failure else ""
    return (
        f"printf '\\n{_BEGIN.format(name=name)}\\n'\n"
        # ':' first: an empty body (or one of only comments) would be a syntax error ending the whole script.
        f"( :; {body}\n) 2>&1 {stdin}\n"
        "fleet_rc=$?\n"
        f"printf '\\n@@fleet:end {name} %d@@\\n' \"$fleet_rc\"\n"
        f"{stop}"
    )


# What a section that ran past its deadline prints last (the report's reason ends with it).
OVERRUN = "fleet: stopped after {seconds}s, its deadline (raise it with the task's timeout: SECONDS)"
TIMED_OUT = 124     # timeout(1)'s status for a command that ran past its time
# A section that needs a helper program the host lacks (fleet/programs.py) says so on a line of its own and ends
# with MISSING_EXIT: the engine sends it again with the program's text.
MISSING = "@@fleet:program-missing "
MISSING_EXIT = 97


def bounded(body: str, seconds: int | None) -> str:
    """`body` with a deadline on the host: run by a bash of its own under timeout(1), which starts it in a process
    group of its own and, at `seconds`, sends it TERM (KILL 10 s later) with everything it started; the status is
    then 124 and the last line OVERRUN. The body reaches that bash as a here-document on fd 3 (never in argv:
    /proc/*/cmdline is every user's), its stdin stays /dev/null. It is a separate shell: `body` must not read the
    enclosing script's unexported variables or functions (an apply task's snippet never does: under sudo it runs
    in a bash of its own too). Where the host has no timeout(1) (busybox images) the body runs unbounded.
    None or 0: `body` unchanged."""
    if not seconds:
        return body
    seconds = int(seconds)
    # the same body gives the same script (the engine compares scripts): the end marker is the body's digest,
    # made longer until the body does not hold it
    digest, size = hashlib.sha256(body.encode()).hexdigest(), 16
    while "FLEET_BOUNDED_" + digest[:size] in body and size < 64:
        size += 8
    end = "FLEET_BOUNDED_" + digest[:size]
    if end in body:
        raise ValueError("a section body holds its own end marker")
    return (f"fleet_to=; command -v timeout >/dev/null 2>&1 && fleet_to='timeout -k 10 {seconds}'\n"
            f"$fleet_to bash /dev/fd/3 </dev/null 3<<'{end}'\n{body}\n{end}\n"
            f"fleet_b_rc=$?\n"
            f"if [ -n \"$fleet_to\" ] && [ \"$fleet_b_rc\" -eq {TIMED_OUT} ]; then "
            f"echo {_squote(OVERRUN.format(seconds=seconds))}; fi\n"
            "exit \"$fleet_b_rc\"")


def _squote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


@dataclass(frozen=True)
class Background:
    """A section that runs while the script goes on (background()): `start` runs it at once into a pipe, `collect`
    prints what it printed. Other fields: see background()."""
    name: str
    start: str
    collect: str
    keep_in: str | None = None
    after: str | None = None
    before: str = ""
    plain: str = ""           # the section as section() frames it: where nothing keeps `after`, it runs so
    feed: str = ""            # fed: the shell that writes `after` to its stdin once it is kept
    needs: tuple[str, ...] = ()   # the shared functions its body calls (fleet.shell.FUNCTIONS): together() defines them


@dataclass(frozen=True)
class Plain:
    """A section (section()'s text) whose body calls shared functions (`needs`, fleet.shell.FUNCTIONS): together()
    defines them once for the whole script."""
    text: str
    needs: tuple[str, ...] = ()


@functools.lru_cache(maxsize=4096)   # keyed on every argument: a probe frames ~40, most the same on every host
def background(name: str, body: str, *, keep_in: str | None = None, after: str | None = None,
               before: str = "", fed: bool = False, needs: tuple[str, ...] = ()) -> Background:
    """A section that runs while the script goes on: its start runs it at once, framed as section() frames it, into
    a pipe the script holds open (bash process substitution, an fd in a variable); its collect prints what it printed,
    waiting for it to end. All starts, then all collects, in order: the output is what the sections would print one
    after the other, in the time of the slowest. Only for read-only sections (a probe's facts, fleet's own checks).

    keep_in: the script also keeps what it printed (its output, without its frame or trailing newlines, as `$(...)`
    would keep it) in that shell variable, for sections after it.
    after: a variable another background section keeps (keep_in): this one reads it, so it starts as soon as that one
    has ended (the script waits for that one alone, then starts this), not after every other; where no section of the
    script keeps it, this one runs as a plain section, after the background ones.
    before: shell the script itself runs just before starting it (assignments later sections read).
    fed (with `after`): it starts at once, with the other sections, and reads `after`'s value on its stdin, written
    there (then closed) as soon as the section keeping it has ended: what it takes before reading its stdin overlaps
    that section. One fed section a script: it is a bash coprocess (whose pipe's writing end no section started after
    it holds, so it sees the end of its input); where nothing keeps `after`, it runs as a plain section reading the
    variable's value on its stdin.
    needs: the shared functions the body calls (fleet.shell.FUNCTIONS), defined once by together()."""
    fd = "fleet_bg_" + re.sub(r"[^A-Za-z0-9_]", "_", name)
    before = before.rstrip(chr(10)) + chr(10) if before else ""
    if fed:
        if not after:
            raise ValueError(f"section {name!r}: fed needs `after`, the variable it reads on its stdin")
        co = "fleet_co_" + fd[len("fleet_bg_"):]
        framed = section(name, body, stdin="")
        # the coprocess's reading end, held by a descriptor of the script's own: bash closes the coprocess's once it
        # ends, so the coprocess does not end before its input does (a body that ends without reading it, as a helper
        # program missing does, exit 97: its input drained by a builtin, one read() where the body read it all):
        # else, on a busy host, bash could reap it before the next line takes its output, and the section's lines
        # would be lost
        start = (f'{before}coproc {co} {{ {framed}while read -r -d "" fleet_drain; do :; done; }}\n'
                 f'exec {{{fd}}}<&"${{{co}[0]}}"')
        # written only while the coprocess runs (one that ended unset its array): SIGPIPE ignored for that write
        feed = (f'if [ -n "${{{co}[1]-}}" ]; then fleet_w=${{{co}[1]}}; trap \'\' PIPE; '
                f'printf \'%s\' "${{{after}-}}" >&"$fleet_w" 2>/dev/null; trap - PIPE; exec {{fleet_w}}>&-; fi')
        plain = section(name, body, stdin=f'<<< "${{{after}-}}"')
    else:
        plain = section(name, body)
        start, feed = f"{before}exec {{{fd}}}< <(exec </dev/null\n{_in_own_shell(name, body)})", ""
    # mapfile, not cat: a builtin (a probe collects ~30 of these; each process is ~1-2 ms of a small host's CPU)
    read = f'mapfile -u "${fd}" fleet_lines; exec {{{fd}}}<&-; '
    collect = read + (_keep(keep_in) if keep_in else "") + 'printf %s "${fleet_lines[@]}"'
    return Background(name, start, collect, keep_in, after, before, plain, feed, tuple(needs))


# a body that sets a trap of its own (its EXIT trap would replace the frame's) or replaces its shell (`exec PROGRAM`:
# nothing would print the end) keeps section()'s subshell
_OWN_SHELL_UNSAFE = re.compile(r"\btrap\b|\bexec\b(?!\s*(?:\{|[0-9]*[<>]))")


def _in_own_shell(name: str, body: str) -> str:
    """section(name, body) for a shell that runs nothing else (a background section's process substitution): the
    same output, one process fewer. The body runs in that shell itself, stdin /dev/null and stderr folded into
    stdout, and an EXIT trap prints the end with the body's status (its `exit N` included), where section() starts a
    subshell for the body and prints the end after it. A probe holds ~30 such sections: ~30 forks of the script's
    bash fewer on every host at every probe. The frame is fleet_begin (fleet/remote/frame.sh, defined once by
    together()). Bodies the trap cannot frame keep the subshell (_OWN_SHELL_UNSAFE)."""
    if _OWN_SHELL_UNSAFE.search(body):
        return section(name, body)
    if not _NAME_RE.match(name):
        raise ValueError(f"section name {name!r} must be letters, digits and . _ : -")
    return f"fleet_begin {name}\n:; {body}\n"   # fleet/remote/frame.sh, defined once by together()


def _keep(var: str) -> str:
    """Shell keeping the section output in fleet_lines (mapfile's lines: the frame's two first lines and last one
    left out) in `var`, trailing newlines removed."""
    return (f'{var}=; [ "${{#fleet_lines[@]}}" -gt 2 ] && printf -v {var} %s "${{fleet_lines[@]:2:${{#fleet_lines[@]}}-3}}"; '
            f"while [ \"${{{var}%$'\\n'}}\" != \"${var}\" ]; do {var}=${{{var}%$'\\n'}}; done; ")


def together(parts, first: str = "") -> str:
    """One script of sections (see _together). Kept for the parts it was built of (every input: the sections' text and
    what they declare, `first`): a probe's script is the same for every host whose settings and checks render the
    same (another hostname, other GPUs, other readings: the same script), and was built again for each (~0.2 ms)."""
    return _together(tuple(parts), first)


@functools.lru_cache(maxsize=64)
def _together(parts: tuple, first: str) -> str:
    """One script of sections (section()'s strings, Plain ones) and background ones (background()'s): the background
    ones all start first and are collected in their order, then the others run one after the other. A background
    section that reads what another keeps (`after`) starts as soon as that one has ended: the script waits for it alone
    (its output held, printed in its turn), then starts the one after it. A section others wait for starts before the
    rest (on the lent H200 the shells' trace started ~15 ms into the probe behind ~30 others, on its slowest chain).
    The shared functions the sections declare (`needs`: fleet.shell.FUNCTIONS, the trust judgement's ~6 KB that ~5
    sections of a probe call among them) are defined once at the top: each section's subshell sees the script's
    functions. A body that runs in a bash of its own carries its own (sections.bounded's, shell.as_root's callers put
    them in it).
    `first`: shell the script runs once the sections others wait for have started, before every other section (each
    inherits what it sets: the probe's fleet_trust_prime; the trace started before it judges its own program, off
    the chain the rest waits on); dropped where no section needs the trust functions it calls."""
    from fleet.shell import define, needed

    wanted = needed(n for p in parts if isinstance(p, (Background, Plain)) for n in p.needs)
    parts = [p.text if isinstance(p, Plain) else p for p in parts]
    background_parts = [p for p in parts if isinstance(p, Background)]
    keepers: dict[str, Background] = {}     # variable -> the started section keeping it
    # started sections by identity: `in` on a list of dataclasses compared every field of each (a probe's ~60
    # sections: ~2,600 comparisons of long strings a host)
    begun: set[int] = set()
    while True:   # a section after one that is itself after a variable nothing keeps is not started either
        more = [p for p in background_parts if id(p) not in begun and (not p.after or p.after in keepers)]
        if not more:
            break
        begun.update(map(id, more))
        keepers.update({p.keep_in: p for p in more if p.keep_in})
    started = [p for p in background_parts if id(p) in begun]   # in the parts' order
    # a section waiting for a variable nothing here keeps runs as a plain one (its `before` first)
    plain = [(p.before.rstrip("\n") + "\n" if p.before else "") + p.plain if isinstance(p, Background) else p
             for p in parts if not isinstance(p, Background) or id(p) not in begun]
    text, waited, launched, fed = [], {}, set(), set()

    def launch(p: Background) -> None:
        if p.name in launched:
            return
        if p.after and not p.feed:
            wait(keepers[p.after])
        launched.add(p.name)
        text.append(p.start)

    def feed(p: Background) -> None:   # a fed section's input: once what it reads is kept (never before it starts)
        if p.feed and p.name not in fed:
            launch(p)
            wait(keepers[p.after])
            fed.add(p.name)
            text.append(p.feed)

    def wait(p: Background) -> None:
        if p.name in waited:
            return
        launch(p)
        feed(p)
        held = "fleet_bo_" + re.sub(r"[^A-Za-z0-9_]", "_", p.name)
        text.append(p.collect.replace('printf %s "${fleet_lines[@]}"', f'printf -v {held} %s "${{fleet_lines[@]}}"'))
        waited[p.name] = f'printf %s "${held}"'

    awaited = {p.after for p in started if p.after}
    for p in started:   # what others wait for first (the probe's shells' trace: its slowest chain starts there)
        if not p.after and p.keep_in in awaited:
            launch(p)
    first = first if "trust" in wanted else ""
    if first:           # then `first` (its processes are not on that chain), then every other section
        text.append(first.rstrip("\n"))
    for p in started:
        if not p.after:
            launch(p)
    for p in started:   # a fed one last of those started at once: no section it waits for holds its input's pipe
        if p.feed:
            launch(p)
    for p in started:
        if p.after:
            launch(p)
            feed(p)
    text += [waited.get(p.name) or _collected(p) for p in started] + plain
    if first and not started:   # no background section: before the plain ones
        text.insert(0, first.rstrip("\n"))
    if started:   # the background sections' frame, once (fleet/remote/frame.sh: fleet_begin, fleet_collect)
        from fleet import remote

        text.insert(0, remote.program("frame"))
    return define(wanted) + "\n".join(text)


# A section's begin in a script's text: section()'s printf of the marker, or frame.sh's `fleet_begin NAME` where the
# section is framed in its own shell (_in_own_shell). framed() reads both: a probe cut short is judged by it.
#     @@fleet:begin NAME@@        (section())
#     \bfleet_begin NAME$         (frame.sh, a line's end)
# Searched for from their common word, a literal re scans for fast, what comes before it checked after: that
# alternation, with \b at its head, tried every position of a ~50 KB probe script (1.3 ms a host).
_FRAMED_AT = re.compile(r"fleet(?::begin ([A-Za-z0-9_.:-]+)@@|_begin ([A-Za-z0-9_.:-]+)$)", re.M)
_WORD = re.compile(r"\w")


def framed(script: str) -> list[str]:
    """The names of the sections `script` frames, in order, once each (either frame): the matches, in order and
    none overlapping the one before, of `@@fleet:begin NAME@@|\\bfleet_begin NAME$` (multiline)."""
    return list(_framed(script))


@functools.lru_cache(maxsize=64)   # keyed on the whole script: hosts sent the same script (together's) read it once
def _framed(script: str) -> tuple[str, ...]:
    names, taken = {}, 0        # taken: where the last match ended (a match never starts inside it)
    for found in _FRAMED_AT.finditer(script):
        at = found.start()
        if found[1] is not None:
            if at - 2 < taken or not script.startswith("@@", at - 2):
                continue
            names[found[1]] = None
        else:
            if at > 0 and _WORD.match(script, at - 1):
                continue
            names[found[2]] = None
        taken = found.end()
    return tuple(names)


def _collected(p: Background) -> str:
    """p's collect; one that keeps nothing as a call of frame.sh's fleet_collect (the same lines, ~40 a probe)."""
    return p.collect if p.keep_in else "fleet_collect fleet_bg_" + re.sub(r"[^A-Za-z0-9_]", "_", p.name)


def script(sections: list[str], preamble: str = "") -> str:
    # A preamble without a final newline would run into the first section's printf.
    return (preamble.rstrip("\n") + "\n" if preamble else "") + "\n".join(sections)


# A marker line, `@@fleet:begin NAME@@` or `@@fleet:end NAME RC@@`, found in the whole output at once (from its
# literal head, a line's start checked after): the lines between two markers are then one slice of it, not a list of
# lines split, matched twice each and joined again (~700 lines a probe).
_MARKER_RE = re.compile(r"@@fleet:(?:begin (\S+)@@|end (\S+) (-?\d+)@@)$", re.M)


def split_sections(stdout: str) -> dict[str, Section]:
    """Parse framed output; a section whose end marker is missing (a dropped connection) gets rc -1. Every other
    line between a section's begin and its end (another section's end marker too) is its output, less the newline
    its end marker is printed after."""
    found: dict[str, Section] = {}
    current: str | None = None
    start = 0                   # where the current section's first line starts
    for marker in _MARKER_RE.finditer(stdout):
        if marker.start() and stdout[marker.start() - 1] != "\n":
            continue            # not a line of its own
        begin, end = marker[1], marker[2]
        if begin is not None:
            if current is not None:
                found[current] = Section(current, -1, _between(stdout, start, marker.start()))
            current, start = begin, marker.end() + 1
        elif end == current:
            found[current] = Section(current, int(marker[3]), _between(stdout, start, marker.start()))
            current = None
    if current is not None:
        found[current] = Section(current, -1, _output(stdout[start:]))
    return found


def _between(stdout: str, start: int, line: int) -> str:
    """The lines from `start` up to the marker line at `line` (that line's newline before it is no line's)."""
    return _output(stdout[start:line - 1]) if line > start else ""


def _output(text: str) -> str:
    # The begin marker is preceded by a newline and the end marker too: drop the one we added.
    return text[:-1] if text.endswith("\n") else text
