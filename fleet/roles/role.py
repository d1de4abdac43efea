"""What a role is once loaded (Role, its TaskSpecs) and once rendered for one host (Task), and where the built-in
roles live (BUILTIN_DIR). Loading: fleet/roles/load.py; rendering: fleet/roles/render.py."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fleet import variables as declarations
from fleet.errors import InputError
from fleet.resources import Resource


# The built-in roles: roles/ at the repository's root, shipped as the package fleet.builtin_roles (pyproject.toml's
# package-dir): the import finds them in a wheel (fleet/builtin_roles/) and in an editable install (roles/) alike.
def _builtin_dir() -> Path:
    try:
        from fleet import builtin_roles
    except ImportError as exc:
        # a checkout run from its source without an install (PYTHONPATH=checkout, as on the lent GPU machine):
        # roles/ beside the package; else an install made before roles/ moved
        checkout = Path(__file__).resolve().parents[2] / "roles"
        if (checkout / "verify" / "role.yaml").is_file():
            return checkout
        raise ImportError("fleet's built-in roles (the package fleet.builtin_roles: roles/ in a checkout) are not "
                          "installed with this fleet; install it (in a checkout: pip install -e . or "
                          "./scripts/setup.sh)") from exc
    return Path(builtin_roles.__file__).resolve().parent


BUILTIN_DIR = _builtin_dir()


@dataclass
class TaskSpec:
    role: str
    index: int
    name: str
    type: str
    params: dict[str, Any]        # raw (templated) values
    when: str | None
    sudo: bool | None
    where: str                    # file:line, for errors
    lines: dict[str, str] = field(default_factory=dict)   # parameter -> its file:line
    when_where: str = ""          # file:line of `when:`
    after: tuple[str, ...] = ()   # roles whose tasks must have succeeded first (the role's `after:` and the task's)
    locks: tuple[str, ...] | None = None   # what it holds while it runs, where the task names it (else its type's)
    timeout: Any = None           # `timeout:` seconds (may be templated): the apply's deadline on the host
    why_skipped: str | None = None   # `why_skipped:`: why a false `when:` leaves it out, in plain words (templated)
    # its type's validate(params, where, check_types=False), as load_role found it: the values a task left out
    # shows (render.py), the same for every host
    unrendered: dict[str, Any] | None = field(default=None, repr=False, compare=False)

    @property
    def id(self) -> str:
        return f"{self.role}.{self.index}"


@dataclass
class Role:
    name: str
    path: Path
    description: str
    defaults: dict[str, Any]
    when: str | None
    tasks: list[TaskSpec] = field(default_factory=list)
    when_where: str = ""
    why: str | None = None
    why_skipped: str | None = None   # `why_skipped:`: why a false `when:` leaves the role out, in plain words
    variables: dict[str, declarations.Variable] = field(default_factory=dict)   # what it declares
    # Its templates/ files as first read, and the names its texts read (fleet/roles/declared.py): a loaded role is
    # one reading of its files, as of its role.yaml, so a run renders every host from the same texts and reads
    # each file once, not once a host (issue 46)
    texts: dict[str, str] = field(default_factory=dict, repr=False, compare=False)
    names: frozenset[str] | None = field(default=None, repr=False, compare=False)

    @property
    def origin(self) -> str:
        """Where the role came from: 'built-in' or its directory (shown by --check)."""
        return "built-in" if self.path.parent.parent == BUILTIN_DIR else str(self.path.parent)

    def template_path(self, name: str) -> Path:
        return self.path.parent / "templates" / name

    def template(self, name: str, where: str = "") -> str:
        text = self.texts.get(name)
        if text is None:   # a template that is not there raises each time (nothing is kept)
            text = self.texts[name] = template_source(self.template_path(name), where or str(self.path))
        return text


@dataclass
class Task:
    """A task rendered for one host: the resource ready to give its check and apply snippets."""

    spec: TaskSpec
    resource: Resource
    enabled: bool
    skip_reason: str | None = None   # why it is left out: the role's `why_skipped:` words, else skip_condition
    skip_condition: str | None = None   # the raw condition: "condition is false: EXPR" or "role condition ..."
    why: str | None = None        # the role's rendered `why:`
    deadline: int | None = None   # seconds its apply may run on the host (fleet.sections.bounded)

    @property
    def id(self) -> str:
        return self.spec.id


def template_source(path: Path, where: str) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        raise InputError(f"{where}: template {path.name!r} not found at {path}; "
                         "put it in the role's templates/ folder") from None
