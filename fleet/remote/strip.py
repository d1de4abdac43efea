"""Comments out of a bash program's text, as it is shipped (Ansible's module_common `_strip_comments`, for bash).

fleet/remote/*.sh keep their explanations; the wire carries none of them, so no probe grows by a comment. What goes:

- a line holding only a comment (`# ...` after any indentation), the `#!` line and `# shellcheck` directives included;
- a blank line;
- a comment after code: a `#` that starts a word (at a line's start or after a blank, `;`, `&`, `|`, `(` or `)`),
  outside quotes, with the blanks before it.

What stays, byte for byte: everything inside '...', "...", $'...', ${...} (`${x#y}`, `${x//#/}`), $(( ))'s
arithmetic, a backslash-escaped character, and every line of a here-document (from the line after `<<WORD` up
to and including WORD), a `#` not starting a word (`$#`, `a#b`, `8#$m`), and the lines of a quoted string that
spans several lines. A text whose quotes or here-documents do not close is an error: it is not bash; so is a
comment or blank line right after a line continued with `\\` (dropping it would join two commands).
"""

from __future__ import annotations

import re

_WORD_START = " \t;&|()"
_HEREDOC = re.compile(r"<<(-?)\s*(['\"]?)([A-Za-z_][A-Za-z_0-9]*)\2")


class StripError(ValueError):
    pass


def strip_comments(text: str, name: str = "<text>") -> str:
    """`text` without its comments and blank lines (see the module's docstring); each kept line ends with "\\n"."""
    out: list[str] = []
    stack: list[str] = []      # open contexts: ' " $' { (( (a `$(` is code: comments count inside it)
    heredocs: list[tuple[str, bool]] = []   # pending (delimiter, tabs stripped) of the current line
    in_heredoc: tuple[str, bool] | None = None
    pending: list[tuple[str, bool]] = []
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    for number, line in enumerate(lines, 1):
        if in_heredoc:
            out.append(line)
            word, dash = in_heredoc
            if (line.lstrip("\t") if dash else line) == word:
                in_heredoc = pending.pop(0) if pending else None
            continue
        kept = _strip_line(line, stack, heredocs, name, number)
        if stack:   # a string open at the line's end: the line is kept whole from here on
            out.append(kept)
            continue
        if kept.strip():
            out.append(kept)
        elif out and _continued(out[-1]):
            # bash ends the command at a blank or comment line after `\`; dropped, the next line would join it
            raise StripError(f"{name}:{number}: a blank or comment line after a line ending in \\ (a continuation): "
                             "move the comment above the command")
        if heredocs:
            pending = heredocs[1:]
            in_heredoc = heredocs[0]
            heredocs.clear()
    if stack or in_heredoc:
        what = "here-document " + in_heredoc[0] if in_heredoc else f"quote {stack[-1]!r}"
        raise StripError(f"{name}: the {what} is not closed at the end of the text")
    return "".join(line + "\n" for line in out)


def _continued(line: str) -> bool:
    """The line ends in an unescaped backslash: the next line continues it."""
    trailing = len(line) - len(line.rstrip("\\"))
    return trailing % 2 == 1


def _strip_line(line: str, stack: list[str], heredocs: list, name: str, number: int) -> str:
    """The line up to its comment (stack carries open quotes across lines)."""
    i, n = 0, len(line)
    while i < n:
        c = line[i]
        top = stack[-1] if stack else ""
        if top == "'":
            if c == "'":
                stack.pop()
            i += 1
            continue
        if c == "\\":
            i += 2
            continue
        if top == "$'":
            if c == "'":
                stack.pop()
            i += 1
            continue
        if top == '"':
            if c == '"':
                stack.pop()
            elif line.startswith("${", i):
                stack.append("{")
                i += 2
                continue
            i += 1
            continue
        if top in ("{", "(("):
            if top == "{" and c == "}":
                stack.pop()
            elif top == "((" and line.startswith("))", i):
                stack.pop()
                i += 2
                continue
            elif c in "'\"":
                stack.append(c)
            elif line.startswith("${", i):
                stack.append("{")
                i += 2
                continue
            i += 1
            continue
        # code
        if c == "#" and (i == 0 or line[i - 1] in _WORD_START):
            return line[:i].rstrip(" \t")
        if c == "'":
            stack.append("'")
        elif c == '"':
            stack.append('"')
        elif line.startswith("$'", i):
            stack.append("$'")
            i += 2
            continue
        elif line.startswith("${", i):
            stack.append("{")
            i += 2
            continue
        elif line.startswith("$((", i) or (line.startswith("((", i) and (i == 0 or line[i - 1] in _WORD_START)):
            stack.append("((")
            i += 3 if line[i] == "$" else 2
            continue
        elif line.startswith("<<", i) and not line.startswith("<<<", i):
            match = _HEREDOC.match(line, i)
            if match:
                heredocs.append((match.group(3), match.group(1) == "-"))
                i = match.end()
                continue
        i += 1
    return line
