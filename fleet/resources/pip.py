"""Python packages in a virtual environment (the system Python is externally managed on Ubuntu 24.04).

Big wheels (torch) stage in TMPDIR: `tmpdir` and `cache_dir` can point at a persistent volume, and
`min_free_gb` refuses to start a download that cannot fit.

`installer: auto` (the torch role's) installs with uv where it can be had, else with pip as before. uv comes
from PyPI as a wheel (a static binary): `python -m pip install uv` into the venv, with pip's own configuration
(so a host's pip.conf index and certificate apply), then `uv --version` must answer. Any failure there (no
PyPI, an index without uv, a binary that does not run on this CPU) says so and installs with pip instead.
uv then gets what pip would: the same index and extra index (UV_INDEX_URL/UV_EXTRA_INDEX_URL, as pip gets them
in PIP_INDEX_URL/PIP_EXTRA_INDEX_URL/PIP_FIND_LINKS: never in argv, where a token in the URL is every user's) with
`--index-strategy unsafe-best-match`
(pip's rule: the best version across every index; uv's default takes the first index that has the name),
its cache in `<cache_dir>/uv` (UV_CACHE_DIR; copies out of it, as a volume is another filesystem), the same
TMPDIR, and the system's certificate store (UV_SYSTEM_CERTS=1, or UV_NATIVE_TLS=1 for a uv too old to know it; uv bundles its own roots otherwise, which a lab or
corporate CA is not in; SSL_CERT_FILE, where set, still applies). The check is the same for both installers.

Every program run from the venv (python, pip, uv) and the python that makes it is judged in the same shell just
before it runs (fleet/shell.py's fleet_trusted, fleet_trusted_python: owner, mode, ACLs, site-packages and .pth
files), and Python starts with -s from /.
"""

from __future__ import annotations

import re

from fleet.errors import InputError
from fleet.resources.base import NEEDS_CHANGE, Param, Resource, q, qpath
from fleet import remote
from fleet.programs import Program
from fleet.shell import exports

# fleet_venv_complete, fleet_venv_started: fleet/remote/pip_venv.sh
_VENV_SH = remote.program("pip_venv") + "\n"

# pip's and uv's index options, as the environment variables each reads (pip: PIP_<OPTION>; uv: UV_INDEX_URL,
# UV_EXTRA_INDEX_URL): an index URL may carry credentials (https://user:token@host/simple), and a command line is
# in /proc/*/cmdline for every user of the host, the environment only for its own user and root.
_PIP_ENV = {"index_url": "PIP_INDEX_URL", "extra_index_url": "PIP_EXTRA_INDEX_URL", "find_links": "PIP_FIND_LINKS"}
_UV_ENV = {"index_url": "UV_INDEX_URL", "extra_index_url": "UV_EXTRA_INDEX_URL"}

# What the check can judge: a name, or a name pinned with ==. Anything else (>=, extras, a stray option)
# would check "absent" forever and reinstall on every apply.
_REQUIREMENT = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?(?:==[A-Za-z0-9][A-Za-z0-9.+!_-]*)?\Z")

# Which requirements are unmet? `==X` is satisfied by X+local (2.11.0+cu130 satisfies ==2.11.0), as in PEP 440.
# A helper program (fleet/programs.py: installed by its digest, its text sent only where the host lacks it): the
# check runs it only where the fast path cannot vouch, so a converged host's probe carries neither Python text.
_CHECK_PY = remote.source("pip_check")   # fleet/remote/pip_check.py
CHECK_PROGRAM = Program("pip-check", _CHECK_PY)

# The check's fast path, in bash builtins alone: fleet/remote/pip_fast.sh (what it vouches for, in its comments).
_FAST_SH = remote.program("pip_fast") + "\n"

# Is each pinned requirement on the index for this Python and CPU? Read-only: one GET of the PEP 503 page
# <index>/<project>/ (a file:// index is read from disk: <dir>/<project>/index.html or its listing). A wheel
# fits when its version is the pin (a +local label allowed), its Python tag is this interpreter's (cp312, py3)
# and its platform tag ends with this machine (x86_64, aarch64) or is `any`. Exit 11 only when the index
# answered and lacks it; an index that cannot be read leaves the verdict to the apply.
_INDEX_PY = remote.source("pip_index")   # fleet/remote/pip_index.py
INDEX_PROGRAM = Program("pip-index", _INDEX_PY)


