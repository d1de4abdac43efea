"""Sections: one script of many framed parts, run by a real bash, parsed back."""

import re

import pytest

from fleet.connection import LocalConnection
from fleet.inventory import Host
from fleet.sections import Section, section, script, split_sections


@pytest.fixture(scope="module")
def local():
    return LocalConnection(Host("here", connection="local"))


def run_sections(local, parts, preamble=""):
    result = local.run(script([section(name, body) for name, body in parts], preamble=preamble))
    return result, split_sections(result.stdout)


def test_round_trip(local):
    result, found = run_sections(local, [
        ("facts.os", "echo ID=debian; echo VERSION_ID=12"),
        ("facts.err", "echo to-stderr >&2; echo to-stdout"),
        ("check.cuda.0", "printf 'no newline'"),
        ("check.cuda.1", "printf 'two\\n\\n'"),
        ("check.cuda.2", "true"),
    ])
    assert result.exit == 0
    assert found == {
        "facts.os": Section("facts.os", 0, "ID=debian\nVERSION_ID=12"),
        "facts.err": Section("facts.err", 0, "to-stderr\nto-stdout"),   # stderr folded in, in order
        "check.cuda.0": Section("check.cuda.0", 0, "no newline"),
        "check.cuda.1": Section("check.cuda.1", 0, "two\n"),              # one final newline is dropped
        "check.cuda.2": Section("check.cuda.2", 0, ""),
    }


def test_a_failing_section_does_not_stop_the_next(local):
    result, found = run_sections(local, [
        ("a", "echo before; exit 3"),
        ("b", "set -e; false; echo never"),
        ("c", "cat; echo read-nothing"),          # stdin is /dev/null: never waits for input
        ("d", "echo after"),
    ])
    assert [(s.name, s.rc, s.output) for s in found.values()] == [
        ("a", 3, "before"), ("b", 1, ""), ("c", 0, "read-nothing"), ("d", 0, "after")]
    assert result.exit == 0


def test_empty_and_comment_only_bodies(local):
    _, found = run_sections(local, [("empty", ""), ("comment", "# nothing to do"), ("last", "echo ok")])
    assert {n: (s.rc, s.output) for n, s in found.items()} == {"empty": (0, ""), "comment": (0, ""),
                                                              "last": (0, "ok")}


def test_preamble_runs_first_even_without_final_newline(local):
    _, found = run_sections(local, [("a", 'echo "$X"')], preamble="X=from-preamble")
    assert found["a"].output == "from-preamble"


def test_truncated_stream_gives_rc_minus_one(local):
    result, _ = run_sections(local, [("a", "echo one"), ("b", "echo partial; echo more")])
    cut = result.stdout[:result.stdout.index("@@fleet:end b")]  # the connection dropped here
    found = split_sections(cut)
    assert found["a"] == Section("a", 0, "one")
    assert found["b"].rc == -1 and found["b"].output.startswith("partial\nmore")


def test_begin_without_end_then_next_section(local):
    text = "\n@@fleet:begin a@@\nhalf\n@@fleet:begin b@@\nfull\n@@fleet:end b 0@@\n"
    assert split_sections(text) == {"a": Section("a", -1, "half"), "b": Section("b", 0, "full")}


def test_output_outside_sections_and_foreign_end_markers_are_ignored():
    text = "motd noise\n@@fleet:begin a@@\n@@fleet:end z 5@@\nx\n@@fleet:end a 2@@\ntrailing\n"
    assert split_sections(text) == {"a": Section("a", 2, "@@fleet:end z 5@@\nx")}


@pytest.mark.parametrize("name", ["", "has space", "semi;colon", "quote'", "new\nline"])
def test_bad_names_are_refused(name):
    with pytest.raises(ValueError, match="section name"):
        section(name, "true")


