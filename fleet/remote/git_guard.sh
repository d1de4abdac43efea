#!/usr/bin/env bash
# fleet/remote/git_guard.sh (fleet/shell.py git_guard, after trust.sh): defines `git` for the checkout at $fleet_gd
# (set before this), and $fleet_git_owner.
# git refuses a repository another user owns ("dubious ownership", its fix for CVE-2022-24765: such a repository's
# config can run commands, core.fsmonitor among them). fleet tells git the checkout is safe only where it and its .git
# are owned by root or the connecting user, and its .git/config is one no one else can write (fleet_trust: mode,
# ACLs, every parent; a config another user may edit names a credential.helper or core.sshCommand git runs);
# otherwise $fleet_git_owner says why and git keeps refusing. As root, git also runs no fsmonitor and no hooks,
# whoever wrote the config. $EUID is what `id -u` prints (the effective uid), without a process.
# shellcheck disable=SC2154  # fleet_gd: set by the line before this
fleet_git=() fleet_git_owner='' fleet_fs=()
for fleet_f in "$fleet_gd" "$fleet_gd/.git"; do [ -e "$fleet_f" ] && fleet_fs+=("$fleet_f"); done
# one stat for both (one line each, in order): the owner of the last one not root's or this user's
[ "${#fleet_fs[@]}" = 0 ] || while IFS= read -r fleet_u; do
  case "${fleet_u%% *}" in 0|"$EUID") ;; *) fleet_git_owner=${fleet_u#* };; esac
done < <(stat -c '%u %U' -- "${fleet_fs[@]}")
if [ -z "$fleet_git_owner" ] && [ -e "$fleet_gd/.git/config" ]; then
  fleet_u=$(fleet_trust "$fleet_gd/.git/config"); [ -z "$fleet_u" ] || fleet_git_owner="root, yet $fleet_u,"
fi
if [ -z "$fleet_git_owner" ]; then fleet_git=(-c safe.directory="$fleet_gd"); fi
if [ "$EUID" = 0 ]; then fleet_git+=(-c core.fsmonitor= -c core.hooksPath=/dev/null); fi
git() { command git "${fleet_git[@]}" "$@"; }
