#!/usr/bin/env bash
# fleet/remote/ld_aside_apply.sh (fleet/resources/ld_aside.py apply): after ld_aside_find.sh (under set -e), each
# finding taken out of effect, reversibly: a file moved aside under $aside (a numbered name where one is there
# already), a preload line taken out and kept in $aside/etc/ld.so.preload (drop_awk), a conf line commented out with
# $marker (comment_awk); then ldconfig. Set before this: aside, marker, drop_awk, comment_awk.
# shellcheck disable=SC2154  # R, pat, found, lc, aside, marker, drop_awk, comment_awk: set before this
while IFS=$'\t' read -r op f n text; do
  [ -n "$op" ] || continue
  if [ "$op" = move ]; then
    d="$R$aside${f#"$R"}"; mkdir -p -- "$(dirname -- "$d")"
    i=1; while [ -e "$d" ]; do d="${d%.~*~}.~$i~"; i=$((i+1)); done
    mv -- "$f" "$d"; echo "moved ${f#"$R"} aside to ${d#"$R"}"
  else
    t=$(mktemp "$(dirname -- "$f")/.fleet-aside.XXXXXX")
    if [ "$op" = drop ]; then
      k="$R$aside/etc/ld.so.preload"; mkdir -p -- "$(dirname -- "$k")"
      printf '%s\n' "$text" >> "$k"
      awk -v n="$n" -v pat="$pat" "$drop_awk" "$f" > "$t"
    else
      awk -v n="$n" -v m="$marker" "$comment_awk" "$f" > "$t"
    fi
    chmod --reference="$f" "$t"; mv -f -- "$t" "$f"
    if [ "$op" = drop ]; then echo "took ${f#"$R"}:$n ($text) out, kept in ${k#"$R"}"
    else echo "commented out ${f#"$R"}:$n ($text)"; fi
  fi
# the last line first: a preload line that keeps other entries adds a line below itself
done < <(printf '%s\n' "$found" | sort -t $'\t' -k3,3nr)
"$lc" && echo 'ran ldconfig'