def test_background_sections_run_at_once_and_print_in_order_with_their_own_status(local, tmp_path):
    """`first` can only end once `second` has run: one after the other, it would wait for nothing and say so."""
    from fleet.sections import background
    flag = tmp_path / "second-ran"
    parts = [background("facts.first", f"for i in $(seq 6000); do [ -e {flag} ] && {{ echo saw the second; exit 3; }}; "
                                       "sleep 0.1; done; echo alone"),
             background("facts.second", f"touch {flag}; echo to-stderr >&2; echo second"),
             background("facts.third", "printf 'no newline'")]
    from fleet import remote   # the frame together() defines once (fleet/remote/frame.sh)
    result = local.run("\n".join([remote.program("frame")] + [p.start for p in parts] + [p.collect for p in parts]),
                       timeout=900)
    found = split_sections(result.stdout)
    assert list(found) == ["facts.first", "facts.second", "facts.third"]
    assert found["facts.first"] == Section("facts.first", 3, "saw the second")
    assert found["facts.second"] == Section("facts.second", 0, "to-stderr\nsecond")
    assert found["facts.third"] == Section("facts.third", 0, "no newline")


def test_together_runs_the_plain_sections_alone_after_the_background_ones_have_ended(local, tmp_path):
    """A role author's check (a plain section) never runs beside fleet's own concurrent ones."""
    from fleet.sections import background, together
    mark = tmp_path / "mark"
    parts = [section("check.a.0", f"[ -e {mark} ] && cat {mark} || echo 'ran too early'"),
             background("check.b.0", f"sleep 0.2; echo b > {mark}; echo wrote"),
             background("check.c.0", "exit 10")]
    found = split_sections(local.run(together(parts), timeout=600).stdout)
    assert found == {"check.b.0": Section("check.b.0", 0, "wrote"), "check.c.0": Section("check.c.0", 10, ""),
                     "check.a.0": Section("check.a.0", 0, "b")}


def test_a_section_after_a_kept_one_starts_when_that_one_ends_not_after_every_other(local, tmp_path):
    """`slow` can only end once `fingerprint` (which reads what `trace` keeps) has run: started after every background
    section, it would never run in time. The kept value is the section's output as `$(...)` keeps it; the output is
    printed in the parts' order; the role author's plain check still runs after all of them."""
    from fleet.sections import background, together
    flag = tmp_path / "fingerprint-ran"
    parts = [background("facts.trace", "echo line one; echo line two; echo", keep_in="fleet_kept"),
             background("facts.slow", f"for i in $(seq 100); do [ -e {flag} ] && {{ echo saw it; exit 0; }}; "
                                      "sleep 0.05; done; echo alone; exit 1"),
             background("facts.fingerprint", f'printf "[%s]" "$fleet_kept"; echo " $venv"; touch {flag}',
                        keep_in="fleet_fp", after="fleet_kept", before="venv=/opt/v"),
             background("check.gate.0", 'echo "gate read ${#fleet_fp} characters"', after="fleet_fp"),
             section("check.author.0", f'[ -e {flag} ] && echo "after them: $fleet_fp"')]
    result = local.run(together(parts), timeout=60)
    assert [line for line in result.stdout.splitlines() if line.startswith("@@fleet:begin")] == [
        f"@@fleet:begin {name}@@" for name in ("facts.trace", "facts.slow", "facts.fingerprint", "check.gate.0",
                                               "check.author.0")]
    found = split_sections(result.stdout)
    assert found["facts.slow"] == Section("facts.slow", 0, "saw it")
    assert found["facts.fingerprint"].output == "[line one\nline two] /opt/v"
    assert found["check.gate.0"].output == f"gate read {len('[line one' + chr(10) + 'line two] /opt/v')} characters"
    assert found["check.author.0"] == Section("check.author.0", 0, "after them: [line one\nline two] /opt/v")


def test_a_section_after_a_variable_nothing_keeps_runs_as_a_plain_one(local):
    """The verify gate in a checks-only command: no fingerprint kept there, so it runs where a plain check runs."""
    from fleet.sections import background, together
    parts = [background("check.gate.0", 'echo "${fleet_fp-unset} $venv"', after="fleet_fp", before="venv=/opt/v"),
             background("check.b.0", "echo b")]
    text = together(parts)
    assert text.index("check.b.0") < text.index("check.gate.0")
    found = split_sections(local.run(text, timeout=60).stdout)
    assert found == {"check.b.0": Section("check.b.0", 0, "b"), "check.gate.0": Section("check.gate.0", 0, "unset /opt/v")}


