"""fleet's eight roles (roles/*/role.yaml) as one pyinfra deploy: the same packages, files, block, git clone,
pip installs and the same verify script, from the same sources (the lab mirror, through host data that
bench/compare.py writes from the lab inventory). Decisions are fleet's rules (shared/DOMAIN.md), computed
here from one probe command.

    pyinfra -y inventory.py deploy.py      # inventory.py written by bench/compare.py
"""

import json
import re
import shlex
from io import StringIO
from pathlib import Path

from pyinfra import host
from pyinfra.facts.server import Command, Home
from pyinfra.operations import apt, files, git, pip, server

COMMON = Path(host.data.peers_common)
CUDA_PATH = "/usr/local/cuda-13.0"
PYTHON_ENV = "/opt/fleet/venv"
CUTLASS_DIR = "/opt/cutlass"
LOCK = "-o DPkg::Lock::Timeout=600"   # a fresh VM's unattended-upgrades holds dpkg for minutes: wait
SUDO = bool(host.data.get("needs_sudo"))
# NVIDIA forward compatibility: only "NVIDIA Data Center GPUs" (docs.nvidia.com/deploy/cuda-compatibility).
DATA_CENTER = re.compile(r"\b(GH200|GB200|GB300|B300|B200|B100|H200|H100|H800|H20|A100|A800|A40|A30|A16|A10G?|A2|"
                         r"L40S?|L20|L4|T4|V100|P100|P40|P4)\b|\bTesla\b")


def version(text):
    return tuple(int(x) for x in text.split("."))


probe = json.loads(host.get_fact(Command, command=(COMMON / "probe.sh").read_text()))
# cuda-compat: kernel driver older than CUDA 13.0's minimum 580.65.06 (CUDA 13.0 release notes, table 3), a
# data-center GPU, never a Jetson (error 803 on Thor).
compat = (not probe["tegra"] and bool(probe["driver"]) and version(probe["driver"]) < (580, 65, 6)
          and bool(DATA_CENTER.search(probe["gpu"])))
jetson_torch = host.data.get("torch_source", "official") == "jetson"
site = f"{PYTHON_ENV}/lib/python{probe['python']}/site-packages"
target = "sbsa" if probe["arch"] == "aarch64" else "x86_64"
ld_library_path = ([f"{CUDA_PATH}/compat"] if compat else []) + [f"{CUDA_PATH}/targets/{target}-linux/lib"] \
    + ([f"{site}/nvpl/lib", f"{site}/nvidia/cu13/lib"] if jetson_torch else [])

# --- cuda_toolkit and cuda_compat: NVIDIA's keyring .deb, then the package, held
held = set((host.get_fact(Command, command="apt-mark showhold") or "").split()) if (compat or not probe["cuda_present"]) else set()
for wanted, package in ((not probe["cuda_present"], "cuda-toolkit-13-0"), (compat, "cuda-compat-13-0")):
    if not wanted:
        continue
    # pyinfra reads a URL .deb's version only after downloading it (a temp file, at run time), so a URL
    # reinstalls on every run; the mirror is a path on the host, which pyinfra can check beforehand.
    keyring = apt.deb(name="cuda-keyring", src=host.data.cuda_keyring_url.removeprefix("file://"), _sudo=SUDO)
    apt.update(name="read NVIDIA's repository", _if=keyring.did_change, _sudo=SUDO)
    apt.packages(name=package, packages=[package], no_recommends=True, extra_install_args=LOCK, _sudo=SUDO)
    if package not in held:
        server.shell(name=f"hold {package}", commands=[f"apt-mark hold {package}"], _sudo=SUDO)

# --- nvpl and cudss: wheels into the torch environment (Jetson-index torch links them undeclared)
venv = {"venv": True, "python": "python3"}
if jetson_torch:
    # pyinfra compares names as `pip freeze` prints them (the stand-in wheels' metadata uses underscores).
    for name, packages in (("NVPL wheels", ["nvpl_blas", "nvpl_lapack"]), ("cuDSS wheel", ["nvidia_cudss_cu13"])):
        pip.packages(name=name, packages=packages, virtualenv=PYTHON_ENV, virtualenv_kwargs=venv,
                     extra_install_args=f"--index-url {host.data.pip_index_url}", _sudo=SUDO)

# --- env_hooks
files.template(name="/etc/fleet/env.sh", src=str(COMMON / "env.sh.j2"), dest="/etc/fleet/env.sh", mode="644",
               create_remote_dir=True, peer_tool="pyinfra", cuda_path=CUDA_PATH, python_env=PYTHON_ENV,
               cutlass_dir=CUTLASS_DIR, ld_library_path=ld_library_path, _sudo=SUDO)
files.block(name="hook at the top of ~/.bashrc", path=host.get_fact(Home) + "/.bashrc",
            content="[ -r /etc/fleet/env.sh ] && . /etc/fleet/env.sh", marker="# {mark} fleet env_hooks",
            before=True, after=True)   # both True: prepend (pyinfra's files.block docs)
# the guards fleet's env_hooks adds: last word in interactive (end of ~/.bashrc) and login (end of ~/.profile)
# shells; neither before nor after: the block goes at the end of the file (pyinfra's files.block docs). Markers
# without regex characters: pyinfra matches them as regexes, and '(end)' never matched itself (a change every run)
files.block(name="guard at the end of ~/.bashrc", path=host.get_fact(Home) + "/.bashrc",
            content="[ -r /etc/fleet/env.sh ] && . /etc/fleet/env.sh", marker="# {mark} peer guard bashrc")
files.block(name="guard at the end of ~/.profile", path=host.get_fact(Home) + "/.profile",
            content="[ -r /etc/fleet/env.sh ] && . /etc/fleet/env.sh", marker="# {mark} peer guard profile")
files.put(name="hook for login shells", dest="/etc/profile.d/fleet.sh", mode="644", _sudo=SUDO,
          src=StringIO("# Managed by fleet (env_hooks).\n[ -r /etc/fleet/env.sh ] && . /etc/fleet/env.sh\n"))

# --- cutlass
git.repo(name="CUTLASS at v4.3.0", src=host.data.cutlass_repo, dest=CUTLASS_DIR, branch="v4.3.0", pull=False,
         _sudo=SUDO)

# --- torch
# pinned with the local version: pyinfra compares `pip freeze`'s 2.11.0+cu130 with the pin as text.
pip.packages(name="torch 2.11.0", packages=["torch==2.11.0+cu130"], virtualenv=PYTHON_ENV, virtualenv_kwargs=venv,
             extra_install_args=host.data.torch_pip_args,
             _sudo=SUDO)

# --- verify: fleet's own verify program (fleet/remote/verify/, as fleet ships it) with the config the verify role renders, run as the user in the
# non-interactive shell `ssh host cmd` gets, so the env hook applies.
files.put(name="verify script", src=host.data.verify_py, dest="/var/lib/fleet/verify.py", create_remote_dir=True,
          _sudo=SUDO)
server.shell(name="torch works on this GPU",
             commands=[f"{PYTHON_ENV}/bin/python /var/lib/fleet/verify.py {shlex.quote(host.data.verify_config)}"])
