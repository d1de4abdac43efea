"""What every resource type shares: parameters, the check/apply contract, and shell helpers.

A resource renders two bash snippets and parses one answer:

- `check()`  read-only; exit 0 when the host is in state, exit 10 when it is not (stdout says what differs;
             anything after a line `@@diff@@` is the old content, for --diff), anything else when the check
             itself could not run.
- `apply()`  converges; exit 0 on success.
- `parse(rc, output)` -> CheckResult.

Every value reaches the shell through `q()` / `qpath()` (fleet/shell.py's quoting): never spliced.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, ClassVar

from fleet.errors import InputError
from fleet.shell import quote, quote_path

IN_STATE, NEEDS_CHANGE = 0, 10
DIFF_MARK = "@@diff@@"


def q(value: Any) -> str:
    return quote(str(value))


qpath = quote_path


@dataclass
class CheckResult:
    in_state: bool
    reason: str
    diff: str | None = None
    error: str | None = None      # the check itself failed to run
    data: dict | None = None      # structured answer (assert with json: the verify result)


@dataclass(frozen=True)
class Seen:
    """What a check's answer is read against: the facts of the same probe, and the verify gate's settings."""
    facts: dict
    max_age: float | None = None     # how old a verify record may be and still be reused (None: always run)
    forced: str | None = None        # why verify must run whatever its fingerprint says


@dataclass(frozen=True)
class Param:
    types: tuple = (str,)
    required: bool = False
    default: Any = None
    check: Any = None       # optional value -> problem text (None when fine), run on rendered values


_MODE = re.compile(r"^(?:0o|0)?([0-7]{1,4})\Z")


def mode_problem(value: Any) -> str | None:
    """Why `value` is not a file mode such as "0644" (or 420, which is how YAML reads an unquoted 0644)."""
    if isinstance(value, bool):
        return "is not a mode"
    if isinstance(value, int):
        return None if 0 <= value <= 0o7777 else "is out of range"
    return None if _MODE.match(str(value).strip()) else "is not an octal mode such as \"0644\""


_PLAIN_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*\Z")


def plain_name_problem(value: Any) -> str | None:
    """Why `value` cannot be a file name under a system directory (no '/', no '..', no newline)."""
    return None if _PLAIN_NAME.match(str(value)) else "must be a plain file name (letters, digits, . _ -)"


def one_line_problem(value: Any) -> str | None:
    return "must be one line" if "\n" in str(value) else None


def one_of(*choices: str):
    """A Param check accepting only `choices`."""
    def problem(value: Any) -> str | None:
        return None if value in choices else f"must be one of {', '.join(choices)}"
    return problem


def mode_text(value: Any) -> str:
    """The mode as `stat -c %a` prints it: 420 -> "644", "0644" -> "644", "0o755" -> "755"."""
    number = value if isinstance(value, int) else int(_MODE.match(str(value).strip()).group(1), 8)
    return format(number, "o")


class Resource:
    """Base class; subclasses set `type_name`, `params` and implement check/apply/describe."""

    type_name: ClassVar[str] = ""
    params: ClassVar[dict[str, Param]] = {}
    needs_root: ClassVar[bool] = False
    template_target: ClassVar[str | None] = None   # the parameter a role's `template:` fills
    path_param: ClassVar[str | None] = None        # a ~/ path here means the user's own file: no sudo
    requires_one_of: ClassVar[tuple[tuple[str, ...], str]] = ((), "")  # (params, why), e.g. creates/unless
    # The check is fleet's own read-only shell, safe to run at the same time as other such checks
    # (sections.background); False where it runs what a role's author wrote (command's unless, assert's script).
    concurrent_check: ClassVar[bool] = True
    # The shell variable its check reads that the facts probe keeps (verify's gate: the fingerprint's parts): in a
    # probe, the check starts as soon as that is kept (sections.background `after`), not after every fleet check.
    reads_kept: ClassVar[str | None] = None
    # An assertion: nothing to apply, judged on the last probe after everything else converged (assert, verify).
    judged: ClassVar[bool] = False
    # It keeps a record on the host and in the facts (verify: /var/lib/fleet/verify.json, facts.verify): its check
    # sits behind gate(); where it ran, the engine writes record() to `record_path` and fold()s it into the facts.
    # Where a task failed earlier in the run, it is neither run nor judged.
    writes_record: ClassVar[bool] = False
    record_path: ClassVar[str | None] = None
    # The shared shell functions its check and apply call (fleet.shell.FUNCTIONS: "trust", "retry", "fetch", ...),
    # and those only its apply calls (a probe, which runs checks alone, does not carry them): written once by whoever
    # builds the script; uses() adds "program" where it runs helper programs.
    needs: ClassVar[tuple[str, ...]] = ()
    apply_needs: ClassVar[tuple[str, ...]] = ()
    # Seconds one apply of this type may take on the host before it is stopped (fleet.sections.bounded); a task's
    # `timeout:` raises it. Types that download or build set more.
    default_deadline: ClassVar[int] = 900

    def __init__(self, values: dict[str, Any]):
        self.p = values

    def locks(self) -> frozenset[str]:
        """What the apply holds while it runs (fleet/engine/chains.py): two tasks holding one lock never run at
        once. "*" (the default: a role author's command may touch anything) excludes every other task;
        "path:P" excludes P's parents and children too."""
        return frozenset({"*"})

    def deadline(self) -> int:
        return self.default_deadline

    @classmethod
    def validate(cls, values: Any, where: str, *, check_types: bool = True) -> dict[str, Any]:
        """Check a task's parameters; returns them with defaults filled. `where` is 'file:line'.

        Roles are validated twice: at load (names only: values may still be templates) and after rendering.
        """
        if not isinstance(values, dict):
            raise InputError(f"{where}: '{cls.type_name}' takes a mapping of parameters "
                             f"({', '.join(cls.params)})")
        from fleet.yamlsrc import closest

        out = {}
        for key in values:
            if key not in cls.params:
                raise InputError(f"{where}: unknown parameter {key!r} for {cls.type_name}{closest(key, cls.params)}")
        for key, spec in cls.params.items():
            if key not in values or values[key] is None:
                if spec.required:
                    raise InputError(f"{where}: {cls.type_name} needs '{key}'")
                out[key] = spec.default
                continue
            value = _coerce(values[key], spec.types)
            if not check_types and _templated(value):
                out[key] = value   # judged once rendered; a literal value is judged now, before any host
                continue
            if not isinstance(value, spec.types) or (isinstance(value, bool) and bool not in spec.types):
                names = " or ".join(t.__name__ for t in spec.types)
                raise InputError(f"{where}: '{key}' of {cls.type_name} must be {names}, not {type(value).__name__}")
            problem = spec.check(value) if spec.check else None
            if problem:
                raise InputError(f"{where}: '{key}' of {cls.type_name} {problem}, not {value!r}")
            out[key] = value
        names, why = cls.requires_one_of
        if names and not any(out.get(n) for n in names):
            article = "an" if cls.type_name[0] in "aeiou" else "a"
            raise InputError(f"{where}: {article} {cls.type_name} needs {' or '.join(repr(n) for n in names)}{why}")
        return out

    # -- the contract ----------------------------------------------------------------------------
    def describe(self) -> str:
        raise NotImplementedError

    def check(self) -> str:
        raise NotImplementedError

    def apply(self) -> str:
        raise NotImplementedError

    def parse(self, rc: int, output: str) -> CheckResult:
        text, _, diff = _split_diff(output)
        text = text.strip()
        if rc == IN_STATE:
            return CheckResult(True, text or "in state")
        if rc == NEEDS_CHANGE:
            return CheckResult(False, text or "not in state", diff or None)
        return CheckResult(False, f"check failed (exit {rc})", error=text or f"exit {rc}")

    # -- hooks for a check that answers with data (fleet/resources/verify.py); no-ops for every other type ----------
    @classmethod
    def gate_age(cls, host_vars: dict, roles) -> float | None:
        """How old a kept record may be and still stand for a new run (the gate's max_age), from the host's
        variables and the roles' defaults; None: this type keeps no gated record. Raises ValueError when the
        setting is not one."""
        return None

    def gate(self, body: str, max_age: float | None) -> str:
        """The check's shell as the probe runs it (verify: behind its fingerprint)."""
        return body

    def read(self, rc: int, output: str, seen: "Seen") -> tuple[CheckResult, dict]:
        """The check's answer, and what to fold into the probe's facts ({}: nothing)."""
        return self.parse(rc, output), {}

    def record(self, result: CheckResult, providers: dict) -> dict | None:
        """The record this check's answer makes (None: it keeps none)."""
        return None

    def fold(self, facts: dict, record: dict) -> dict:
        """The facts with that record in them (a new dict)."""
        return facts

    def reused(self, facts: dict) -> bool:
        """Whether the probe that made these facts reused the kept record instead of running the check."""
        return False

    def programs(self) -> tuple:
        """The helper programs its check and apply run from /var/lib/fleet/bin (fleet/programs.py: each
        installed by the digest of its text, shipped only where the host lacks it); () for most types."""
        return ()

    def uses(self, *, apply: bool = False) -> tuple[str, ...]:
        """The shared shell functions its check calls (`apply`: and its apply): `needs` (and `apply_needs`), and
        "program" where it runs helper programs (fleet/programs.py prelude and use)."""
        return (self.needs + (self.apply_needs if apply else ())
                + (("program",) if self.programs() else ()))

    @property
    def root(self) -> bool:
        """Whether the apply needs root (sudo on a non-root host): the task's `root:` if it says, else a ~/ path
        is the user's own, else the type's default."""
        if self.p.get("root") is not None:
            return bool(self.p["root"])
        if self.path_param:
            return not str(self.p[self.path_param]).startswith("~")
        return self.needs_root


def _templated(value: Any) -> bool:
    """Whether Jinja will still change this value (a string with {{ or {%, or a list/mapping holding one)."""
    if isinstance(value, str):
        return "{{" in value or "{%" in value
    if isinstance(value, (list, tuple)):
        return any(_templated(v) for v in value)
    if isinstance(value, dict):
        return any(_templated(k) or _templated(v) for k, v in value.items())
    return False


def _coerce(value: Any, types: tuple) -> Any:
    """Jinja renders to text: turn '20' back into 20 and 'true' into True where the parameter wants that."""
    if not isinstance(value, str) or str in types:
        return value
    from fleet import parse   # the one parser per kind, as variables and flags use

    for kind, read in ((bool, parse.boolean), (int, lambda t: parse.count(t, least=None)),
                       (float, parse.number)):
        if kind in types:
            try:
                return read(value)
            except parse.Rejected:
                pass
    return value


def _split_diff(output: str) -> tuple[str, str, str]:
    """(reason, marker, old content): the check prints its reason, then @@diff@@ and the old content."""
    parts = re.split(f"(?:^|\n){DIFF_MARK}(?:\n|$)", output, maxsplit=1)
    return (parts[0], DIFF_MARK, parts[1]) if len(parts) == 2 else (output, "", "")
