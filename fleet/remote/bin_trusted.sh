#!/usr/bin/env bash
# fleet/remote/bin_trusted.sh (fleet/programs.py TRUSTED, after trust.sh): fleet_bin_trusted PATH, for a
# helper program under /var/lib/fleet/bin (fleet.programs.BIN; a unit test holds the two equal).
# A helper program is judged right before it runs by the one trust mechanism (trust.sh: owner, mode, ACLs, root's
# group, every parent), and must be root's own besides: it runs as root wherever fleet has root. Root owns it: what
# fleet_trust passed is owned by root or the running user (the file and, a symlink, its target), so bash's own -O
# (owned by the effective user, the link followed, as `stat -L -c %u` reads it) tells which, with no process: owned
# by root is -O as root, not -O for anyone else (-e first: fleet_trust passes a path missing at its end).
fleet_bin_trusted() {
  [ -z "$(fleet_trust "$1" 2>&1)" ] && [ -e "$1" ] && if [ "$EUID" = 0 ]; then [ -O "$1" ]; else [ ! -O "$1" ]; fi
}
