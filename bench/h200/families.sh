#!/usr/bin/env bash
# Issue 45 item 2 on the lent H200 (one GPU is enough; on x2/x4 the same): every variable of the families a GPU job
# reads, per kind of shell, with its line; set by hand after a converged apply, then apply --check, verify and facts,
# then every kind asked by a plain SSH client.
#
#   run from the project root on the H200, with .gpu carried (../shared/tools/real-gpu-prep.sh .gpu):
#   OUT=/tmp/families-out bash bench/h200/families.sh      # writes families-transcript.txt, families-answers.jsonl
#
# NVLink multicast stays off: .gpu/env.sh and the bundled sshd's SetEnv set NCCL_NVLS_ENABLE=0 and its kin in every
# process (and /etc/nccl.conf); nothing here unsets them, and the transcript records what each kind gets of them.
# 1. `fleet apply` (converge; python_env /opt/torch/.venv); phase "clean": each kind asked, `fleet facts`,
#    `fleet apply --check --detailed-exitcode` (a reused verify, exit 0);
# 2. phase "traps": by hand, NCCL_P2P_DISABLE=1 at the TOP of ~/.bashrc (every kind), CUDA_LAUNCH_BLOCKING=1 in
#    ~/.profile (login), OMP_NUM_THREADS=1 in /etc/profile.d (login; a note); of each family, two no issue names:
#    PYTORCH_NO_CUDA_MEMORY_CACHING=1 and CUDNN_LOGINFO_DBG=1 at the end of ~/.bashrc (interactive), NCCL_ALGO=Ring
#    and TORCH_NCCL_BLOCKING_WAIT=1 in /etc/bash.bashrc (`ssh host cmd` and interactive), TRITON_CACHE_DIR and
#    KMP_AFFINITY in /etc/profile.d (recorded, judged by no row); then `fleet apply --check --detailed-exitcode`,
#    `fleet verify`, `fleet facts`, each kind asked;
# 3. phase "undone": every trap taken out, `fleet apply`, `fleet verify`, each kind asked (the machine stays converged).
# 4. phase "gaps" (issue 45's gaps, appended: phases 1-3 are as before): by hand, in ~/.bashrc after its interactive
#    guard `ulimit -n 256` and `unset CUDA_MODULE_LOADING` (which its top line exports as EAGER), and ~/.nccl.conf with
#    NCCL_ALGO=Ring and NCCL_P2P_LEVEL=LOC (NCCL's user file); the bundled sshd's SetEnv line and /etc/nccl.conf are
#    read as they are (NCCL_NVLS_ENABLE=0 and its kin: deliberate, never a fault; nothing here changes or unsets
#    them); then `fleet verify`, `fleet facts`, each kind asked (with its `ulimit -n`); phase "gaps-undone": taken
#    out, `fleet verify`, each kind asked.
# A test that loads the two files: bench/h200/test_families_transcript.py (move it to tests/unit/ with the data under
# tests/data/h200-device/families/).
set -uo pipefail
OUT=${OUT:-/tmp/families-out}
mkdir -p "$OUT"
T=$OUT/families-transcript.txt
A=$OUT/families-answers.jsonl
: > "$T"; : > "$A"
[ -n "${GPU_INV:-}" ] || source .gpu/env.sh >/dev/null 2>&1
KEY=${BENCH_SSH_KEY:-/tmp/fleet-sshd/client_ed25519}
SSH=(python3 bench/h200/ssh1.py "${BENCH_SSH_ADDR:-127.0.0.1}" "${BENCH_SSH_PORT:-2222}" root "$KEY")   # no ssh client there
FACTS=${BENCH_FACTS:-/tmp/gpu-inventory/facts/h100.json}
HOSTNAME_IN_INV=${BENCH_HOST:-h100}
PROFILE_D=/etc/profile.d/zz-fleet-bench-families.sh
NAMES="NCCL_P2P_DISABLE CUDA_LAUNCH_BLOCKING OMP_NUM_THREADS PYTORCH_NO_CUDA_MEMORY_CACHING CUDNN_LOGINFO_DBG NCCL_ALGO TORCH_NCCL_BLOCKING_WAIT TRITON_CACHE_DIR KMP_AFFINITY NCCL_NVLS_ENABLE TORCH_SYMM_MEM_DISABLE_MULTICAST NVSHMEM_DISABLE_NVLS"
ASK="for v in $NAMES; do printf 'var %s=%s\\n' \"\$v\" \"\${!v-@unset}\"; done"
# A terminal's session as sshd makes it: an empty environment but what every session gets before any startup file
# (the bundled sshd's SetEnv: NVLink multicast off), then the kind's own startup files.
FRESH='env -i HOME=/root TERM=dumb PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1'

