"""fleet/remote/strip.py: comments and blank lines leave a bash program's text, and nothing else does (quotes,
here-documents, ${x#y}, $#, arithmetic in base 8 stay byte for byte). Each case is also run by bash: the stripped
text prints what the commented one printed."""

import shlex
import subprocess

import pytest

from fleet import remote, shell
from fleet.remote.strip import StripError, strip_comments


def bash(text: str) -> str:
    return subprocess.run(["bash", "-c", text], capture_output=True, text=True, check=True).stdout


CASES = [
    ("#!/usr/bin/env bash\n# a comment\n\necho hi\n", "echo hi\n"),
    ("  # indented\necho a   # after code\n", "echo a\n"),
    ("echo 'a # b'  # c\n", "echo 'a # b'\n"),
    ('echo "a # b" # c\n', 'echo "a # b"\n'),
    ("x=abc; echo ${x#a} ${x//#/y} $# a#b\n", "x=abc; echo ${x#a} ${x//#/y} $# a#b\n"),
    ("echo $((8#17))  # octal\n", "echo $((8#17))\n"),
    ("echo $'it\\'s # not a comment'\n", "echo $'it\\'s # not a comment'\n"),
    ("cat <<EOF\n# kept\n\nline\nEOF\n# gone\n", "cat <<EOF\n# kept\n\nline\nEOF\n"),
    ("cat <<-'END'\n\t# kept\n\tEND\necho x # gone\n", "cat <<-'END'\n\t# kept\n\tEND\necho x\n"),
    ("echo 'two\n# lines'\n", "echo 'two\n# lines'\n"),
    ('echo "two\n\n  # lines"\n', 'echo "two\n\n  # lines"\n'),
    ("echo a\\#b;echo c;# d\n", "echo a\\#b;echo c;\n"),
    ("case x in x) echo y;; # z\nesac\n", "case x in x) echo y;;\nesac\n"),
    ('echo "${x:-# not}" # yes\n', 'echo "${x:-# not}"\n'),
]


@pytest.mark.parametrize("text,expected", CASES)
def test_strip_keeps_the_program_and_drops_its_comments(text, expected):
    assert strip_comments(text) == expected
    assert bash(expected) == bash(text)


@pytest.mark.parametrize("text", ["echo 'open\n", "cat <<EOF\nno end\n", 'echo "${x\n'])
def test_an_unclosed_quote_or_heredoc_is_an_error_naming_the_file(text):
    with pytest.raises(StripError, match="prog.sh: the .* is not closed"):
        strip_comments(text, "prog.sh")


@pytest.mark.parametrize("text", ["echo a \\\n  # why\necho b\n", "echo a \\\n\necho b\n"])
def test_a_comment_or_blank_after_a_continuation_is_an_error(text):
    """bash ends `echo a` at the comment; without it, `echo b` would join it: refused, naming the line."""
    assert bash(text) == "a\nb\n"
    with pytest.raises(StripError, match="prog.sh:2: a blank or comment line after"):
        strip_comments(text, "prog.sh")
    assert strip_comments("echo a \\\\\n# fine: an escaped backslash\necho b\n") == "echo a \\\\\necho b\n"


def test_every_shipped_program_strips_to_text_bash_reads_and_without_its_comments():
    names = remote.programs()
    assert {"trust", "trust_prime", "retry"} <= set(names)
    for name in names:
        text = remote.program(name)
        assert not text.endswith("\n") and "\n\n" not in text, name
        assert not any(line.lstrip().startswith("#") for line in text.splitlines() if "<<" not in text), name
        check = subprocess.run(["bash", "-n"], input=text, capture_output=True, text=True)
        assert check.returncode == 0, (name, check.stderr)


def test_retry_patterns_are_the_python_tables():
    """fleet/remote/retry.sh's case patterns and grep -e patterns are fleet.shell.TRANSIENT and SELF_RETRIED."""
    text = remote.program("retry")
    assert "case $fleet_l in " + "|".join(f"*{shlex.quote(t)}*" for t in shell.TRANSIENT) + ")" in text
    assert "grep -qE" + "".join(f" -e {shlex.quote(t)}" for t in shell.SELF_RETRIED) + " --" in text


def test_the_helper_program_functions_name_fleets_own_constants():
    """bin_ok.sh, program_run.sh and program_install.sh write the protocol's constants out: they are Python's."""
    from fleet import programs

    bin_ok, run, install = (remote.program(n) for n in ("bin_ok", "program_run", "program_install"))
    assert f'"{programs.BIN}/$1"' in bin_ok
    assert f"printf '{programs.MISSING}%s\\n' \"$1\"; return {programs.MISSING_EXIT}" in run
    assert f'"{programs.BIN}/$1"' in run
    assert f"b={programs.BIN}\n" in install and f"printf '{programs.INSTALLED}%s\\n'" in install
    assert f"could not install {programs.BIN}/$1" in install


def test_the_host_lock_names_hostlocks_constants():
    from fleet.engine import hostlock

    text = remote.program("hostlock")
    assert text.count(f'echo "{hostlock.MARK} $(head -c 300 -- ') == 2 and text.count(f"; exit {hostlock.BUSY}\n") == 2
    assert f"printf '%s %s\\n' {hostlock.TAKEOVER} " in text


def test_git_check_exits_with_needs_change():
    from fleet.resources.base import NEEDS_CHANGE

    assert remote.program("git_check").count(f"exit {NEEDS_CHANGE}") == 4


def test_the_verify_gate_prints_verify_gates_markers():
    from fleet.resources import verify_gate

    text = remote.program("verify_gate")
    assert f"printf '{verify_gate._FP}%s@@\\n'" in text and f"printf '{verify_gate._PART}%s\\n'" in text
    assert f"echo '{verify_gate._REUSED}'; exit 0" in text


def test_the_older_queries_made_on_the_host_are_pythons():
    """gpu_smi.sh asks QUERY_OLD and health_query.sh FIELDS_THROTTLE by editing the query they are handed."""
    from fleet.facts import gpu, health

    assert bash(f"q={shlex.quote(gpu.QUERY_FULL)}; printf %s \"${{q/compute_cap,/}}\"") == gpu.QUERY_OLD
    assert bash(f"fields={shlex.quote(health.FIELDS)}; "
                "printf %s \"${fields//clocks_event_reasons./clocks_throttle_reasons.}\"") == health.FIELDS_THROTTLE
    assert "${q/compute_cap,/}" in remote.program("gpu_smi")
    assert '"${fields//clocks_event_reasons./clocks_throttle_reasons.}"' in remote.program("health_query")
