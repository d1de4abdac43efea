"""Lines of shell text inside Python string literals in fleet/ (issue 44: the remote programs belong in files
under fleet/remote/, where bash -n and shellcheck read them).

    python3 bench/shell_text.py            # per module (most first) and the total
    python3 bench/shell_text.py --total    # the total alone
    python3 bench/shell_text.py --list M   # the literals counted in module M (path under fleet/), with their lines

How a literal is judged shell: every string literal of the module's syntax tree (a plain string, an f-string counted
as one literal, implicitly joined pieces as one) that is not a docstring, and whose source text holds at least one
mark no English sentence or Python expression carries: `$(`, `${`, `$NAME`, `2>`, `>/dev/null`, `&&`, `||`, `;;`,
`; then`, `; do`, a line starting with `fi`, `done`, `esac`, `then`, `else` or `do`, `[ -x ...` style tests, `[[ `,
`printf `, `command -v`, `export `, `local `, `set -`, `exec `, `| ` piping into a word. Its lines are the source
lines it spans (end line - start line + 1), so a program written as twenty joined one-line pieces counts twenty.
Python run on the host through `python -c` inside such a string is counted with it (it is text in a string that
ships to a host either way). Modules under fleet/remote/ are not counted: they are the programs' files.

Text for people is not counted (changed 2026-11-29, issue 44: these literals never reach a shell, and 152 of the
544 lines counted then were such text): a literal given as a `help=`, `description=`, `epilog=`, `usage=`, `fix=`
or `error=` argument, or assigned to a module constant named HELP, DESCRIPTION or EPILOG (argparse's texts, which
name `$FLEET_INVENTORY` or show an example command line); a literal inside a `raise` statement (an error's sentence);
a regular expression given to Python's `re` (compiled here, never sent). Two marks were read too widely and now
need what the shell needs: `local NAME` only where a command starts (at a line's start, after `;`, `{`, `(`, `&&`,
`||`, `then`, `do`, `else`: English "a local mirror" matched), and a digit before `>` only where it is not part of a
word or a tag (a redirect `2>`, not HTML's `<h1>` nor a regex's `(?P<v6>`); a line starting with `| ` is a Markdown
table row, not a pipe. Before the change: 544 lines in 55 modules; the same tree after it: 392 lines in 34 modules.
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

SHELL_MARKS = re.compile(
    r"\$\(|\$\{|\$[A-Za-z_][A-Za-z_0-9]*|\$[?#@!*0-9]|(?<![\w<])[0-9]>|>/dev/null|&&|\|\||;;|;\s*then\b|;\s*do\b"
    r"|(^|\n)\s*(fi|done|esac|then|else|do)\b|\[ -[a-zA-Z] |\[\[ |\bprintf |\bcommand -v\b|\bexport [A-Z_]"
    r"|(?:^|\n|[;{(\"'&|]|\bthen|\bdo|\belse)[ \t]*local [a-z_]|\bset -[a-z]|\bexec [a-z/]|\| [a-z]")
# a Markdown table row (a literal's line starting with `| `, after its opening quote): no pipe in it is a shell's
_TABLE_ROW = re.compile(r"(?m)^\s*(?:[rfbRFB]{0,2}[\"']{1,3})?\|\s.*$")
# where a literal is text for people: these keyword arguments, these module constants, and Python's own regexes
_PROSE_KEYWORDS = {"help", "description", "epilog", "usage", "fix", "error"}
_PROSE_CONSTANTS = {"HELP", "DESCRIPTION", "EPILOG"}
_RE_CALLS = {"compile", "match", "fullmatch", "search", "sub", "subn", "findall", "finditer", "split"}


def _docstrings(tree: ast.AST) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            value = first.value if isinstance(first, ast.Expr) else None
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                ids.add(id(value))
    return ids


def _prose(tree: ast.AST) -> set[int]:
    """The ids of the nodes whose literals are text for people or Python's regexes (see the module's docstring)."""
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Raise):
            ids.add(id(node))
        elif isinstance(node, ast.keyword) and node.arg in _PROSE_KEYWORDS:
            ids.add(id(node.value))
        elif isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id in _PROSE_CONSTANTS
                                                  for t in node.targets):
            ids.add(id(node.value))
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _RE_CALLS
              and isinstance(node.func.value, ast.Name) and node.func.value.id == "re" and node.args):
            ids.add(id(node.args[0]))
    return ids


def is_shell(text: str) -> bool:
    """Whether a literal's source text holds a shell mark (outside Markdown table rows)."""
    return bool(SHELL_MARKS.search(_TABLE_ROW.sub("", text)))


def literals(source: str) -> list[tuple[int, int, str]]:
    """(first line, last line, source text) of each shell literal in a module's source."""
    tree = ast.parse(source)
    skip = _docstrings(tree) | _prose(tree)
    found: list[tuple[int, int, str]] = []

    def visit(node: ast.AST) -> None:
        if id(node) in skip:
            return
        is_str = isinstance(node, ast.Constant) and isinstance(node.value, str)
        if is_str or isinstance(node, ast.JoinedStr):
            text = ast.get_source_segment(source, node) or ""
            if is_shell(text):
                found.append((node.lineno, node.end_lineno or node.lineno, text))
            return   # an f-string's parts are counted with it
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def count(path: Path) -> int:
    """Source lines of shell literals in one module (a line two literals share counts once)."""
    lines: set[int] = set()
    for first, last, _ in literals(path.read_text(encoding="utf-8")):
        lines.update(range(first, last + 1))
    return len(lines)


def per_module(root: Path = ROOT) -> dict[str, int]:
    fleet = root / "fleet"
    counts = {}
    for path in sorted(fleet.rglob("*.py")):
        rel = path.relative_to(fleet).as_posix()
        if rel.startswith("remote/"):
            continue
        n = count(path)
        if n:
            counts[rel] = n
    return counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--total", action="store_true")
    parser.add_argument("--list", metavar="MODULE")
    parser.add_argument("--root", type=Path, default=ROOT, help="a checkout (default: this one)")
    args = parser.parse_args(argv)
    if args.list:
        path = args.root / "fleet" / args.list
        for first, last, text in literals(path.read_text(encoding="utf-8")):
            print(f"--- {args.list}:{first}-{last} ({last - first + 1} lines)\n{text}")
        return 0
    counts = per_module(args.root)
    total = sum(counts.values())
    if not args.total:
        for name, n in sorted(counts.items(), key=lambda item: (-item[1], item[0])):
            print(f"{n:6d}  fleet/{name}")
        print(f"{total:6d}  lines of shell text in Python string literals, {len(counts)} modules")
    else:
        print(total)
    return 0


if __name__ == "__main__":
    sys.exit(main())
