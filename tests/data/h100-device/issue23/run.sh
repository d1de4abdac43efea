# Issue 23 on the lent H100 over real SSH (the carried sshd), from the project root with .gpu carried.
# Four traps of one family, each set by hand on a host whose kernel driver (580.159.04) is NEWER than the
# installed cuda-compat (580.95.05), so compat must reach no process; after each, `fleet apply`, then every kind
# of process is asked by a plain SSH client (ask.py, paramiko) what it loads. Writes transcript.txt and records.
# .old (optional, carried): fleet as it was before issue 23 (git archive e86dd01 fleet roles), run on trap 4 first.
set -u
export PYTHONUNBUFFERED=1
T=$OUT/transcript.txt
source .gpu/env.sh > "$OUT/setup.txt" 2>&1 || { cat "$OUT/setup.txt"; exit 1; }
INV=$GPU_INV; FACTS=/tmp/gpu-inventory/facts/h100.json
mkdir -p /tmp/issue23 && cp tests/data/h100-device/issue23/ask.py tests/data/h100-device/issue11/chk.py /tmp/issue23/
step() { printf '\n$ %s\n' "$*" >> "$T"; "$@" >> "$T" 2>&1; printf '[exit %s]\n' "$?" >> "$T"; }
note() { printf '\n# %s\n' "$*" >> "$T"; }
F() { local sub=$1; shift; python3 -m fleet "$sub" --accept-new-host-keys "$@"; }
FOLD() { local sub=$1; shift; (cd .old && PYTHONPATH=/tmp/fleet-site python3 -m fleet "$sub" --accept-new-host-keys "$@"); }  # -m puts the cwd first on sys.path
ask() { step env PYTHONPATH=/tmp/fleet-site python3 /tmp/issue23/ask.py 127.0.0.1 2222 root /tmp/fleet-sshd/client_ed25519; }
C=/usr/local/cuda-13.0/compat
note "machine: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader); $(head -1 /proc/driver/nvidia/version)"
note "compat: $(ls $C | tr '\n' ' ')"
note "BASELINE: no trap; converge once"
step F apply "$INV"
ask
note "TRAP 1 (the issue's): ~/.bash_profile puts compat first; bash login shells never read ~/.profile"
printf 'export LD_LIBRARY_PATH=%s${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}\n' "$C" > ~/.bash_profile
ask
step F apply "$INV" --check
step F apply "$INV"
ask
note "TRAP 2 (the issue's): the compat directory in the ld cache, as an image built on an old-driver host carries it"
echo "$C" > /etc/ld.so.conf.d/000-cuda-compat.conf && ldconfig
step bash -c "ldconfig -p | grep 'libcuda.so.1 '"
ask
step F apply "$INV" --check
step F apply "$INV"
step bash -c "ldconfig -p | grep 'libcuda.so.1 '; ls /etc/ld.so.conf.d/"
ask
note "left from trap 2, undone by hand where apply did not (so that each trap below is seen alone)"
step bash -c "ls /etc/ld.so.conf.d/; rm -fv /etc/ld.so.conf.d/000-cuda-compat.conf; ldconfig"
note "TRAP 3 (ours): no ~/.bash_profile, a ~/.bash_login that puts compat first (bash reads it before ~/.profile)"
rm -f ~/.bash_profile
printf 'export LD_LIBRARY_PATH=%s${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}\n' "$C" > ~/.bash_login
ask
step F apply "$INV"
ask
rm -f ~/.bash_login
note "TRAP 4 (ours): /etc/ld.so.preload names the compat libcuda (every process, whatever its environment)"
echo "$C/libcuda.so.1" > /etc/ld.so.preload
ask
if [ -d .old/fleet ]; then
  note "fleet as it was before issue 23 (.old, carried): what it printed and left on this trap"
  step FOLD apply "$INV"
  ask
fi
step F apply "$INV" --check
step F apply "$INV"
step bash -c "cat /etc/ld.so.preload; ls /var/lib/fleet/aside 2>&1"
ask
if [ -s /etc/ld.so.preload ] && grep -qv '^#' /etc/ld.so.preload; then note "undone by hand"; : > /etc/ld.so.preload; fi
note "TRAP 5 (ours): /etc/profile.d/cuda-compat.sh (as some images ship it) puts compat first in every login shell"
printf 'export LD_LIBRARY_PATH=%s${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}\n' "$C" > /etc/profile.d/cuda-compat.sh
ask
step F apply "$INV"
ask
rm -f /etc/profile.d/cuda-compat.sh
note "a second apply changes nothing (JSON in apply-noop.json)"
F apply "$INV" --json > "$OUT/apply-noop.json" 2>> "$T"; printf '[exit %s]\n' "$?" >> "$T"
cp "$FACTS" "$OUT/facts-after.json"
step F facts "$INV"

note "PULL MODE: the issue's ~/.bash_profile trap and the ld cache trap, then the script fleet script --from-facts writes, run as a pod's start command runs it (no startup file, no fleet on the host)"
printf 'export LD_LIBRARY_PATH=%s${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}\n' "$C" > ~/.bash_profile
echo "$C" > /etc/ld.so.conf.d/000-cuda-compat.conf && ldconfig
ask
step F script "$INV" --from-facts "$FACTS" -o /tmp/issue23/pod.sh
step env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root bash /tmp/issue23/pod.sh
ask
step env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root bash /tmp/issue23/pod.sh
