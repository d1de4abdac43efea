#!/usr/bin/env bash
# fleet/remote/python_version.sh (fleet/facts/software.py python_command): the python section, after trust.sh and
# select_python.sh: where the roles' python is, and its version.
# shellcheck disable=SC2154  # env_dir, env_exists, env_untrusted, py: set by select_python.sh
printf 'env %s\nenv_exists %s\nexecutable %s\n' "$env_dir" "$env_exists" "$py"
[ -z "$env_untrusted" ] || printf 'untrusted %s\n' "$env_untrusted"
[ -n "$py" ] || exit 0
# A venv that exists answers from files, with no Python start (~50 ms of the host's CPU at every probe): its
# pyvenv.cfg holds the version it was made with (venv: `version`, virtualenv and uv: `version_info`), taken where its
# X.Y is the one its interpreter's name says (python3.12 -> 3.12) and that interpreter is there. A Python upgraded
# in place within X.Y keeps the cfg's patch level; only X.Y decides anything.
if [ "$env_exists" = yes ] && [ -r "$env_dir/pyvenv.cfg" ]; then
  real=$(readlink -f "$py"); xy=${real##*/python}; cfg=
  while IFS= read -r l || [ -n "$l" ]; do
    case $l in version*=*) k=${l%%=*}; k=${k%% *}
      case $k in version|version_info) cfg=${l#*=}; cfg=${cfg// /}; break;; esac;; esac
  done < "$env_dir/pyvenv.cfg"
  if [[ $cfg =~ ^([0-9]+\.[0-9]+)(\.[0-9]+)? ]]; then cfg=${BASH_REMATCH[0]}; else cfg=; fi
  if [ -x "$real" ] && [ -n "$cfg" ] && { [ "${cfg%.*}" = "$xy" ] || [ "$cfg" = "$xy" ]; }; then
    echo "version $cfg"; echo 'source pyvenv.cfg'; exit 0; fi
fi
# Minimal images (Debian/Ubuntu without python3-venv) lack ensurepip: `python3 -m venv` fails there. One Python start
# for both answers (each start is ~50 ms of CPU, most of this section); the version is printed first, so a Python
# that cannot import ensurepip still says which it is (the import error is caught). The system's python3 is judged as
# the venv's is before it starts (a python3 planted on PATH is not run).
[ "$env_exists" = yes ] || [ -z "$(fleet_judge "$py")" ] || exit 0
cd / && "$py" -I -B -c 'import platform; print("version", platform.python_version(), flush=True)
try:
    import ensurepip, venv
except Exception:
    print("venv_module no")
else:
    print("venv_module yes")'
true
