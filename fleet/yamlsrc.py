"""YAML loading that remembers where every value came from.

PyYAML's plain loader forgets line numbers and silently keeps the last of two duplicate keys; inventories
and roles need both for errors a person can act on. We compose the node tree and build plain data from it,
recording the line of every mapping key and sequence item.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from fleet.errors import InputError


@dataclass
class Located:
    """Plain data plus the line of each path in it, e.g. lines[("hosts", "thor", "port")] == 7."""

    path: str
    data: Any
    lines: dict[tuple, int] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    def line(self, *keys) -> int:
        """The line of the deepest known prefix of `keys` (1-based)."""
        for n in range(len(keys), -1, -1):
            if keys[:n] in self.lines:
                return self.lines[keys[:n]]
        return 1

    def problem(self, keys: tuple, message: str) -> None:
        self.problems.append(f"{self.path}:{self.line(*keys)}: {message}")


def load(path: str | Path, text: str | None = None) -> Located:
    """Parse YAML at `path`; syntax errors and duplicate keys raise InputError naming line and column."""
    path = str(path)
    if text is None:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except FileNotFoundError:
            raise InputError("file not found; check the path", path=path) from None
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"cannot read it ({exc})", path=path) from None
    try:
        node = _compose(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else path
        # An unclosed bracket or quote is noticed lines later: name where it opened too.
        opened = exc.context_mark
        started = (f" ({exc.context} on line {opened.line + 1}, column {opened.column + 1})"
                   if opened and mark and opened.line != mark.line and exc.context else "")
        raise InputError(f"{where}: YAML syntax error: {exc.problem}{started}; fix the indentation or quoting "
                         "there") from None
    except yaml.reader.ReaderError as exc:   # a control character or bad encoding: it knows only its offset
        line = text[:exc.position].count("\n") + 1 if isinstance(exc.position, int) else 1
        raise InputError(f"character {exc.character!r} is not allowed in YAML; remove it", path=path,
                         line=line) from None
    except yaml.YAMLError as exc:
        raise InputError(f"YAML error: {exc}", path=path, line=1) from None
    except RecursionError:   # 20,000 `[`: PyYAML composes by recursion
        raise _too_deep(path, text) from None
    located = Located(path, None)
    try:
        located.data = _build(node, (), located, _Budget(), 1) if node is not None else {}
    except RecursionError:
        raise _too_deep(path, text) from None
    if located.problems:
        raise InputError("\n".join(located.problems))
    return located


def _too_deep(path: str, text: str) -> InputError:
    """Nesting past what Python's recursion reads: one sentence at the line where it got too deep."""
    from fleet.jsontext import DEPTH, too_deep_at

    at = too_deep_at(text)
    return InputError(f"nested more than {DEPTH} levels deep (an inventory or role nests a few); flatten it",
                      path=path, line=text.count("\n", 0, at) + 1 if at is not None else None)


def _compose(text: str):
    """The node tree, by libyaml where PyYAML has it (a tenth of the pure-Python parser's time: every command
    reads the inventory and eight role files); any error is found again by the pure-Python parser, whose
    messages and marks are the ones people are shown."""
    fast = getattr(yaml, "CSafeLoader", None)
    if fast is not None:
        try:
            return yaml.compose(text, Loader=fast)
        except yaml.YAMLError:
            pass
    return yaml.compose(text, Loader=yaml.SafeLoader)


# Aliases share nodes: `a: &x [*x]` is a cycle and nine aliases of nine aliases of ... ("billion laughs") build
# 9**9 values from a few lines. A cycle is refused, and so is a document expanding past this many values.
MAX_VALUES = 100_000


class _Budget:
    def __init__(self):
        self.left = MAX_VALUES
        self.open: set[int] = set()   # ids of the collection nodes being built: meeting one again is a cycle


