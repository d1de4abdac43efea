#!/usr/bin/env bash
# fleet/remote/program_install.sh (fleet/programs.py INSTALL): fleet_install FILE SHA256 < TEXT
# (fleet_ship_FILE calls it), where the run may write: /var/lib/fleet/bin/FILE, root's, 0755, whole or not at all (a
# temp file in that directory, its digest checked, then renamed); says @@fleet:program-installed FILE
# (fleet.programs.INSTALLED).
fleet_install() {
  local s=(); [ "$(id -u)" = 0 ] || s=(sudo -n)
  # shellcheck disable=SC2016  # the single-quoted program is sh's, with its own $1 $2 (fleet-install FILE SHA256)
  if "${s[@]}" sh -c 'umask 022; b=/var/lib/fleet/bin
    mkdir -p /var/lib/fleet && install -d -m 0755 -o 0 -g 0 "$b" || exit 1
    t=$(mktemp "$b/.install.XXXXXX") || exit 1
    if cat > "$t" && h=$(sha256sum < "$t") && [ "${h%% *}" = "$2" ] && chmod 0755 "$t" && chown 0:0 "$t" \
      && mv -f "$t" "$b/$1"; then exit 0; fi
    rm -f "$t"; exit 1' fleet-install "$1" "$2" && fleet_bin_ok "$1" "$2"; then
    printf -v "fleet_at_${1//-/_}" %s "/var/lib/fleet/bin/$1"; printf '@@fleet:program-installed %s\n' "$1"; return 0
  fi
  echo "fleet: could not install /var/lib/fleet/bin/$1 (it needs root, or sudo without a password)"; return 1
}
