#!/usr/bin/env bash
# fleet/remote/pip_venv.sh (fleet/resources/pip.py): whether a venv's creation got to the end.
# A venv is complete when its creation got to the end: pyvenv.cfg, bin/python, pip installed by ensurepip (its RECORD
# is the last file pip writes; or the system's, for a venv made with system site packages) and bin/activate (venv
# writes it after pip). A connection lost, a Ctrl-C or a pod restarted while `python -m venv` ran leaves bin/python
# without pip ("No module named pip" at every later apply): the check calls that not in state, and the apply moves it
# aside (never deletes it) and makes it again. A venv made --system-site-packages (--without-pip) has the system's pip
# as its pip.
fleet_venv_complete() {
  local fleet_r
  [ -e "$1/pyvenv.cfg" ] && [ -x "$1/bin/python" ] && [ -e "$1/bin/activate" ] || return 1
  for fleet_r in "$1"/lib/python3*/site-packages/pip-*.dist-info/RECORD; do [ -s "$fleet_r" ] && return 0; done
  while IFS= read -r fleet_r; do
    case ${fleet_r// /} in include-system-site-packages=true) return 0;; esac
  done < "$1/pyvenv.cfg"
  return 1
}
fleet_venv_started() { [ -e "$1/pyvenv.cfg" ] || [ -e "$1/bin/python" ] || [ -L "$1/bin/python" ]; }
