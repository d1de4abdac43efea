#!/usr/bin/env bash
# Set up this machine for fleet's lab and tests: the Debian packages the lab's hosts and stand-ins need,
# and a virtual environment .venv with fleet and its test extra. Idempotent; run as root on Debian/Ubuntu.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(openssh-server openssh-client sudo git gcc libc6-dev dpkg-dev gnupg python3 python3-venv
          ca-certificates curl xz-utils iproute2 util-linux procps
          chromium fonts-dejavu-core     # chromium: the HTML facts report is tested headless (screenshot, DOM)
          shellcheck                     # the programs fleet ships are linted (tests/unit/test_shell_lint.py)
          tmux                           # a terminal emulator: the live display is tested on its screen
          rsync                          # the README's copy to a pod is followed on the lab (test_fleet_ssh_lab.py)
          postgresql)                    # the history store's tests run on a real PostgreSQL (a temp cluster)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "setup: these Debian packages are missing: ${missing[*]}; run this script as root (sudo)" >&2
    exit 2
  fi
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get -o DPkg::Lock::Timeout=300 update -q
  apt-get -o DPkg::Lock::Timeout=300 install -y -q --no-install-recommends "${missing[@]}"
fi
# The lab runs its own sshd per host; the distribution's service is not needed.

python=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$python" -m venv .venv
fi
.venv/bin/python -m pip install -q --disable-pip-version-check --upgrade pip
.venv/bin/python -m pip install -q --disable-pip-version-check -e '.[test]'
echo "setup: ready ($(.venv/bin/fleet --version))"
