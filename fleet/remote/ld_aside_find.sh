#!/usr/bin/env bash
# fleet/remote/ld_aside_find.sh (fleet/resources/ld_aside.py): the loader's files that mention a harmful directory.
# Set before this: R (the sysroot, empty for /), pat (an ERE for one harmful directory), keep (files never touched,
# one a line) and find_awk (fleet/remote/ld_aside_find.awk). Sets: $found, one finding a line (move<TAB>file, or
# comment|drop<TAB>file<TAB>line number<TAB>text), $stale (a harmful directory the ld cache still lists) and $lc.
# A conf line is one directory (a trailing comment allowed); a preload line holds paths separated by blanks or
# colons, and is harmful when one of them is a file in a harmful directory (find_awk).
# R, pat, keep, find_awk: set by the line before this; found, stale: read by ld_aside_check.sh or ld_aside_apply.sh
# shellcheck disable=SC2154,SC2034
fs=()
for f in "$R"/etc/ld.so.conf "$R"/etc/ld.so.conf.d/*.conf "$R"/etc/ld.so.preload; do
  [ -f "$f" ] || continue
  case $'\n'"$keep"$'\n' in *$'\n'"${f#"$R"}"$'\n'*) continue;; esac
  fs+=("$f")
done
found=''; [ ${#fs[@]} -gt 0 ] && found=$(awk -v pat="$pat" "$find_awk" "${fs[@]}")
# the cache: an entry in a harmful directory that no file lists any more (ldconfig not run since)
# (hash finds it on PATH as `command -v` would, without the subshell $(...) costs)
lc=ldconfig; hash ldconfig 2>/dev/null || lc=/sbin/ldconfig
stale=$("$lc" -p 2>/dev/null | awk -v pat="$pat" '/ => /{p=$NF; sub(/\/[^\/]+$/, "", p); if (p ~ ("^" pat "/?$")) {print p; exit}}')