def test_the_functions_sections_need_are_defined_once_and_every_kind_of_section_judges(local, tmp_path):
    """Sections declare the shared functions they call (`needs`); together() writes each once, at the top, where
    background and plain sections (subshells) see them; a bounded() body (a bash of its own on fd 3) gets them in it
    from whoever builds it; a quoted here-document of data is data. No string search: nothing declared, nothing
    defined, whatever a body holds."""
    from fleet.sections import Plain, background, bounded, together
    from fleet.shell import TRUST_FN, define

    judge = "fleet_trust /usr/bin/env && echo trusted"
    data = tmp_path / "data"
    parts = [background("bg.one", judge, needs=("trust",)), background("bg.two", judge, needs=("trust",)),
             Plain(section("plain", judge), ("trust",)),
             section("own", bounded(define(("trust",)) + judge, 30)),
             section("data", f"cat > {data} <<'FLEET_DATA'\n{TRUST_FN}\nFLEET_DATA\n")]
    text = together(parts)
    assert text.startswith(TRUST_FN + "\n") and text.count(TRUST_FN) == 3     # the top, the bounded body, the data
    result = local.run(text)
    found = split_sections(result.stdout)
    for name in ("bg.one", "bg.two", "plain", "own"):
        assert (found[name].rc, found[name].output.strip()) == (0, "trusted"), found[name]
    assert data.read_text() == TRUST_FN + "\n"
    undeclared = together([section("plain", judge), section("data", f"cat > /dev/null <<'X'\n{TRUST_FN}\nX\n")])
    assert undeclared.count(TRUST_FN) == 1                                 # the data's own: nothing hoisted
    assert split_sections(local.run(undeclared).stdout)["plain"].rc == 127  # and undeclared, not defined


def test_a_function_needing_another_brings_it_once_in_a_fixed_order():
    from fleet.shell import FUNCTIONS, define, needed

    assert needed(["program", "fetch", "trust"]) == ("trust", "retry", "fetch", "bin", "program")
    assert define(["bin", "bin"]).count("fleet_trust() {") == 1 and define([]) == ""
    assert tuple(FUNCTIONS)[0] == "trust"
    with pytest.raises(ValueError, match="no shared shell function 'trsut'"):
        needed(["trsut"])


def test_the_probe_takes_the_fingerprint_once_the_trace_is_kept_while_the_other_sources_run():
    """On the lent H200 the fingerprint and the verify gate ran after the slowest source (nvidia-smi -q -x), in series
    after it; they read only the shells' trace: the fingerprint starts with the others (what reads no trace is taken
    meanwhile) and is fed the trace as soon as it has ended, before any other is waited for."""
    from fleet.engine import probe
    text = probe.script()
    fingerprint = text.index("coproc fleet_co_facts_verify_fingerprint")
    trace_waited = text.index('mapfile -u "$fleet_bg_facts_shells"')
    fed = text.index('printf \'%s\' "${fleet_shells_out-}" >&"$fleet_w"')
    first_other = min(re.search(f"^fleet_collect fleet_bg_facts_{name}$", text, re.M).start()
                      for name in ("uname", "health", "torch"))
    assert fingerprint < trace_waited < fed < first_other


def test_a_fed_section_starts_at_once_and_reads_the_kept_value_on_its_stdin(local, tmp_path):
    """`fp` takes its first half while `trace` still runs (it writes a mark `trace` waits for), then reads the trace on
    its stdin to its end: no section started after it holds that pipe open (a gate after it, a plain section). A fed
    section that ends without reading its stdin does not end the script (SIGPIPE); where nothing keeps what it reads
    it runs as a plain section reading the variable's value."""
    from fleet.sections import background, together
    early = tmp_path / "early"
    parts = [background("facts.trace", f"for i in $(seq 100); do [ -e {early} ] && break; sleep 0.05; done; "
                                       f"[ -e {early} ] && echo saw the first half; echo two", keep_in="fleet_tr"),
             background("facts.other", "sleep 0.3; echo other"),
             background("facts.fp", f'touch {early}; echo first; t=$(cat); echo "[$t]"', keep_in="fleet_fp",
                        after="fleet_tr", fed=True, before="venv=/v"),
             background("check.gate.0", 'echo "gate: $fleet_fp $venv"', after="fleet_fp"),
             section("plain", "echo plain")]
    result = local.run(together(parts), timeout=60)
    found = split_sections(result.stdout)
    assert found["facts.trace"].output == "saw the first half\ntwo"
    assert found["facts.fp"] == Section("facts.fp", 0, "first\n[saw the first half\ntwo]")
    assert found["check.gate.0"].output == "gate: first\n[saw the first half\ntwo] /v"
    assert [line for line in result.stdout.splitlines() if line.startswith("@@fleet:begin")] == [
        f"@@fleet:begin {name}@@" for name in ("facts.trace", "facts.other", "facts.fp", "check.gate.0", "plain")]

    parts = [background("facts.trace", "sleep 0.2; seq 20000", keep_in="fleet_tr"),   # more than a pipe holds
             background("facts.fp", "echo gone; exit 97", after="fleet_tr", fed=True),
             section("plain", "echo still here")]
    found = split_sections(local.run(together(parts), timeout=60).stdout)
    assert found["facts.fp"] == Section("facts.fp", 97, "gone") and found["plain"].output == "still here"

    alone = together([background("facts.fp", 't=$(cat); echo "[$t]"', after="fleet_tr", fed=True, before="fleet_tr=x")])
    assert split_sections(local.run(alone, timeout=60).stdout)["facts.fp"] == Section("facts.fp", 0, "[x]")