class Pip(Resource):
    type_name = "pip"
    needs = ("trust",)           # fleet_trusted_python and fleet_trusted
    apply_needs = ("retry",)
    default_deadline = 3600     # downloads (fleet.sections.bounded)
    path_param = "venv"
    params = {
        "packages": Param((list,), required=True),
        "venv": Param((str,), required=True),
        "python": Param((str,), default="python3"),
        "index_url": Param((str,)),
        "extra_index_url": Param((str,)),
        "find_links": Param((str,)),
        "no_index": Param((bool,), default=False),   # only find_links: an offline mirror, no index at all
        "tmpdir": Param((str,)),
        "cache_dir": Param((str,)),
        "min_free_gb": Param((int, float), default=0),
        "root": Param((bool,), default=None),
        "index_check": Param((bool,), default=False),  # a missing pin must exist on index_url for this Python/CPU
        "installer": Param((str,), default="pip"),     # pip | auto (uv where it can be had, else pip)
    }

    def locks(self) -> frozenset[str]:
        return frozenset({f"venv:{self.p['venv']}"})

    @classmethod
    def validate(cls, values, where, *, check_types=True):
        out = super().validate(values, where, check_types=check_types)
        if check_types:  # rendered: the names are final
            if out.get("installer") not in (None, "pip", "auto"):
                raise InputError(f"{where}: pip installer {out['installer']!r} is not pip or auto; "
                                 "use auto (uv where it can be had, else pip) or pip")
            for req in out["packages"]:
                if not isinstance(req, str) or not _REQUIREMENT.match(req):
                    raise InputError(f"{where}: pip package {req!r} is not NAME or NAME==VERSION; "
                                     "pin an exact version such as torch==2.11.0")
        return out

    def describe(self) -> str:
        return f"pip install {' '.join(self.p['packages'])} into {self.p['venv']}"


    def check(self) -> str:
        """fleet/remote/pip_check.sh, its values as variables, the requirements as its arguments."""
        index = self._index()
        values = {"venv": qpath(self.p["venv"]), "said": q(self.p["venv"]), "python": q(self.p["python"]),
                  "check": q(f"{CHECK_PROGRAM.file} {CHECK_PROGRAM.digest}"), "index": q(index),
                  "index_prog": q(f"{INDEX_PROGRAM.file} {INDEX_PROGRAM.digest}")}
        return (_VENV_SH + _FAST_SH + " ".join(f"fleet_pip_{name}={value}" for name, value in values.items())
                + f"\nset -- {' '.join(q(r) for r in self.p['packages'])}\n" + remote.program("pip_check") + "\n")

    def _index(self) -> str:
        """The index the check asks where something is missing ("": none asked)."""
        return self.p["index_url"] if self.p["index_check"] and self.p["index_url"] else ""

    def programs(self) -> tuple:
        """pip_check.py, and pip_index.py where the index is asked: run only where the fast path cannot vouch."""
        return (CHECK_PROGRAM, INDEX_PROGRAM) if self._index() else (CHECK_PROGRAM,)

    def apply(self) -> str:
        venv = qpath(self.p["venv"])
        args = ["--disable-pip-version-check", "--progress-bar", "off"]
        index_env = {_PIP_ENV[key]: str(self.p[key]) for key in _PIP_ENV if self.p.get(key)}
        if self.p["no_index"]:
            args.append("--no-index")
        lines = ["set -e", _VENV_SH, exports(index_env).rstrip("\n")]
        if self.p["tmpdir"]:
            lines.append(f"mkdir -p {qpath(self.p['tmpdir'])}; export TMPDIR={qpath(self.p['tmpdir'])}")
        if self.p["cache_dir"]:
            lines.append(f"export PIP_CACHE_DIR={qpath(self.p['cache_dir'])}")
        if self.p["min_free_gb"]:
            need = float(self.p["min_free_gb"])
            lines += [f"probe={venv}; while [ ! -e \"$probe\" ]; do probe=$(dirname -- \"$probe\"); done",
                      "free_kb=$(df -Pk \"$probe\" | awk 'NR==2{print $4}')",
                      f"if [ \"$free_kb\" -lt {int(need * 1024 * 1024)} ]; then echo \"only $((free_kb/1024/1024)) GB "
                      f"free at $probe; {need:g} GB needed: free space or point python_env at a bigger volume\" >&2; "
                      "exit 28; fi"]
        lines += [f"if fleet_venv_started {venv} && ! fleet_venv_complete {venv}; then "
                  f"fleet_aside={venv}.incomplete-$(date -u +%Y%m%dT%H%M%SZ); mv -- {venv} \"$fleet_aside\"; "
                  "echo \"moved an incomplete virtual environment (its creation was cut short) aside to $fleet_aside\"; fi",
                  f"if [ ! -x {venv}/bin/python ]; then echo 'create virtual environment'; "
                  f"fleet_trusted_python {q(self.p['python'])} -m venv {venv}; fi"]
        reqs = " ".join(q(r) for r in self.p["packages"])
        # a dist-info left behind by a package whose files were removed (rm -rf .../torch) makes pip and uv say
        # "already satisfied": pip_check.py --drop-broken removes that dist-info first, so the install puts it back.
        # It reads no index: the index's credentials stay out of its environment (only pip's install gets them)
        lines.append(f"(unset {' '.join(_PIP_ENV.values())}; "
                     f"fleet_trusted_python {venv}/bin/python -c {q(_CHECK_PY)} --drop-broken {reqs})")
        pip = [f"echo {q('pip install ' + ' '.join(self.p['packages']))}",
               f"fleet_retry 'pip install' fleet_trusted_python {venv}/bin/python -m pip install {' '.join(args)} {reqs}"]
        if self.p["installer"] != "auto" or self.p["find_links"] or self.p["no_index"]:
            return "\n".join(lines + pip)
        uv_env = {_UV_ENV[key]: str(self.p[key]) for key in _UV_ENV if self.p.get(key)}
        uv_args = ["--python", f"{venv}/bin/python", "--index-strategy", "unsafe-best-match"]
        if uv_env:
            lines.append(exports(uv_env).rstrip("\n"))
        if self.p["cache_dir"]:
            lines.append(f"export UV_CACHE_DIR={qpath(self.p['cache_dir'])}/uv UV_LINK_MODE=copy")
        lines += [
            f"if ! fleet_trusted {venv}/bin/uv --version >/dev/null 2>&1; then",
            # uv from pip's own configuration (pip.conf, PyPI), not the torch index exported above for pip's install
            f"  if ! (unset {' '.join(_PIP_ENV.values())}; fleet_trusted_python {venv}/bin/python -m pip install "
            "--disable-pip-version-check --progress-bar off -q uv) >&2 || "
            f"! fleet_trusted {venv}/bin/uv --version >/dev/null 2>&1; then",
            "    echo 'uv cannot be had here (pip install uv failed, or its binary does not run): installing with pip'",
            "    fleet_uv=",
            f"  else fleet_uv={venv}/bin/uv; fi",
            f"else fleet_uv={venv}/bin/uv; fi",
            'if [ -n "${fleet_uv:-}" ]; then',
            # the system's certificates: UV_SYSTEM_CERTS where this uv has it (it calls UV_NATIVE_TLS deprecated)
            '  if fleet_trusted "$fleet_uv" pip install --help 2>/dev/null | grep -q -- --system-certs; then export UV_SYSTEM_CERTS=1; '
            "else export UV_NATIVE_TLS=1; fi",
            f"  echo {q('uv pip install ' + ' '.join(self.p['packages']))} " + '"($(fleet_trusted "$fleet_uv" --version))"',
            f"  (cd / && fleet_retry 'uv pip install' fleet_trusted \"$fleet_uv\" pip install {' '.join(uv_args)} {reqs})",
            "else"] + ["  " + line for line in pip] + ["fi"]
        return "\n".join(lines)
