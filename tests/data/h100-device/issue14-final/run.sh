# Issue 14 on the merged code (stages, one shell module, the faster probe) on the lent H100 over real SSH
# (the carried sshd). Run from the project root on the device machine; writes under $OUT.
set -u
export PYTHONUNBUFFERED=1
T=$OUT/transcript.txt
source .gpu/env.sh > "$OUT/setup.txt" 2>&1 || { cat "$OUT/setup.txt"; exit 1; }
INV=$GPU_INV; FACTS=/tmp/gpu-inventory/facts/h100.json
step() { printf '\n$ %s\n' "$*" >> "$T"; "$@" >> "$T" 2>&1; printf '[exit %s]\n' "$?" >> "$T"; }
note() { printf '\n# %s\n' "$*" >> "$T"; }
F() { python3 -m fleet "$@"; }
note "machine: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader); $(git log -1 --format='fleet %h %s' 2>/dev/null)"
step F apply "$INV" --accept-new-host-keys
note "second apply: must change nothing"
F apply "$INV" --json > "$OUT/apply-noop.json" 2>> "$T"; printf '[exit %s]\n' "$?" >> "$T"
cp "$FACTS" "$OUT/facts-after-apply.json"
note "timings: medians of 5 runs each, in one process tree (fleet run -- true is the floor)"
python3 tests/data/h100-device/issue14/timings.py "$INV" > "$OUT/timings.json" 2>> "$T"; cat "$OUT/timings.json" >> "$T"
note "processes the no-op's one remote command starts (strace -f on the carried sshd's session: execve count)"
if command -v strace >/dev/null; then
  pid=$(pgrep -f 'sshd.*2222' | head -1)
  timeout 120 strace -f -qq -e trace=execve -p "$pid" -o /tmp/noop.strace & st=$!; sleep 1
  F apply "$INV" > /dev/null 2>&1; sleep 1; kill $st 2>/dev/null; wait $st 2>/dev/null
  note "execve in the no-op: $(grep -c 'execve(' /tmp/noop.strace)"
  grep -o 'execve("[^"]*"' /tmp/noop.strace | sort | uniq -c | sort -rn | head -25 >> "$T"
else
  note "no strace on this machine"
fi
note "fleet verify: verify runs again, whatever its fingerprint says"
step F verify "$INV"
cp "$FACTS" "$OUT/facts-after-verify.json"
