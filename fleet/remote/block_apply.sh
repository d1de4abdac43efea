#!/usr/bin/env bash
# fleet/remote/block_apply.sh (fleet/resources/block.py apply, under set -e): the block $want (between the markers $b
# and $e, exported for block.awk) written into the file $f where $position wants it, the file replaced whole (a temp
# file beside it, then renamed). Top: the block first, then the file without it. Bottom: an existing block is replaced
# where it stands, a new one is appended. before_return: just above the ~/.bashrc's early return ($early, an ERE),
# else first. last: the file without it, then the block. A last line without a newline keeps lacking it when it stays
# last. Set before this: b, e, want, f, position, mode (for a file it creates), only_if_exists and written (what it
# says when done); the shared functions "block" (fleet/shell.py FUNCTIONS) give fleet_awk_block (block.awk) and
# fleet_block_early (the early return).
# shellcheck disable=SC2154  # set by the lines before this
fleet_block() { fleet_do=$1 awk "$fleet_awk_block" "$f"; }
if [ -n "$only_if_exists" ] && [ ! -e "$f" ]; then echo 'file absent: left absent'; exit 0; fi
# a dotfiles symlink stays a symlink: edit the file it points to
if [ -L "$f" ]; then f=$(readlink -f -- "$f"); fi
mkdir -p -- "$(dirname -- "$f")"
if [ -f "$f" ]; then new=''; else new=1; fi
tmp=$(mktemp "$(dirname -- "$f")/.fleet-block.XXXXXX"); wantf=$(mktemp)
trap 'rm -f -- "$tmp" "$wantf"' EXIT; export wantf; printf '%s' "$want" > "$wantf"
user_last=''
{ if [ -n "$new" ]; then printf '%s' "$want"
  else
    case $position in
      top) printf '%s' "$want"; fleet_block strip; user_last=1 ;;
      last) fleet_block strip; printf '%s' "$want" ;;
      before_return)
        s=$(mktemp); fleet_block strip > "$s"
        r=$(grep -nE -m1 "$fleet_block_early" "$s" | cut -d: -f1)
        if [ -n "$r" ]; then head -n "$((r-1))" "$s"; printf '%s' "$want"; tail -n +"$r" "$s"
        else printf '%s' "$want"; cat "$s"; fi; rm -f -- "$s"; user_last=1 ;;
      *) if [ -n "$(fleet_block keep)" ]; then fleet_block replace; user_last=1; else fleet_block strip; printf '%s' "$want"; fi ;;
    esac
  fi; } > "$tmp"
if [ -z "$new" ] && [ -n "$user_last" ] && [ -n "$(tail -c 1 -- "$f")" ] && [ "$(tail -n 1 -- "$f")" != "$e" ]; then truncate -s -1 -- "$tmp"; fi
if [ -n "$new" ]; then chmod "$mode" "$tmp"; else
  chmod --reference="$f" "$tmp"; chown --reference="$f" "$tmp" 2>/dev/null || true; fi
sync -- "$tmp" 2>/dev/null || sync
mv -f -- "$tmp" "$f"; rm -f -- "$wantf"; trap - EXIT
echo "$written"
