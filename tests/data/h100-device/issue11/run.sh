# Issue 11 on the lent H100, over real SSH (the carried sshd), run from .device/fleet-src (this branch).
# Writes transcript.txt and JSON records under $OUT. Every step prints its command and its exit status.
set -u
export PYTHONUNBUFFERED=1
T=$OUT/transcript.txt
source ../../.gpu/env.sh > "$OUT/setup.txt" 2>&1 || { cat "$OUT/setup.txt"; exit 1; }
INV=$GPU_INV; FACTS=/tmp/gpu-inventory/facts/h100.json
mkdir -p /tmp/issue11 && cp tests/data/h100-device/issue11/*.py tests/data/h100-device/issue11/*.sh /tmp/issue11/
step() { printf '\n$ %s\n' "$*" >> "$T"; "$@" >> "$T" 2>&1; printf '[exit %s]\n' "$?" >> "$T"; }
note() { printf '\n# %s\n' "$*" >> "$T"; }
F() { local sub=$1; shift; python3 -m fleet "$sub" --accept-new-host-keys "$@"; }
note "machine: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader); $(head -1 /proc/driver/nvidia/version)"
note "compat: $(ls /usr/local/cuda-13.0/compat/ | tr '\n' ' ')"
python3 -c 'from fleet.facts import probe; print(probe.script({"python_env": "/opt/torch/.venv"}))' > /tmp/issue11/probe.sh
bash /tmp/issue11/probe.sh > "$OUT/probe-framed.txt" 2>&1
note "root's ~/.bashrc as found: $(wc -l < ~/.bashrc) lines; early return: $(grep -nE 'case \$- in|PS1.*return|\$- .*return' ~/.bashrc | head -2 | tr '\n' ' ')"
note "TRAPS: compat export in /etc/rp_environment sourced at the TOP of ~/.bashrc; pod_setup.sh sourced at its END"
printf 'export LD_LIBRARY_PATH=/usr/local/cuda-13.0/compat:$LD_LIBRARY_PATH\n' >> /etc/rp_environment
sed -i '1i source /etc/rp_environment' ~/.bashrc
printf 'export LD_LIBRARY_PATH=/usr/local/cuda-13.0/compat${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}\n' > /root/pod_setup.sh
echo 'source /root/pod_setup.sh' >> ~/.bashrc
step F run "$INV" -- bash /tmp/issue11/shells.sh
step F apply "$INV" --check
step F apply "$INV"
step F run "$INV" -- bash /tmp/issue11/shells.sh
note "a second apply (JSON in apply-noop.json)"
F apply "$INV" --json > "$OUT/apply-noop.json" 2>> "$T"; printf '[exit %s]\n' "$?" >> "$T"
cp "$FACTS" "$OUT/facts-after-apply.json"
note "BUSY: a job holding 58 GB and running matmuls"
setsid /opt/torch/.venv/bin/python /tmp/issue11/job.py > /tmp/issue11/job.log 2>&1 &
for _ in $(seq 120); do nvidia-smi --query-compute-apps=pid --format=csv,noheader | grep -q . && break; sleep 0.5; done
step nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv
step nvidia-smi --query-gpu=memory.used,memory.total,utilization.gpu --format=csv
step F apply "$INV"
cp "$FACTS" "$OUT/facts-busy.json"
pkill -f /tmp/issue11/job.py
for _ in $(seq 120); do nvidia-smi --query-compute-apps=pid --format=csv,noheader | grep -q . || break; sleep 0.5; done
note "IDLE again: a no-op apply runs the perf smoke"
step F apply "$INV"
cp "$FACTS" "$OUT/facts-idle.json"
note "timings"
step bash -c "time python3 -m fleet facts $INV >/dev/null"
step bash -c "time python3 -m fleet apply $INV >/dev/null"