def test_what_others_wait_for_starts_first():
    """The shells' trace heads the probe's slowest chain (trace -> fingerprint -> verify's gate): it is started before
    the ~30 other sources (on the lent H200 it began ~15 ms into the probe behind them); the output order is the
    sources' order still."""
    import re
    from fleet.engine import probe
    text = probe.script()
    starts = re.findall(r"exec \{fleet_bg_(\w+)\}<", text)
    assert starts[0] == "facts_shells" and "facts_uname" in starts[1:]
    import subprocess
    from fleet.facts.sources import SOURCES
    out = subprocess.run(["bash", "-c", text], capture_output=True, text=True, timeout=120).stdout   # this machine's
    assert re.findall(r"^@@fleet:begin facts\.(\w+)@@$", out, re.M) == [s.name for s in SOURCES]


@pytest.mark.parametrize("body", [
    "echo out; echo err >&2; exit 3",            # exit N, stderr folded in, in order
    "printf 'no newline'",
    "printf 'two\\n\\n'",
    "read -r x; echo \"read: [$x] $?\"",          # stdin is /dev/null
    "ls /nonexistent-fleet-path",                  # the last command's status
    "f() { return 7; }; f",
    "set -e; false; echo not reached",
    "",
    "# only a comment",
    "cat <<'E'\nhere\nE",
    "trap 'echo own trap' EXIT; echo body",        # a trap of its own: section()'s subshell
    "exec /bin/echo replaced",                     # exec of a program: section()'s subshell
    "exec 5>/dev/null; echo fd-only",
])
def test_a_background_section_prints_what_section_prints(local, body):
    """A background section runs its body in its process substitution's own shell, an EXIT trap printing the end
    (one fork fewer than section()'s subshell): byte for byte what section() prints, for every way a body ends."""
    from fleet.sections import _OWN_SHELL_UNSAFE, background, together
    plain = local.run(section("facts.x", body)).stdout
    bg = local.run(together([background("facts.x", body)])).stdout
    assert bg == plain
    assert split_sections(bg)["facts.x"].rc == split_sections(plain)["facts.x"].rc
    start = background("facts.x", body).start
    own_shell = "\nfleet_begin facts.x\n" in start   # fleet/remote/frame.sh's frame
    assert own_shell == (not _OWN_SHELL_UNSAFE.search(body)), start


def test_a_background_section_in_its_own_shell_forks_once_fewer(local):
    """What the frame saves, counted by the kernel: the processes a script of 20 background sections starts."""
    from fleet import sections
    from fleet.sections import background, together

    def forks(text: str) -> int:   # in a PID namespace of its own: no other process of the machine counted
        import shlex
        counted = local.run("unshare --pid --fork --mount-proc bash -c " + shlex.quote(
            "a=$(cat /proc/sys/kernel/ns_last_pid)\n" + text + "\n"
            "b=$(cat /proc/sys/kernel/ns_last_pid); echo \"@@forks $((b - a))\"")).stdout
        return int(counted.rsplit("@@forks ", 1)[1])

    bodies = [background(f"facts.s{i}", "echo hi") for i in range(20)]
    subshell = [sections.Background(b.name, b.start.replace(
        b.start.split("\n", 1)[1], sections.section(b.name, "echo hi") + ")"), b.collect) for b in bodies]
    assert local.run(together(subshell)).stdout == local.run(together(bodies)).stdout
    assert forks(together(subshell)) - forks(together(bodies)) == 20


