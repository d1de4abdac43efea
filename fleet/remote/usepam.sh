#!/usr/bin/env bash
# fleet/remote/usepam.sh (fleet/facts/loader.py USEPAM): $u, sshd's first UsePAM line (sshd_config(5): the first
# value wins; its drop-ins first). The caller reads $u.
# shellcheck disable=SC2034
u=; for f in /etc/ssh/sshd_config.d/*.conf /etc/ssh/sshd_config; do [ -r "$f" ] || continue
  while IFS= read -r l || [ -n "$l" ]; do [[ ${l,,} =~ ^[[:space:]]*usepam[[:space:]] ]] && { u=$l; break 2; }; done < "$f"
done
