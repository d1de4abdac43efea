#!/usr/bin/env bash
# fleet/remote/select_python.sh (fleet/facts/software.py select_python): sets $py, the roles' virtual environment's
# python ($env_dir, set before this) when it exists and is safe to run as root (trust.sh's fleet_judge: it, every
# parent and what it reads at start, site-packages and its .pth files, owned by root or the user and writable by no
# one else; $env_untrusted says why not), else python3. Run it as `cd / && "$py" -I ...` (no module from the working
# directory, no user site). Needs trust.sh defined.
# shellcheck disable=SC2034,SC2154  # env_dir: set before; py, env_exists, env_untrusted: read by what follows
env_untrusted=
if [ -x "$env_dir/bin/python" ]; then env_untrusted=$(fleet_judge "$env_dir/bin/python"); fi
if [ -x "$env_dir/bin/python" ] && [ -z "$env_untrusted" ]; then py=$env_dir/bin/python; env_exists=yes
else py=$(command -v python3 || true); env_exists=no; fi
