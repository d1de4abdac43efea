#!/usr/bin/env bash
# The lent H200 after a structural change (issue 44: the remote side as files, the probe as one stage, sinks):
# does the tree still converge in one command with the same verdicts?
#
#   run from the project root on the H200, with .gpu carried (../shared/tools/real-gpu-prep.sh .gpu):
#   bash bench/h200/accept.sh
#
# 1. converge (`fleet apply`); 2. the no-op (in state, one command) and its bytes (lib.sh record_bytes);
# 3. every kind of shell asked by a plain SSH client (ask_kinds.py); 4. a forced `fleet verify` and `fleet health`;
# 5. the no-op once more, and `fleet facts`; 6. the shell files shipped, linted there too (bash -n).
# Writes transcript.txt and setup.txt under $OUT; tests/unit/test_h200_records.py loads them from
# tests/data/h200-device/accept/.
set -u
source tests/data/h200-device/lib.sh
note "first apply (converge)"
step F apply "$INV"
note "second apply: nothing to change, one command"
step F apply "$INV"
record_bytes
ask "converged"
step F verify "$INV"
step F health "$INV" --set 'expect_gpus=1x H200'
note "after verify and health: still one command"
step F apply "$INV"
step F facts "$INV"
note "bash -n over every fleet/remote/*.sh on the host's bash ($(bash --version | head -1))"
for f in fleet/remote/*.sh; do bash -n "$f" || echo "bash -n failed: $f"; done >> "$T" 2>&1
note "done"
