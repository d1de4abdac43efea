#!/usr/bin/env bash
# The "fleet tree ID" a device transcript names (tests/data/h200-device/lib.sh, bench/h200/families.sh): a digest of
# the fleet/ and roles/ files that ran. The device's copy of the tree carries a stale .git, so `git log` there named
# another commit; this names the content. Which commit ran: compare with this script's answer for it.
#   bash bench/h200/tree_id.sh [COMMIT]     (default: the working tree)
set -euo pipefail
cd "$(dirname "$0")/../.."
id() { find fleet roles -type f \( -name '*.py' -o -name '*.sh' -o -name '*.yaml' -o -name '*.yml' -o -name '*.j2' \
  -o -name '*.json' \) ! -path '*/__pycache__/*' 2>/dev/null | LC_ALL=C sort | xargs sha256sum | sha256sum | cut -c1-12; }
if [ $# -eq 0 ]; then id; exit; fi
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
git archive "$1" fleet roles | tar -x -C "$tmp"
cd "$tmp" && id
