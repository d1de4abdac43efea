#!/usr/bin/env bash
# Issue 50, item 1: a pod's time from its SSH line to "verify passed" with nothing to download, before and after,
# on the lent H200 (torch in the image's /opt/torch/.venv, the CUDA toolkit in the image, CUTLASS from a local
# repository), split by bootstrap's phases.
#
#   on the H200, from the project root, with .gpu carried (../shared/tools/real-gpu-prep.sh .gpu):
#   bash bench/h200/bootstrap_time.sh [ROUNDS] [BEFORE]       (default 3 rounds; BEFORE: a commit, default 7a5130c;
#                                                              "-": this tree alone)
#
# Each round, for each tree (BEFORE, exported with `git archive` to /tmp/fleet-before, then this tree), interleaved:
# fleet's own state on the host taken away (reset_pod: /var/lib/fleet, /opt/cutlass, /etc/fleet, the hooks' blocks
# and files, the pip entry point fleet wrote; what a provider's image has stays), a fresh HOME (no inventory, no
# facts, no known host), then `fleet bootstrap LINE --json`, once with verify's timed measurements (verify_perf on,
# the default) and once without (--set verify_perf=false): the difference is verify's GPU work, the rest fleet's.
# One JSON line per run in $OUT/rounds.jsonl (tree, perf, exit, wall, phases, remote commands, changed, verify
# passed); transcript.txt as the other H200 runs. tests/unit/test_bootstrap_time_records.py reads rounds.jsonl from
# tests/data/h200-device/bootstrap-time/ (copy $OUT there).
#
# The lab runs the same script (no .gpu): FLEET_BOOTSTRAP_LINE, FLEET_BOOTSTRAP_SETS and FLEET_BOOTSTRAP_PY set, and
# FLEET_BOOTSTRAP_PERF=off (the stand-in torch has no perf to time), FLEET_BOOTSTRAP_WARMUP=1 (one bootstrap first, not counted: the lab's pod starts without torch and the toolkit), as
# `bench/bootstrap_time.py --script` does (tests/data/lab-bootstrap-time/).
set -u
rounds=${1:-3}
before=${2:-7a5130c}
if [ -z "${FLEET_BOOTSTRAP_LINE:-}" ]; then
  source tests/data/h200-device/lib.sh
  FLEET_BOOTSTRAP_LINE="ssh root@127.0.0.1 -p 2222 -i /tmp/fleet-sshd/client_ed25519"
  FLEET_BOOTSTRAP_SETS="--set python_env=/opt/torch/.venv --set cutlass_repo=/tmp/cutlass-standin"
  FLEET_BOOTSTRAP_PY=python3
  RESET_HERE=1
else
  T=$OUT/transcript.txt
  note() { printf '\n# %s\n' "$*" >> "$T"; }
fi
# fleet's own state on the pod, nothing else: through the pod's SSH line on the lab; on the lent H200 the pod is this
# very machine (its sshd on 127.0.0.1:2222, root) and it has no ssh client, so the same lines run here
RESET='rm -rf /var/lib/fleet /opt/cutlass /etc/fleet /etc/profile.d/fleet.sh
     for f in ~/.bashrc ~/.profile ~/.bash_profile ~/.bash_login; do
       [ -f "$f" ] && sed -i "/^# BEGIN fleet env_hooks/,/^# END fleet env_hooks/d" "$f"; done
     for p in /opt/torch/.venv/bin/pip /workspace/venv/bin/pip /opt/fleet/venv/bin/pip; do
       grep -qs "written by fleet" "$p" && rm -f "$p"; done; true'
