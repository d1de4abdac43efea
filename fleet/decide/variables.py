"""The variables decisions read, their public defaults, and their validation.

Every source is a variable with the real public default, so a mirror or the lab can
replace it (shared/DESIGN.md). Values may come from YAML (typed: `cuda_version: 13.0`
is a float) or from `--set NAME=VALUE` (text), so everything is normalised to text here.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field, fields

from fleet.decide.health import ExpectError, parse_expect
from fleet.knowledge.platforms import jetpack_cudas
from fleet.decide.versions import known_releases, major_minor
from fleet.knowledge.cuda_table import newer_family, planned_release
from fleet.variables import STACK

_TORCH_VERSION = re.compile(r"^\d+\.\d+(\.\d+)?\Z")


class VariableError(ValueError):
    """A variable's value cannot be used; the message is one sentence with the fix."""


@dataclass(frozen=True)
class Vars:
    cuda_version: str
    cuda_apt_repo: str
    torch_version: str
    torch_index_url: str
    torch_source: str
    jetson_torch_index_url: str
    torch_cuda: str
    pip_index_url: str
    nvpl_source: str
    cudss_source: str
    python_env: str
    nvpl_redist_url: str
    cudss_redist_url: str
    nvpl_home: str
    cudss_home: str
    cudss_version: str
    nvpl_blas_version: str
    nvpl_lapack_version: str
    expect_gpus: str
    explicit: frozenset = field(default=frozenset(), compare=False)  # names the user set
    # cuda_keyring_pins: keyring URL -> sha256 that replaces fleet's shipped pin for that URL (a mirror's or the
    # lab's own keyring; fleet/decide/keyring.py); the inventory's top-level `keyring_pins:` file fills it
    keyring_pins: dict = field(default_factory=dict, compare=False)

    @property
    def cuda_dashed(self) -> str:
        """'13.0' -> '13-0', as in the package names cuda-toolkit-13-0 and cuda-compat-13-0."""
        return self.cuda_version.replace(".", "-")

    @property
    def cuda_major(self) -> str:
        return self.cuda_version.split(".")[0]


# The variables decisions read (Vars' fields): declared once, with defaults and choices, in fleet/variables.py.
DEFAULTS: dict[str, str] = {f.name: STACK[f.name].default for f in fields(Vars) if f.name in STACK}
CHOICES: dict[str, tuple[str, ...]] = {name: STACK[name].choices for name in DEFAULTS if STACK[name].choices}


def resolve(values: dict) -> Vars:
    """Defaults overlaid with `values` (unknown names are left to the roles that read them)."""
    merged = {name: _text(values.get(name, default)) for name, default in DEFAULTS.items()}
    explicit = frozenset(name for name in DEFAULTS if name in values and _text(values[name]) != "")
    for name, allowed in CHOICES.items():
        if merged[name] not in allowed:
            raise VariableError(f"{name}={merged[name]!r} is not one of {', '.join(allowed)}: set one of those.")
    merged["cuda_version"] = _cuda_version(merged["cuda_version"])
    if not _TORCH_VERSION.match(merged["torch_version"]):
        raise VariableError(f"torch_version={merged['torch_version']!r} is not a version like 2.11.0: set one.")
    if merged["torch_cuda"]:
        merged["torch_cuda"] = _cuda_version(merged["torch_cuda"], name="torch_cuda")
    if not merged["python_env"].startswith("/"):
        raise VariableError(f"python_env={merged['python_env']!r} is not an absolute path: "
                            f"set one like /opt/fleet/venv.")
    for name in ("cudss_version", "nvpl_blas_version", "nvpl_lapack_version"):
        if not re.fullmatch(r"\d+(\.\d+){1,3}", merged[name]):
            raise VariableError(f"{name}={merged[name]!r} is not a version like {DEFAULTS[name]}: set one.")
    try:
        parse_expect(merged["expect_gpus"])
    except ExpectError as exc:
        raise VariableError(str(exc)) from None
    return Vars(**merged, explicit=explicit, keyring_pins=_keyring_pins(values.get(PINS_VAR)))


PINS_VAR = "cuda_keyring_pins"
_SHA256 = re.compile(r"^[0-9a-f]{64}\Z")


def _keyring_pins(value) -> dict:
    if value in (None, "", {}):
        return {}
    if not isinstance(value, dict):
        raise VariableError(f"{PINS_VAR}={value!r} is not a mapping: write {PINS_VAR}: {{URL: SHA256, ...}} "
                            "(or top-level keyring_pins: FILE in the inventory).")
    pins = {}
    for url, digest in value.items():
        digest = _text(digest).lower()
        if not str(url).startswith("https://") or not _SHA256.match(digest):
            raise VariableError(f"{PINS_VAR}={{{url!r}: {digest!r}}} is not an https URL and a 64-hex sha256: "
                                "write the URL and `sha256sum`'s output for it.")
        pins[str(url)] = digest
    return pins


def _text(value) -> str:
    return "" if value is None else str(value).strip()


def _cuda_version(value: str, name: str = "cuda_version") -> str:
    try:
        release = major_minor(value)
    except ValueError:
        raise VariableError(f"{name}={value!r} is not a CUDA release like 13.0: "
                            f"set one of {known_releases()}.") from None
    # A JetPack's own CUDA (11.4 on JetPack 5) is known too, so the host's answer says what fleet does with it
    # (fleet/decide/__init__.py: JetPack 5 is refused with its fix, any other host is offered a release it plans).
    # A release newer than the driver table (13.4) is planned by the rule for later releases, and a major newer than
    # any it knows (14.0) is refused in the host's answer: never a bad-input exit for a release not known yet.
    if name == "cuda_version" and not planned_release(release) and release not in jetpack_cudas() \
            and not newer_family(release):
        raise VariableError(f"{name}={value!r} is not a CUDA release fleet knows the driver for: "
                            f"set one of {known_releases()}.")
    return release