def _build(node: yaml.Node, keys: tuple, loc: Located, budget: _Budget, at: int) -> Any:
    """Plain data from `node`; `at` is the line of the key (or item) that holds it, where an alias was written."""
    loc.lines[keys] = node.start_mark.line + 1
    budget.left -= 1
    if budget.left < 0:
        raise InputError(f"{loc.path}:{at}: the document expands to more than {MAX_VALUES} values "
                         "through aliases (*name); write the values out or use fewer aliases")
    if isinstance(node, (yaml.MappingNode, yaml.SequenceNode)):
        if id(node) in budget.open:
            raise InputError(f"{loc.path}:{at}: a recursive alias: this value contains itself (the alias refers to "
                             "a value it is inside); an alias (*name) must refer to a value defined outside it")
        budget.open.add(id(node))
        try:
            return _collection(node, keys, loc, budget, at)
        finally:
            budget.open.discard(id(node))
    return _scalar(node)


MERGE = "tag:yaml.org,2002:merge"


def _collection(node: yaml.Node, keys: tuple, loc: Located, budget: _Budget, at: int) -> Any:
    if isinstance(node, yaml.MappingNode):
        out: dict = {}
        merged: dict = {}
        for key_node, value_node in node.value:
            if key_node.tag == MERGE:
                merged.update(_merge(value_node, keys, loc, budget, key_node.start_mark.line + 1, merged))
                continue
            if not isinstance(key_node, yaml.ScalarNode):  # `? [a, b]` or `{...}: x`: unhashable, and a mistake
                loc.problems.append(f"{loc.path}:{key_node.start_mark.line + 1}: a key must be a plain name, "
                                    "not a list or mapping; write it as one word")
                continue
            key = _scalar(key_node)
            if key in out:
                first = loc.lines.get(keys + (key,), "?")
                loc.problems.append(
                    f"{loc.path}:{key_node.start_mark.line + 1}: {key!r} is defined twice (first on line {first}); "
                    "keep one of them"
                )
                continue
            loc.lines[keys + (key,)] = key_node.start_mark.line + 1
            out[key] = _build(value_node, keys + (key,), loc, budget, key_node.start_mark.line + 1)
            loc.lines[keys + (key,)] = key_node.start_mark.line + 1
        for key, value in merged.items():   # the mapping's own keys win over merged ones, wherever they are written
            out.setdefault(key, value)
        return out
    return [_build(item, keys + (i,), loc, budget, at) for i, item in enumerate(node.value)]


def _merge(node: yaml.Node, keys: tuple, loc: Located, budget: _Budget, at: int, before: dict) -> dict:
    """A merge key (`<<: *pod`, or `<<: [*a, *b]`, earlier ones winning), as YAML 1.1 defines it: the keys of the
    mapping(s) it names, each remembered at the line where it was written (the anchor's). Anything else named
    by `<<` is a problem at its line."""
    sources = node.value if isinstance(node, yaml.SequenceNode) else [node]
    if not sources or not all(isinstance(s, yaml.MappingNode) for s in sources):
        loc.problems.append(f"{loc.path}:{at}: a merge key (<<) takes an alias of a mapping, like <<: *pod, or a list "
                            "of them, like <<: [*pod, *gpu]; write one of those or the keys themselves")
        return {}
    out: dict = {}
    for source in sources:
        scratch = Located(loc.path, None, problems=loc.problems)
        built = _build(source, (), scratch, budget, at)
        for key, value in built.items():
            if key in out or key in before:
                continue
            out[key] = value
            for path, line in scratch.lines.items():   # its lines, under this mapping's keys
                if path[:1] == (key,):
                    loc.lines.setdefault(keys + path, line)
    return out


def _scalar(node: yaml.Node) -> Any:
    return _construct(node)


def _construct(node: yaml.ScalarNode) -> Any:
    loader = yaml.SafeLoader("")
    try:
        return loader.construct_object(node, deep=True)
    finally:
        loader.dispose()


def closest(word: str, choices) -> str:
    """' (did you mean X?)' or '' — the hint unknown-key errors carry."""
    match = difflib.get_close_matches(str(word), list(choices), n=1, cutoff=0.5)
    return f"; did you mean {match[0]!r}?" if match else f"; valid keys: {', '.join(sorted(choices))}"


def type_name(value: Any) -> str:
    return {dict: "a mapping", list: "a list", str: "a string", int: "a number", float: "a number",
            bool: "true/false", type(None): "empty"}.get(type(value), type(value).__name__)
