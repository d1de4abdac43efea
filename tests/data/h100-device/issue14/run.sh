# Issue 14 (and 11, again, on the merged code) on the lent H100 over real SSH (the carried sshd).
# Run from the project root on the device machine; writes transcript.txt, timings.json and records under $OUT.
set -u
export PYTHONUNBUFFERED=1
T=$OUT/transcript.txt
source .gpu/env.sh > "$OUT/setup.txt" 2>&1 || { cat "$OUT/setup.txt"; exit 1; }
INV=$GPU_INV; FACTS=/tmp/gpu-inventory/facts/h100.json
mkdir -p /tmp/issue14 /tmp/issue11 && cp tests/data/h100-device/issue11/*.py tests/data/h100-device/issue11/*.sh /tmp/issue11/
step() { printf '\n$ %s\n' "$*" >> "$T"; "$@" >> "$T" 2>&1; printf '[exit %s]\n' "$?" >> "$T"; }
note() { printf '\n# %s\n' "$*" >> "$T"; }
F() { local sub=$1; shift; python3 -m fleet "$sub" --accept-new-host-keys "$@"; }
note "machine: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader); $(git log -1 --format='fleet %h %s' 2>/dev/null)"
note "TRAPS (issue 11): compat export in /etc/rp_environment sourced at the TOP of ~/.bashrc; pod_setup.sh at its END"
printf 'export LD_LIBRARY_PATH=/usr/local/cuda-13.0/compat:$LD_LIBRARY_PATH\n' >> /etc/rp_environment
sed -i '1i source /etc/rp_environment' ~/.bashrc
printf 'export LD_LIBRARY_PATH=/usr/local/cuda-13.0/compat${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}\n' > /root/pod_setup.sh
echo 'source /root/pod_setup.sh' >> ~/.bashrc
step F run "$INV" -- bash /tmp/issue11/shells.sh
step F apply "$INV"
step F run "$INV" -- bash /tmp/issue11/shells.sh
cp "$FACTS" "$OUT/facts-after-apply.json"
note "no-op applies: verify reused (fingerprint), 1 remote command"
F apply "$INV" --json > "$OUT/apply-noop.json" 2>> "$T"; printf '[exit %s]\n' "$?" >> "$T"
note "timings: medians of 5 runs each, in one process tree (fleet run -- true is the floor)"
python3 tests/data/h100-device/issue14/timings.py "$INV" > "$OUT/timings.json" 2>> "$T"; cat "$OUT/timings.json" >> "$T"
note "BUSY: a job holding 58 GB; a no-op apply must do no GPU work (verify reused, no new compute process)"
setsid /opt/torch/.venv/bin/python /tmp/issue11/job.py > /tmp/issue14/job.log 2>&1 &
for _ in $(seq 120); do nvidia-smi --query-compute-apps=pid --format=csv,noheader | grep -q . && break; sleep 0.5; done
( while :; do nvidia-smi --query-compute-apps=pid,process_name --format=csv,noheader; sleep 0.2; done ) > /tmp/issue14/apps.log 2>&1 &
watch=$!
step F apply "$INV"
kill $watch
note "compute processes seen during that apply: $(sort -u /tmp/issue14/apps.log | tr '\n' ';')"
cp "$FACTS" "$OUT/facts-busy-noop.json"
note "fleet verify while busy: functional checks run, perf skipped"
step F verify "$INV"
cp "$FACTS" "$OUT/facts-busy-verify.json"
pkill -f /tmp/issue11/job.py
