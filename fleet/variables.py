"""Every variable declared once: its type, default, choices or bounds and what it means, as Ansible's
argument_spec declares a module's options. Checking and converting are one step (Variable.convert): the value
that passes is the value that renders, whichever way it was spelled (`verify_perf: "off"` in an inventory,
`--set verify_perf=off`, a group's or a host's vars: all False).

Where a variable is declared:
- here (STACK): what decisions, the probe and several roles read (cuda_version, python_env, apt_lock_timeout...)
- in a role's role.yaml, under `variables:`, what only that role reads:

      variables:
        verify_timeout: {type: seconds, default: 900, description: how long verify may run on the host}

- a role's plain `defaults: {NAME: VALUE}` (a user's role of an older shape) declares NAME with the type its
  default has (true/false, a whole number, a number, a list, a mapping; text shaped by its name's ending:
  _url, _repo, _dir ...), and a name a role reads without declaring it takes any value (text still shaped).

Types (parsers in fleet/parse.py): bool, int, float, seconds, duration, gpus, text, url, git_url, path, list, mapping,
any. A url, git_url or path whose default is "" may be left "" (the role's own choice).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Iterable

from fleet import parse, yamlsrc
from fleet.parse import Rejected

TYPES = ("bool", "int", "float", "seconds", "duration", "gpus", "text", "url", "git_url", "path", "list", "mapping", "any")
SPEC_KEYS = {"type", "default", "description", "choices", "min", "max", "own_tree"}


@dataclass(frozen=True)
class Variable:
    name: str
    type: str
    default: Any
    description: str = ""
    choices: tuple[str, ...] = ()
    min: float | None = None
    max: float | None = None
    own_tree: bool = False        # a path fleet fills as root: never a system directory
    declared_in: str = "fleet"    # "fleet" (this table) or the role that declares it

    def convert(self, value: Any) -> Any:
        """The value as fleet uses it, or Rejected: '<name>=<value> <what is wrong>: <what to write>'."""
        try:
            return _convert(self, value)
        except Rejected as exc:
            raise Rejected(f"{self.name}={exc}") from None


def _convert(var: Variable, value: Any) -> Any:
    kind = var.type
    if kind == "any":
        return _shaped(var.name, value) if isinstance(value, str) else value
    if kind == "bool":
        return parse.boolean(value)
    if kind == "int":
        least = None if var.min is None else int(var.min)     # bounds are the declaration's (min: 0)
        return parse.count(value, least=least, most=None if var.max is None else int(var.max))
    if kind == "float":
        return parse.number(value, least=var.min, most=var.max)
    if kind == "seconds":
        found = parse.seconds(value, zero=var.min == 0)
        if not found.is_integer():       # a task's deadline and apt's lock wait take whole seconds
            raise Rejected(f"{value!r} is not whole seconds: write e.g. {var.default or 600}")
        return int(found)
    if kind == "gpus":
        if value is None or isinstance(value, (bool, list, dict)):
            raise Rejected(f"{value!r} must be a count, a model or both, not {yamlsrc.type_name(value)}: "
                           f"write e.g. 8, H200 or 8x H200")
        parse.gpus(value)
        return str(value).strip()
    if kind == "duration":
        parse.duration(value)
        return value.strip() if isinstance(value, str) else value    # as written: "24h" reads as it was set
    if kind in ("list", "mapping"):
        want = list if kind == "list" else dict
        if not isinstance(value, want):
            raise Rejected(f"{value!r} must be {yamlsrc.type_name(want())}, like its default, not "
                           f"{yamlsrc.type_name(value)}; write it as one, e.g. {'[...]' if want is list else '{...}'}")
        return value
    if value is None or isinstance(value, (bool, list, dict)):
        raise Rejected(f"{value!r} must be text, not {yamlsrc.type_name(value)}; quote it")
    text = str(value).strip()
    if kind == "text":
        if var.choices and text not in var.choices:
            raise Rejected(f"{text!r} is not one of {', '.join(var.choices)}: set one of those")
        return text
    if text == "" and var.default == "":
        return ""                                  # "" means "the role's own choice" where the default says so
    if kind == "path":
        example = var.default if isinstance(var.default, str) and var.default.startswith("/") else "/workspace/cache"
        return parse.path(text, example=example, own_tree=var.own_tree)
    return parse.url(text, git=kind == "git_url")


def _shaped(name: str, value: str) -> str:
    """A text whose declaration is only its name (a role reads it without a default): shaped by the ending."""
    kind = infer_type(name, "")
    return _convert(Variable(name, kind, ""), value) if kind != "text" else value


def infer_type(name: str, default: Any) -> str:
    """The type a plain `defaults:` value declares: its own type; text by the name's ending."""
    if isinstance(default, bool):
        return "bool"
    if isinstance(default, int):
        return "int"
    if isinstance(default, float):
        return "float"
    if isinstance(default, list):
        return "list"
    if isinstance(default, dict):
        return "mapping"
    if name.endswith("_repo") and name != "cuda_apt_repo":
        return "git_url"
    if name.endswith(("_url", "_apt_repo")):
        return "url"
    if name.endswith(("_dir", "_home", "_env", "_tmpdir")):
        return "path"
    return "text"


