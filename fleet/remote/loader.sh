#!/usr/bin/env bash
# fleet/remote/loader.sh (fleet/facts/loader.py command): the loader source after the bare kind: the ld cache's
# libcuda entries, the ld.so.conf lines, /etc/ld.so.preload, sshd's UsePAM.
# (hash finds it on PATH as `command -v` would, without the subshell $(...) costs)
lc=ldconfig; hash ldconfig 2>/dev/null || lc=/sbin/ldconfig
# the ld cache's libcuda entries, in the cache's order (the loader takes the first of its arch)
# (grep first: read takes one system call a byte of a pipe, and the whole cache is ~1000 lines)
"$lc" -p 2>/dev/null | grep -F 'libcuda.so' | while IFS= read -r l; do case $l in *libcuda.so*' => '*) p=${l##* => }; printf '@@cache %s\t%s\t%s\n' "${l%% (*}" "$p" "$(readlink -f -- "$p" 2>/dev/null)";; esac; done
# every directory line of /etc/ld.so.conf and the files it includes (comments and includes left out)
for f in /etc/ld.so.conf /etc/ld.so.conf.d/*.conf; do [ -r "$f" ] || continue; n=0
  while IFS= read -r l || [ -n "$l" ]; do n=$((n+1)); l=${l%%#*}; l=${l#"${l%%[![:space:]]*}"}; l=${l%"${l##*[![:space:]]}"}
    case $l in ''|include*) continue;; esac; printf '@@conf %s\t%s\t%s\n' "$f" "$n" "$l"
  done < "$f"
done
if [ -r /etc/ld.so.preload ]; then n=0; while IFS= read -r l || [ -n "$l" ]; do n=$((n+1)); case $l in ''|'#'*) continue;; esac; printf '@@preload %s\t%s\n' "$n" "$l"; done < /etc/ld.so.preload; fi