say() { printf '%s\n' "$*" | tee -a "$T"; }
F() { local sub=$1; shift; python3 -m fleet "$sub" --accept-new-host-keys "$@"; }
step() { say "\$ fleet $*"; F "$@" >> "$T" 2>&1; local rc=$?; say "[exit $rc]"; return "$rc"; }
q() { printf '%q' "$1"; }
row() { python3 -c 'import json, sys; print(json.dumps(dict(zip(sys.argv[1::2], sys.argv[2::2]))))' "$@" >> "$A"; }
ask_all() {   # phase [ask]: each kind asked by a plain SSH client: what it exports of the names
  local phase=$1 kind cmd out ASK=${2:-$ASK}
  for kind in ssh interactive login; do
    case $kind in
      ssh) cmd=$ASK ;;
      interactive) cmd="$FRESH setsid -w bash -i -c $(q "$ASK") </dev/null 2>/dev/null" ;;
      login) cmd="$FRESH setsid -w bash -l -c $(q "$ASK") </dev/null 2>/dev/null" ;;
    esac
    out=$(timeout 120 "${SSH[@]}" "$cmd" 2>&1)
    say "--- $phase / $kind (plain ssh)"; say "$out"
    row phase "$phase" what asked kind "$kind" raw "$out"
  done
}
facts_rows() {   # phase: fleet facts, then each kind's families and their lines from the record
  step facts "$GPU_INV"
  python3 - "$1" "$FACTS" >> "$A" <<'PY'
import json, sys
phase, path = sys.argv[1:3]
shells = json.load(open(path)).get("shells") or {}
for kind in ("noninteractive", "interactive", "login", "bare"):
    s = shells.get(kind) or {}
    line = lambda by: {k: f"{v.get('file')}:{v.get('line')}" for k, v in (by or {}).items()}   # noqa: E731
    print(json.dumps({"phase": phase, "what": "facts", "kind": kind, "families": s.get("families"),
                      "set_by": line(s.get("set_by")), "unset_by": line(s.get("unset_by")),
                      "limits": s.get("limits"), "limits_set_by": line(s.get("limits_set_by")),
                      "nccl_conf": s.get("nccl_conf"), "session": shells.get("etc_environment")}))
PY
}
verify_row() {   # phase, exit: the host's own verify record's job_variables checks
  python3 - "$1" "$2" >> "$A" <<'PY'
import json, sys
r = json.load(open("/var/lib/fleet/verify.json"))
print(json.dumps({"phase": sys.argv[1], "what": "verify", "exit": int(sys.argv[2]), "passed": r.get("passed"),
                  "checks": [c for c in r.get("checks", []) if c["name"].startswith("job_variables_")],
                  "failed": [c["name"] for c in r.get("checks", []) if not c.get("passed")]}))
PY
}
check_row() {   # phase: apply --check --detailed-exitcode, its exit and whether it said "(reused)"
  local out rc
  say "\$ fleet apply $GPU_INV --check --detailed-exitcode"
  out=$(F apply "$GPU_INV" --check --detailed-exitcode 2>&1); rc=$?
  say "$out"; say "[exit $rc]"
  row phase "$1" what check exit "$rc" reused "$(grep -c '(reused)' <<< "$out")" says "$(grep -o 'NCCL_P2P_DISABLE[^;]*' <<< "$out" | head -1)"
}

say "# machine: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1); $(nvidia-smi -L | wc -l) GPU(s); fleet tree $(find fleet roles -type f \( -name '*.py' -o -name '*.sh' -o -name '*.yaml' -o -name '*.yml' -o -name '*.j2' -o -name '*.json' \) ! -path '*/__pycache__/*' 2>/dev/null | LC_ALL=C sort | xargs sha256sum | sha256sum | cut -c1-12)"
say "# this script's own environment: NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE-unset}; /etc/nccl.conf: $(tr '\n' ' ' < /etc/nccl.conf 2>/dev/null)"
step apply "$GPU_INV"
ask_all clean
facts_rows clean
check_row clean

