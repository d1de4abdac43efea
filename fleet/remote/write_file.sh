#!/usr/bin/env bash
# fleet/remote/write_file.sh (fleet/shell.py write_file_script): replace a file atomically: a temp file in the same
# directory (so the rename never crosses a file system), synced, then renamed over the old one; a crash leaves the
# old file or the new, never half. Set before this: fleet_wf_path (the path), fleet_wf_data (the content, base64),
# fleet_wf_mode (octal) and fleet_wf_owner (empty: the writer's). Run in a subshell of its own (set -e, a trap).
# shellcheck disable=SC2154  # fleet_wf_*: set by the line before this
set -e
d=$(dirname -- "$fleet_wf_path"); mkdir -p -- "$d"
tmp=$(mktemp "$d/.fleet-write.XXXXXX")
trap 'rm -f -- "$tmp"' EXIT
printf %s "$fleet_wf_data" | base64 -d > "$tmp"
chmod "$fleet_wf_mode" "$tmp"
[ -z "$fleet_wf_owner" ] || chown -- "$fleet_wf_owner" "$tmp"
sync -- "$tmp" 2>/dev/null || sync
mv -f -- "$tmp" "$fleet_wf_path"
trap - EXIT
