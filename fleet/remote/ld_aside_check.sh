#!/usr/bin/env bash
# fleet/remote/ld_aside_check.sh (fleet/resources/ld_aside.py check): after ld_aside_find.sh, what the apply would
# do, one sentence a finding, then the diff after the line $diff_mark; exits $needs_change when there is any.
# Set before this: aside (where files and lines go), marker (the comment put before a line), diff_mark, needs_change.
# shellcheck disable=SC2154  # R, found, stale, aside, marker, diff_mark, needs_change: set before this
if [ -z "$found" ] && [ -z "$stale" ]; then echo 'no harmful loader entry'; exit 0; fi
diff=''
while IFS=$'\t' read -r op f n text; do
  [ -n "$op" ] || continue
  if [ "$op" = move ]; then echo "moves ${f#"$R"} aside to $aside${f#"$R"}"
    diff+="--- ${f#"$R"} (now)"$'\n'"+++ $aside${f#"$R"} (moved aside)"$'\n'"$(sed 's/^/-/' "$f")"$'\n'
  elif [ "$op" = drop ]; then echo "takes ${f#"$R"}:$n ($text) out, kept in $aside/etc/ld.so.preload"
    diff+="--- ${f#"$R"} (now)"$'\n'"+++ ${f#"$R"} (after)"$'\n'"@@ -$n @@"$'\n'"-$text"$'\n'
  else echo "comments out ${f#"$R"}:$n ($text)"
    diff+="--- ${f#"$R"} (now)"$'\n'"+++ ${f#"$R"} (after)"$'\n'"@@ -$n +$n @@"$'\n'"-$text"$'\n'"+$marker$text"$'\n'
  fi
done <<< "$found"
[ -n "$stale" ] && [ -z "$found" ] && echo "rebuilds the ld cache: it still lists $stale (ldconfig)"
printf '\n%s\n%s' "$diff_mark" "$diff"
exit "$needs_change"