reset_pod() {
  if [ -n "${RESET_HERE:-}" ]; then HOME=/root bash -c "$RESET"; return; fi
  # shellcheck disable=SC2086
  ${FLEET_BOOTSTRAP_LINE} -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR \
    "$RESET"
}
trees="before after"
if [ "$before" = - ]; then trees=after; note "this tree alone; $rounds rounds"
else
  rm -rf /tmp/fleet-before && mkdir -p /tmp/fleet-before
  if [ -d .before/fleet ]; then   # a machine without the repository's history: `git archive BEFORE fleet roles` unpacked
    cp -r .before/fleet .before/roles /tmp/fleet-before/    # into .before/ beforehand, carried with the tree
    note "before: $before (carried in .before/); after: this tree; $rounds rounds"
  else
    git archive "$before" fleet roles | tar -x -C /tmp/fleet-before || { echo "cannot export $before" >> "$T"; exit 1; }
    note "before: $before ($(git log -1 --format='%h %s' "$before" | cut -c1-70)); after: this tree; $rounds rounds"
  fi
fi
one() {   # $1 tree (before|after) $2 round $3 perf (on|off)
  local src=$PWD sets=${FLEET_BOOTSTRAP_SETS:-} home
  [ "$1" = before ] && src=/tmp/fleet-before
  [ "$3" = off ] && sets="$sets --set verify_perf=false"
  reset_pod
  home=$(mktemp -d /tmp/fleet-bootstrap-home.XXXXXX)
  local started ended code
  started=$(date +%s.%N)
  # from the tree's own directory: `python -m` puts the working directory first on sys.path
  # shellcheck disable=SC2086
  (cd "$src" && HOME=$home XDG_CONFIG_HOME=$home/.config XDG_STATE_HOME=$home/.state PYTHONPATH="$src:${PYTHONPATH:-}" \
    "$FLEET_BOOTSTRAP_PY" -m fleet bootstrap "$FLEET_BOOTSTRAP_LINE" $sets --json > "$home/out.json" 2> "$home/err.txt")
  code=$?
  ended=$(date +%s.%N)
  "$FLEET_BOOTSTRAP_PY" - "$1" "$2" "$3" "$code" "$started" "$ended" "$home/out.json" >> "$OUT/rounds.jsonl" <<'PY'
import json, sys
tree, rnd, perf, code, t0, t1, path = sys.argv[1:]
try:
    doc = json.load(open(path))
except ValueError:
    doc = {}
(name, host), = (doc.get("hosts") or {"?": {}}).items()
stats = (doc.get("stats") or {}).get(name) or {}
boot = host.get("bootstrap") or {}
print(json.dumps({"tree": tree, "round": int(rnd), "perf": perf, "exit": int(code),
                  "wall": round(float(t1) - float(t0), 3), "phases": boot.get("phases"),
                  "remote_commands": stats.get("remote_commands"), "changed": host.get("changed"),
                  "verify_passed": (boot.get("verify") or {}).get("passed"), "error": boot.get("error")}))
PY
  tail -1 "$OUT/rounds.jsonl" >> "$T"
  rm -rf "$home"
}
if [ "${FLEET_BOOTSTRAP_WARMUP:-}" = 1 ]; then   # the downloads, once: not counted
  one after 0 off; note "warm-up (downloads): $(tail -1 "$OUT/rounds.jsonl")"; : > "$OUT/rounds.jsonl"
fi
for r in $(seq "$rounds"); do
  for perf in ${FLEET_BOOTSTRAP_PERF:-on off}; do
    for tree in $trees; do one "$tree" "$r" "$perf"; done
  done
done
"$FLEET_BOOTSTRAP_PY" - "$OUT/rounds.jsonl" >> "$T" <<'PY'
import json, statistics, sys
runs = [json.loads(line) for line in open(sys.argv[1])]
for tree in ("before", "after"):
    for perf in ("on", "off"):
        mine = [r for r in runs if r["tree"] == tree and r["perf"] == perf and r["phases"]]
        if not mine:
            continue
        med = lambda key: statistics.median(r["phases"].get(key, 0) for r in mine)
        print(f"median of {len(mine)}: {tree} perf {perf}: wall {statistics.median(r['wall'] for r in mine):.2f} s; "
              + " ".join(f"{k} {med(k):.2f}" for k in ("connect", "health", "facts", "apply", "verify"))
              + f"; commands {statistics.median(r['remote_commands'] or 0 for r in mine):g}")
PY
note "done"
