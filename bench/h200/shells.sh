#!/usr/bin/env bash
# Issue 35 on the lent H200: what the user types reaches what verify proved, and a hidden GPU fails naming its line.
#
#   run from the project root on the H200, with .gpu carried (../shared/tools/real-gpu-prep.sh .gpu):
#   bash bench/h200/shells.sh          # writes $OUT/shells-transcript.txt and $OUT/shells-answers.json
#
# 1. `fleet apply` (the H200 as an SSH host, python_env /opt/torch/.venv), every kind asked ("first"); where that venv
#    has no pip, verify says so with its fix (ensurepip), which is then run by hand; applied again ("converged");
# 2. phase "p": of the family, a distribution beside torch taken out of the venv alone (its dist-info moved aside, as
#    `pip uninstall` would remove it: the libraries stay, torch keeps working): `fleet apply` must run verify again
#    and say the packages changed; put back;
#    phase "a": the issue's traps set by hand: CUDA_VISIBLE_DEVICES=1 at the top of ~/.bashrc (copied from an 8-GPU
#    box); another toolkit's nvcc first with its CUDA_HOME at the end of ~/.bashrc (a 12.4 nvcc laid out as the
#    toolkit lays it out, under /opt/fleet-bench); then `fleet apply`, then every kind asked by a plain SSH client;
# 3. phase "b": the .bashrc line out; CUDA_VISIBLE_DEVICES emptied in /etc/profile.d (the issue's, login shells) and,
#    of the family, a UUID of another box at the top of /etc/bash.bashrc (`ssh host cmd` and interactive shells);
#    `fleet apply`, every kind asked;
# 4. phase "clean": every trap undone, `fleet apply` (the machine stays warm and converged for the next run), asked.
# tests/unit/test_real_h200_every_kind_of_shell.py loads the two files from tests/data/h200-device/shells/.
set -uo pipefail
OUT=${OUT:-/tmp/shells-out}
mkdir -p "$OUT"
T=$OUT/shells-transcript.txt
A=$OUT/shells-answers.jsonl
: > "$T"; : > "$A"
[ -n "${GPU_INV:-}" ] || source .gpu/env.sh >/dev/null 2>&1
# the H200 as real-gpu-env.sh serves it; BENCH_* override (a lab host, to try this script before the device run)
KEY=${BENCH_SSH_KEY:-/tmp/fleet-sshd/client_ed25519}
SSH=(python3 bench/h200/ssh1.py "${BENCH_SSH_ADDR:-127.0.0.1}" "${BENCH_SSH_PORT:-2222}" root "$KEY")   # no ssh client there
OLD=/opt/fleet-bench/cuda-12.4
VENV=${BENCH_VENV:-/opt/torch/.venv}

say() { printf '%s\n' "$*" | tee -a "$T"; }
# One kind's answer, asked inside it: what python3, pip, nvcc are, CUDA_HOME, CUDA_VISIBLE_DEVICES and torch's CUDA.
ASK='printf "python3=%s pip=%s nvcc=%s cuda_home=%s cvd=%s\n" "$(command -v python3)" "$(command -v pip)" "$(readlink -f "$(command -v nvcc)")" "${CUDA_HOME-}" "${CUDA_VISIBLE_DEVICES-@unset}"; nvcc --version 2>/dev/null | grep -m1 release; python3 -c "import torch; print(\"torch\", torch.__file__, torch.cuda.is_available(), torch.cuda.device_count())" 2>&1 | tail -n 1'
# A terminal's session as sshd makes it: an empty environment but what every session gets before any startup file
# (the bundled sshd's SetEnv: NVLink multicast off), then the kind's own startup files.
FRESH='env -i HOME=/root TERM=dumb PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1'
q() { printf '%q' "$1"; }
ask_all() {   # phase: each kind asked by a plain SSH client; one JSON line per kind into $A
  local phase=$1 kind cmd out
  for kind in ssh interactive login bare; do
    case $kind in
      ssh) cmd=$ASK ;;
      interactive) cmd="$FRESH setsid -w bash -i -c $(q "$ASK") </dev/null 2>/dev/null" ;;
      login) cmd="$FRESH setsid -w bash -l -c $(q "$ASK") </dev/null 2>/dev/null" ;;
      bare) cmd="env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root $VENV/bin/python -c $(q 'import torch; print("torch", torch.__file__, torch.cuda.is_available(), torch.cuda.device_count())') 2>&1 | tail -n 1" ;;
    esac
    out=$(timeout 120 "${SSH[@]}" "$cmd" 2>&1)
    say "--- $phase / $kind: ssh host $(printf '%q' "$cmd" | cut -c1-160)..."
    say "$out"
    python3 - "$phase" "$kind" "$out" >> "$A" <<'PY'
import json, sys
phase, kind, out = sys.argv[1:4]
row = {"phase": phase, "kind": kind, "raw": out}
for line in out.splitlines():
    if line.startswith("python3="):
        row.update(dict(p.split("=", 1) for p in line.split(" ")))
    elif line.startswith("torch "):
        parts = line.split()
        row["torch"] = {"file": parts[1], "cuda": parts[2] == "True", "count": int(parts[3])}
    elif "release" in line:
        row["nvcc_version"] = line.strip()
