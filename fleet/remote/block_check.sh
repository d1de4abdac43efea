#!/usr/bin/env bash
# fleet/remote/block_check.sh: the shared functions "block" (fleet/shell.py FUNCTIONS), defined once per script for
# every block task (fleet/resources/block.py): ~/.bashrc, ~/.profile, /etc/profile... each had its own copy of these
# lines and of the awk program. The definition sets before this file: fleet_awk_block (block.awk: `fleet_do=keep`
# prints the complete blocks, strip and replace: see block.py), fleet_awk_block_top_run (block_top_run.awk: the
# leading run of marked blocks) and fleet_block_early (the ~/.bashrc's early return, an ERE: block.py EARLY_RETURN).
# A unit test holds 10 (NEEDS_CHANGE) and @@diff@@ (DIFF_MARK) equal to fleet.resources.base's.
# shellcheck disable=SC2154  # fleet_awk_block, fleet_awk_block_top_run, fleet_block_early: set by the lines before

# fleet_block_placed FILE POSITION: true where the block ($b ... $e) stands where POSITION wants it (CRLF files too).
# top: anywhere in the leading run of marked blocks (two roles' top blocks); last: the last non-blank line ends it;
# before_return: just above the early return, or first where there is none; bottom: anywhere.
fleet_block_placed() {
  local r
  case $2 in
    top) tr -d '\r' < "$1" | awk "$fleet_awk_block_top_run" | grep -qxF -- "$b" ;;
    last) [ "$(tr -d '\r' < "$1" | grep -v '^[[:space:]]*$' | tail -n 1)" = "$e" ] ;;
    before_return)
      r=$(grep -nE -m1 "$fleet_block_early" "$1" | cut -d: -f1)
      if [ -n "$r" ]; then [ "$r" -gt 1 ] && [ "$(sed -n "$((r-1))p" "$1" | tr -d '\r')" = "$e" ]
      else head -n 1 "$1" | tr -d '\r' | grep -qxF -- "$b"; fi ;;
    *) tr -d '\r' < "$1" | grep -qxF -- "$b" ;;
  esac
}

# fleet_block_check FILE POSITION [ONLY_IF_EXISTS]: the check of one block task, with b and e (its markers, exported
# for the awk) and want (the wanted block) set: 0 where the block is there and placed (or ONLY_IF_EXISTS and FILE is
# absent), else 10 with why and, after @@diff@@, the block the file holds now.
fleet_block_check() {
  local have
  if [ -n "${3-}" ] && [ ! -e "$1" ]; then echo 'file absent: nothing reads it, so no block'; return 0; fi
  if [ ! -f "$1" ]; then echo 'file absent'; return 10; fi
  have=$(fleet_do=keep awk "$fleet_awk_block" "$1"; echo x)
  have=${have%x}
  if [ "$have" = "$want" ] && fleet_block_placed "$1" "$2"; then echo 'block present and placed'; return 0; fi
  if [ -z "$have" ]; then echo 'block absent'; else echo 'block differs or is misplaced'; fi
  printf '\n@@diff@@\n'; printf '%s' "$have"
  return 10
}