def from_spec(name: str, spec: Any, declared_in: str) -> Variable:
    """A role's `variables:` entry -> Variable; Rejected (a sentence) when the spec itself is wrong."""
    if not isinstance(spec, dict) or "type" not in spec or "default" not in spec:
        raise Rejected(f"variable {name!r} is declared as a mapping with type and default, e.g. "
                       f"{name}: {{type: text, default: \"\", description: what it sets}}")
    unknown = [k for k in spec if k not in SPEC_KEYS]
    if unknown:
        raise Rejected(f"unknown key {unknown[0]!r} in the declaration of {name!r}{yamlsrc.closest(unknown[0], SPEC_KEYS)}")
    if spec["type"] not in TYPES:
        raise Rejected(f"variable {name!r} has type {spec['type']!r}; write one of {', '.join(TYPES)}")
    bounds = [spec.get(k) for k in ("min", "max") if spec.get(k) is not None]
    if any(isinstance(b, bool) or not isinstance(b, (int, float)) for b in bounds):
        raise Rejected(f"min and max of {name!r} are numbers; write e.g. min: 0")
    choices = spec.get("choices") or []
    if not isinstance(choices, list) or not all(isinstance(c, str) for c in choices):
        raise Rejected(f"choices of {name!r} are a list of words; write e.g. choices: [pypi, apt]")
    var = Variable(name, spec["type"], spec["default"], str(spec.get("description") or ""),
                   tuple(spec.get("choices") or ()), spec.get("min"), spec.get("max"), bool(spec.get("own_tree")),
                   declared_in)
    return with_default_checked(var)


def from_default(name: str, default: Any, declared_in: str) -> Variable:
    """A plain `defaults:` entry: a stack variable keeps its declared type (the role's value is checked against
    it); any other name is declared with the type its default has."""
    if name in STACK:
        return with_default_checked(replace(STACK[name], default=default, declared_in=declared_in))
    return Variable(name, infer_type(name, default), default, declared_in=declared_in)


def with_default_checked(var: Variable) -> Variable:
    """The declaration with its default converted: a default its own type refuses is a mistake in the role."""
    if var.default in ("", None) or var.type == "any":
        return var
    return replace(var, default=var.convert(var.default))


def check(values: dict[str, Any], declared: dict[str, Variable], where: dict[str, str]) -> tuple[dict, list[str]]:
    """(the values converted, problems): each problem '<file:line or --set NAME>: <sentence>'. A value that is
    not converted is left out of the first, so nothing unchecked is ever rendered."""
    converted, problems = {}, []
    for name, value in values.items():
        at = where.get(name, "the variables")
        var = declared.get(name)
        if var is None:
            problems.append(f"{at}: unknown variable {name!r}: no role and no decision reads it"
                            f"{yamlsrc.closest(name, declared).replace('valid keys', 'known variables')}")
            continue
        try:
            converted[name] = var.convert(value)
        except Rejected as exc:
            problems.append(f"{at}: {exc}")
    return converted, problems


def defaults() -> dict[str, Any]:
    """The stack's defaults: what every role renders with beneath its own and the host's variables."""
    return {name: var.default for name, var in STACK.items()}


def table(variables: Iterable[Variable]) -> str:
    """The Markdown table the README shows (tests/unit/test_variables.py keeps the two equal)."""
    rows = ["| variable | type | default | declared in | what it sets |", "|---|---|---|---|---|"]
    for var in sorted(variables, key=lambda v: (v.declared_in != "fleet", v.declared_in, v.name)):
        kind = var.type + (f" ({' / '.join(var.choices)})" if var.choices else "")
        kind += f" {_bounds(var)}" if _bounds(var) else ""
        default = "`" + (repr(var.default) if var.default in ("", [], {}) else _shown(var.default)) + "`"
        rows.append(f"| `{var.name}` | {kind} | {default} | {var.declared_in} | {var.description} |")
    return "\n".join(rows) + "\n"


