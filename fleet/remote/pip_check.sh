#!/usr/bin/env bash
# fleet/remote/pip_check.sh (fleet/resources/pip.py check, after pip_venv.sh and pip_fast.sh): exit 0 where every
# requirement (the arguments) is installed in the venv, 10 where not, 11 where the index lacks a pinned one. Set before
# this: fleet_pip_venv (the venv's path), fleet_pip_said (as the role wrote it, for what it says), fleet_pip_python (the
# python that would make it), fleet_pip_check ("FILE SHA256" of fleet/remote/pip_check.py as a helper program),
# fleet_pip_index (empty: no index check) and fleet_pip_index_prog (pip_index.py's). A helper program runs only where
# the fast path cannot vouch: fleet_program (the shared function "program") finds it in /var/lib/fleet/bin, or
# installs the text the command carries, or ends the section saying it is missing (the engine asks again with it).
# From /: the fast path's working-directory entries are then /'s, as Python's sys.path[0] is. Calls the shared
# functions "trust" (fleet_trusted_python) and "program".
# shellcheck disable=SC2154  # set by the line before this
cd /
if [ ! -x "$fleet_pip_venv/bin/python" ]; then echo "no virtual environment at $fleet_pip_said"; rc=10
elif ! fleet_venv_complete "$fleet_pip_venv"; then
  echo "incomplete virtual environment at $fleet_pip_said (no pip: its creation was cut short): it will be moved aside and made again"; rc=10
elif fleet_pip_fast "$fleet_pip_venv" "$@"; then echo 'all installed'; rc=0
else
  # shellcheck disable=SC2086  # "FILE SHA256": two words
  fleet_program $fleet_pip_check || exit $?
  fleet_p=fleet_at_${fleet_pip_check%% *}; fleet_p=${fleet_p//-/_}
  fleet_trusted_python "$fleet_pip_venv/bin/python" "${!fleet_p}" "$@"; rc=$?
fi
# asked only where something is missing: a converged host costs no index request (the URL in the environment only)
if [ "$rc" = 10 ] && [ -n "$fleet_pip_index" ]; then
  ipy=$fleet_pip_venv/bin/python; [ -x "$ipy" ] || ipy=$(command -v "$fleet_pip_python" || true)
  if [ -n "$ipy" ]; then
    # shellcheck disable=SC2086  # "FILE SHA256": two words
    fleet_program $fleet_pip_index_prog || exit $?
    fleet_p=fleet_at_${fleet_pip_index_prog%% *}; fleet_p=${fleet_p//-/_}
    export FLEET_INDEX=$fleet_pip_index; fleet_trusted_python "$ipy" "${!fleet_p}" "$@" || exit $?
  fi
fi
exit $rc
