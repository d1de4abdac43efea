# The session's merged main on the lent H200 over real SSH (the carried sshd), from the project root with .gpu
# carried: the "after" figures of issues 34, 35 and 36 in one lease.
#   1. converge; the no-op's bytes; 9 interleaved rounds of the no-op apply, facts and run -- true (issue 34);
#      every kind of shell asked by a plain SSH client (ask_kinds.py) on the converged host (issue 35);
#   2. bench/h200/shells.sh: issue 35's traps and two of the family, apply, every kind asked (2 files);
#   3. bench/h200/health.sh: the real GPU's health verdict, bandwidths against floors, the cost (3 files).
# Writes transcript.txt, setup.txt, timings.txt and the five files of the two scripts under $OUT.
set -u
source tests/data/h200-device/lib.sh
note "first apply"
step F apply "$INV"
note "second apply: nothing to change, one command"
step F apply "$INV"
step F apply "$INV" --check --detailed-exitcode
record_bytes
rounds 9
ask "converged, no trap"
step F facts "$INV"
note "bench/h200/shells.sh (issue 35)"
export -f fleet; export GPU_INV
bash bench/h200/shells.sh >> "$T" 2>&1; printf '[shells.sh exit %s]\n' "$?" >> "$T"
note "bench/h200/health.sh (issue 36): its env.sh starts the carried sshd again"
kill "$(cat /tmp/fleet-sshd/sshd.pid)" 2>/dev/null; sleep 0.5
bash bench/h200/health.sh >> "$T" 2>&1; printf '[health.sh exit %s]\n' "$?" >> "$T"
grep -E "^median" "$T"
tail -40 "$T"