def _bounds(var: Variable) -> str:
    if var.min is not None and var.max is not None:
        return f"{var.min:g}..{var.max:g}"
    return f">= {var.min:g}" if var.min is not None else ""


def _shown(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    return f"{value:g}" if isinstance(value, float) else str(value)


def _stack(*rows: tuple) -> dict[str, Variable]:
    out = {}
    for name, kind, default, description, *more in rows:
        options = more[0] if more else {}
        out[name] = with_default_checked(Variable(name, kind, default, description, **options))
    return out


_NVIDIA = "https://developer.download.nvidia.com/compute"

# What decisions, the probe and more than one role read. A role's own variables live in its role.yaml.
STACK: dict[str, Variable] = _stack(
    ("cuda_version", "text", "13.0", "the CUDA release to install (a version fleet knows the driver for)"),
    ("cuda_apt_repo", "url", f"{_NVIDIA}/cuda/repos/{{distro}}/{{arch}}/",
     "NVIDIA's apt repository ({distro} and {arch} filled per host)"),
    ("torch_version", "text", "2.11.0", "the torch release, like 2.11.0"),
    ("torch_index_url", "url", "https://download.pytorch.org/whl/cu130", "the index torch's wheels come from"),
    ("torch_source", "text", "official", "where torch comes from", {"choices": ("official", "jetson")}),
    ("jetson_torch_index_url", "url", "", "the Jetson torch index (\"\": the Jetson AI Lab index of the host's "
     "JetPack)"),
    ("torch_cuda", "text", "", "the CUDA of the torch index when its URL does not say (a mirror); \"\": read the URL"),
    ("pip_index_url", "url", "https://pypi.org/simple", "PyPI: NVPL and cuDSS wheels, the Jetson torch's dependencies"),
    ("nvpl_source", "text", "pypi", "where NVPL comes from", {"choices": ("pypi", "apt", "tarball")}),
    ("cudss_source", "text", "pypi", "where cuDSS comes from", {"choices": ("pypi", "apt", "tarball")}),
    ("python_env", "path", "/opt/fleet/venv", "the virtual environment torch goes into", {"own_tree": True}),
    ("nvpl_redist_url", "url", f"{_NVIDIA}/nvpl/redist/", "NVIDIA's NVPL archives (nvpl_source: tarball)"),
    ("cudss_redist_url", "url", f"{_NVIDIA}/cudss/redist/", "NVIDIA's cuDSS archives (cudss_source: tarball)"),
    ("nvpl_home", "path", "/opt/nvidia/nvpl", "where NVPL's archive is unpacked", {"own_tree": True}),
    ("cudss_home", "path", "/opt/nvidia/cudss", "where cuDSS's archive is unpacked", {"own_tree": True}),
    # the Jetson-index torch links libcudss.so.0 (NEEDED): cuDSS 0.7.1 ships that soname
    ("cudss_version", "text", "0.7.1.4", "the cuDSS release"),
    ("nvpl_blas_version", "text", "0.4.1.1", "the NVPL BLAS release (NVIDIA's redistrib_25.5.json)"),
    ("nvpl_lapack_version", "text", "0.3.1.1", "the NVPL LAPACK release"),
    ("cuda_keyring_pins", "mapping", {}, "keyring URL -> sha256 replacing fleet's pin for that URL (the "
     "inventory's keyring_pins: FILE fills it)"),
    ("cutlass_dir", "path", "/opt/cutlass", "where CUTLASS is checked out", {"own_tree": True}),
    ("cuda_keyring_url", "url", "", "the cuda-keyring .deb (\"\": NVIDIA's for the host's distribution)"),
    ("cuda_keyring_sha256", "text", "", "its sha256 (\"\": fleet's pin for NVIDIA's URL)"),
    ("apt_lock_timeout", "seconds", 600, "how long apt waits for another apt's lock (a fresh VM's "
     "unattended-upgrades holds it for minutes)", {"min": 0}),
    ("expect_gpus", "gpus", "", "what the pod was rented as: 8, H200 or 8x H200 (\"\": nothing expected); fewer or "
     "other GPUs make it a pod to return (fleet/decide/health.py)"),
)