print(json.dumps(row))
PY
  done
}
apply() {   # phase: `fleet apply`, its exit and what it said of verify
  local phase=$1 code
  say "=== $phase: fleet apply"
  fleet apply "$GPU_INV" --accept-new-host-keys --json > "$OUT/apply.json" 2> "$OUT/apply.err"; code=$?
  python3 - "$phase" "$code" "$OUT/apply.json" "${BENCH_FACTS:-$(dirname "$GPU_INV")/facts}" >> "$A" <<'PY'
import glob, json, sys
phase, code, path, facts_dir = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
try:
    doc = json.load(open(path))
except Exception as exc:
    doc = {"error": str(exc)}
name, host = next(iter((doc.get("hosts") or {}).items()), (None, {}))
verify = [t for t in host.get("tasks", []) if t.get("role") == "verify"]
try:   # the host's verify record as fleet keeps it: why it ran (or was reused), its checks
    record = json.load(open(f"{facts_dir}/{name}.json"))
    kept = record.get("verify") or {}
    shells = record.get("shells") or {}
except Exception:
    kept, shells = {}, {}
print(json.dumps({"phase": phase, "apply_exit": code, "verify": host.get("verify"),
                  "verify_reason": verify[0].get("reason") if verify else None,
                  "record_reason": kept.get("reason"), "checks": kept.get("checks"),
                  "facts_shells": {k: {v: shells[k].get(v) for v in ("CUDA_VISIBLE_DEVICES", "CUDA_HOME", "set_by",
                                                                      "commands", "pythons")}
                                   for k in shells if isinstance(shells.get(k), dict)},
                  "env_hooks": [t.get("reason") for t in host.get("tasks", []) if t.get("role") == "env_hooks"]}))
PY
  say "exit $code; verify: $(tail -n 1 "$A" | python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); print(d["verify"], "--", d["record_reason"], "--", (d["verify_reason"] or "")[:3000])')"
  rm -f "$OUT/apply.json" "$OUT/apply.err"
}
onhost() { say "+ $1"; "${SSH[@]}" "$1" 2>&1 | tee -a "$T"; }

say "# issue 35 on the H200, $(date -u +%FT%TZ)"
apply first
ask_all first
# a venv made without pip's scripts (uv's): the first apply writes pip's entry point (env_hooks), asked here
onhost "ls -l $VENV/bin/pip; head -n 1 $VENV/bin/pip; pip --version"
apply converged
ask_all converged

# --- phase p: a distribution beside torch taken out of the venv, alone (nothing else for apply to change)
DIST=$("${SSH[@]}" "cd $VENV/lib/python3*/site-packages && ls -d nvidia_cublas*.dist-info nvidia_*.dist-info 2>/dev/null | head -n 1")
say "+ moving $DIST out of the venv (as pip uninstall removes it)"
[ -n "$DIST" ] && "${SSH[@]}" "cd $VENV/lib/python3*/site-packages && mv $DIST /root/$DIST.fleet-bench"
apply p
[ -n "$DIST" ] && "${SSH[@]}" "cd $VENV/lib/python3*/site-packages && mv /root/$DIST.fleet-bench $DIST"
say "+ $DIST put back"

# --- phase a: the issue's .bashrc traps
onhost "cp /root/.bashrc /root/.bashrc.fleet-bench && sed -i '1i export CUDA_VISIBLE_DEVICES=1' /root/.bashrc"
onhost "mkdir -p $OLD/bin && printf '#!/bin/sh\necho \"nvcc: NVIDIA (R) Cuda compiler driver\"\necho \"Cuda compilation tools, release 12.4, V12.4.131\"\necho \"Build cuda_12.4.r12.4\"\n' > $OLD/bin/nvcc && chmod +x $OLD/bin/nvcc && printf '{\n \"cuda\" : {\n  \"version\" : \"12.4.1\"\n }\n}\n' > $OLD/version.json"
onhost "printf 'export PATH=$OLD/bin:\$PATH\nexport CUDA_HOME=$OLD\n' >> /root/.bashrc"
ask_all a-before
apply a
ask_all a-after

# --- phase b: the issue's /etc/profile.d line (login shells) and a UUID of another box in /etc/bash.bashrc
onhost "sed -i '1{/^export CUDA_VISIBLE_DEVICES=1\$/d}' /root/.bashrc && head -n 2 /root/.bashrc"
onhost "printf '# copied from an image\nexport CUDA_VISIBLE_DEVICES=\n' > /etc/profile.d/zz-fleet-bench-visible.sh"
onhost "cp /etc/bash.bashrc /root/bash.bashrc.fleet-bench && sed -i '1i export CUDA_VISIBLE_DEVICES=GPU-00000000-dead-beef-0000-000000000000' /etc/bash.bashrc"
ask_all b-before
apply b
ask_all b-after

# --- clean: every trap undone; the machine stays converged
onhost "mv /root/.bashrc.fleet-bench /root/.bashrc; rm -f /etc/profile.d/zz-fleet-bench-visible.sh; mv /root/bash.bashrc.fleet-bench /etc/bash.bashrc; rm -rf /opt/fleet-bench"
apply clean
ask_all clean
mv "$A" "$OUT/shells-answers.json"   # JSON lines
say "# done: $OUT/shells-transcript.txt, $OUT/shells-answers.json"