def test_a_fed_section_that_ends_before_its_output_is_taken_keeps_its_lines(local):
    """A fed section whose body ends without reading its input (a helper program missing: exit 97) still has its
    lines collected when the script reaches the line that takes its output only later, as on a busy host (the
    suite saw one lost under load; a pause stands for it here): bash reaps an ended coprocess and closes its
    descriptors, so the coprocess holds on until its input ends."""
    import dataclasses

    from fleet.sections import background, together

    fed = background("facts.fp", "echo gone; exit 97", after="fleet_tr", fed=True)
    late = dataclasses.replace(fed, start=fed.start.replace("\nexec ", "\nsleep 0.5\nexec ", 1))
    assert late.start != fed.start
    parts = [background("facts.trace", "seq 3", keep_in="fleet_tr"), late, section("plain", "echo still here")]
    found = split_sections(local.run(together(parts), timeout=60).stdout)
    assert found["facts.fp"] == Section("facts.fp", 97, "gone") and found["plain"].output == "still here"


def test_every_section_a_script_frames_is_named_whichever_frame_it_has(local):
    """A probe cut short is judged by the sections its script frames (engine/probe.py unobserved): a background
    section framed in its own shell by frame.sh's `fleet_begin NAME` counts as much as section()'s printed marker.
    Read by name only, a blocked df framed by fleet_begin went unnamed and the cut probe blamed the sections after it."""
    from fleet.engine.probe import unobserved
    from fleet.sections import background, framed, together
    parts = [background("facts.quick", "echo quick"), background("facts.df", "sleep 30; echo late"),
             background("facts.after", "echo after"), section("facts.plain", "echo plain")]
    text = together(parts)
    assert "fleet_begin facts.df" in text                 # framed in its own shell: no printed marker in the text
    assert framed(text) == ["facts.quick", "facts.df", "facts.after", "facts.plain"]
    result = local.run(text, timeout=3)                   # cut short while df's section sleeps
    found = split_sections(result.stdout)
    assert found["facts.quick"].output == "quick"
    assert unobserved(text, found) == ["facts.df", "facts.after", "facts.plain"]


def test_a_marker_is_a_line_of_its_own():
    """split_sections finds the markers in the whole output at once: one that does not start its line, or has more
    after it, is a section's output like any other line."""
    text = ("\n@@fleet:begin a@@\nsaid @@fleet:end a 0@@\n@@fleet:end a 0@@ and more\nx@@fleet:begin b@@\n"
            "@@fleet:end a 4@@\n@@fleet:begin c@@")
    assert split_sections(text) == {
        "a": Section("a", 4, "said @@fleet:end a 0@@\n@@fleet:end a 0@@ and more\nx@@fleet:begin b@@"),
        "c": Section("c", -1, "")}
    assert split_sections("@@fleet:begin a@@\n\n\n\n@@fleet:end a 0@@") == {"a": Section("a", 0, "\n")}


@pytest.mark.parametrize("text, names", [
    ("printf '\\n@@fleet:begin a@@\\n'\nfleet_begin b\n", ["a", "b"]),
    ("fleet_begin a\nfleet_begin a\nx fleet_begin b", ["a", "b"]),      # once each; after a space: a word's start
    ("myfleet_begin a\nfleet_begin b c\nfleet_begin d@@\n@fleet:begin e@@", []),   # mid-word, more after, one @
    ("@@fleet:begin a@@fleet:begin b@@", ["a"]),     # b's @@ are a's end: no match starts inside another
    ("é_fleet_begin a\n.fleet_begin b", ["b"]),       # \b as re reads it: é is a word character
])
def test_framed_reads_both_frames_as_their_pattern_does(text, names):
    """sections.framed finds the frames from their common word, then checks what comes before it: the names are
    those of `@@fleet:begin NAME@@|\\bfleet_begin NAME$` (multiline), matches taken in order, none inside another."""
    from fleet.sections import framed
    pattern = re.compile(r"@@fleet:begin ([A-Za-z0-9_.:-]+)@@|\bfleet_begin ([A-Za-z0-9_.:-]+)$", re.M)
    assert framed(text) == names == list(dict.fromkeys(a or b for a, b in pattern.findall(text)))