say "# traps set by hand"
cp -p /root/.bashrc /root/.bashrc.fam; cp -p /root/.profile /root/.profile.fam; cp -p /etc/bash.bashrc /etc/bash.bashrc.fam
sed -i '1i export NCCL_P2P_DISABLE=1' /root/.bashrc
printf '%s\n' 'export PYTORCH_NO_CUDA_MEMORY_CACHING=1' 'export CUDNN_LOGINFO_DBG=1' >> /root/.bashrc
printf '%s\n' 'export CUDA_LAUNCH_BLOCKING=1' >> /root/.profile
sed -i '1i export NCCL_ALGO=Ring TORCH_NCCL_BLOCKING_WAIT=1' /etc/bash.bashrc
printf '%s\n' 'export OMP_NUM_THREADS=1' 'export TRITON_CACHE_DIR=/tmp/triton-cache' 'export KMP_AFFINITY=granularity=fine' > "$PROFILE_D"
say "$(grep -n -e NCCL_ -e CUDA_LAUNCH -e PYTORCH_NO -e CUDNN_ -e TORCH_NCCL -e OMP_ -e TRITON_ -e KMP_ /root/.bashrc /root/.profile /etc/bash.bashrc "$PROFILE_D")"
ask_all traps
check_row traps
step verify "$GPU_INV"; verify_row traps "$(tail -1 "$T" | tr -dc 0-9)"
facts_rows traps

say "# every trap undone"
mv -f /root/.bashrc.fam /root/.bashrc; mv -f /root/.profile.fam /root/.profile; mv -f /etc/bash.bashrc.fam /etc/bash.bashrc
rm -f "$PROFILE_D"
step apply "$GPU_INV"
step verify "$GPU_INV"; verify_row undone "$(tail -1 "$T" | tr -dc 0-9)"
ask_all undone

say "# gaps: sshd's SetEnv and /etc/nccl.conf as they are; by hand, ulimit and unset in ~/.bashrc, a ~/.nccl.conf"
GASK="$ASK; printf 'var CUDA_MODULE_LOADING=%s\\n' \"\${CUDA_MODULE_LOADING-@unset}\"; printf 'lim nofile=%s\\n' \"\$(ulimit -n)\""
say "$(grep -n -i '^[[:space:]]*setenv' /tmp/fleet-sshd/sshd_config 2>&1)"; say "$(grep -n . /etc/nccl.conf 2>&1)"
cp -p /root/.bashrc /root/.bashrc.gaps
# after the interactive guard: the first line that returns (and its `esac`), else the end
n=$(awk '/return/ && !n { n = NR } n && NR == n + 1 && /^[[:space:]]*esac/ { n = NR } END { print n + 0 }' /root/.bashrc)
[ "$n" -gt 0 ] || n=$(wc -l < /root/.bashrc)
sed -i "${n}a ulimit -n 256\nunset CUDA_MODULE_LOADING" /root/.bashrc
sed -i '1i export CUDA_MODULE_LOADING=EAGER' /root/.bashrc
printf '%s\n' '# fleet bench' 'NCCL_ALGO=Ring' 'NCCL_P2P_LEVEL=LOC' > /root/.nccl.conf
say "$(grep -n -e ulimit -e CUDA_MODULE_LOADING /root/.bashrc; grep -n . /root/.nccl.conf)"
row phase gaps what lines setenv "$(grep -n -i '^[[:space:]]*setenv' /tmp/fleet-sshd/sshd_config)" \
  nccl "$(grep -n . /etc/nccl.conf)" bashrc "$(grep -n -e ulimit -e CUDA_MODULE_LOADING /root/.bashrc)"
ask_all gaps "$GASK"
step verify "$GPU_INV"; verify_row gaps "$(tail -1 "$T" | tr -dc 0-9)"
facts_rows gaps
mv -f /root/.bashrc.gaps /root/.bashrc; rm -f /root/.nccl.conf
step verify "$GPU_INV"; verify_row gaps-undone "$(tail -1 "$T" | tr -dc 0-9)"
ask_all gaps-undone "$GASK"
say "# done (host entry $HOSTNAME_IN_INV)"
