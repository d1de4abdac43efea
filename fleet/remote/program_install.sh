#!/usr/bin/env bash
# fleet/remote/program_install.sh (fleet/programs.py INSTALL): fleet_install FILE SHA256 < TEXT
# (fleet_ship_FILE calls it), where the run may write: /var/lib/fleet/bin/FILE, root's, 0755, whole or not at all (a
# temp file in that directory, its digest checked, then renamed); says @@fleet:program-installed FILE
# (fleet.programs.INSTALLED). Where it cannot (a user who is not root and has no sudo without a password, working in a
# venv of their own), it says so and runs the text from a private copy, as --check does (program_stage.sh): the copy's
# digest checked and judged by fleet_trust, removed when the section ends; the next command carries the text again.
fleet_copies=
fleet_install() {
  local s=() t h; [ "$(id -u)" = 0 ] || s=(sudo -n)
  t=$(mktemp "${TMPDIR:-/tmp}/fleet-program.XXXXXX") || { echo "fleet: no temporary file to install $1 from"; return 1; }
  cat > "$t"
  # shellcheck disable=SC2016  # the single-quoted program is sh's, with its own $1 $2 $3 (fleet-install FILE SHA256 TEXT)
  if "${s[@]}" sh -c 'umask 022; b=/var/lib/fleet/bin
    mkdir -p /var/lib/fleet && install -d -m 0755 -o 0 -g 0 "$b" || exit 1
    t=$(mktemp "$b/.install.XXXXXX") || exit 1
    if cat < "$3" > "$t" && h=$(sha256sum < "$t") && [ "${h%% *}" = "$2" ] && chmod 0755 "$t" && chown 0:0 "$t" \
      && mv -f "$t" "$b/$1"; then exit 0; fi
    rm -f "$t"; exit 1' fleet-install "$1" "$2" "$t" 2>/dev/null && fleet_bin_ok "$1" "$2"; then
    rm -f -- "$t"
    printf -v "fleet_at_${1//-/_}" %s "/var/lib/fleet/bin/$1"; printf '@@fleet:program-installed %s\n' "$1"; return 0
  fi
  echo "fleet: could not install /var/lib/fleet/bin/$1 (it needs root, or sudo without a password): running it from a private copy"
  fleet_copies="$fleet_copies $t"
  # shellcheck disable=SC2064  # the copies' names now: removed when the section ends
  trap "rm -f -- $fleet_copies" EXIT
  if h=$(sha256sum < "$t") && [ "${h%% *}" = "$2" ] && chmod 0500 "$t" && [ -z "$(fleet_trust "$t" 2>&1)" ]; then
    printf -v "fleet_at_${1//-/_}" %s "$t"; return 0
  fi
  echo "fleet: could not run $1 from a private copy ($t)"; return 1
}
