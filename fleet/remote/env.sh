#!/usr/bin/env bash
# fleet/remote/env.sh (fleet/facts/software.py ENV): what `printenv VAR` and `grep -qF MARKER FILE` answer, in bash
# builtins (eight processes fewer per probe): a variable of fleet_env_vars counts when exported and set (${!v@a}
# holds x; bash >= 4.4, else printenv answers), its value without trailing newlines (as $(printenv) gives it); a hook
# file of fleet_hook_files counts when one of its lines holds $fleet_hook_marker. The three are set before this.
# Only the variables named are read: anything else may hold a secret.
# shellcheck disable=SC2154  # fleet_env_vars, fleet_hook_files, fleet_hook_marker: set by the lines before this
fleet_new=; (( BASH_VERSINFO[0] > 4 || (BASH_VERSINFO[0] == 4 && BASH_VERSINFO[1] >= 4) )) && fleet_new=1
for v in "${fleet_env_vars[@]}"; do
  if [ -n "$fleet_new" ]; then
    a=${!v@a}; if [[ $a == *x* ]] && [ -n "${!v+x}" ]; then val=${!v}; ok=1; else ok=; fi
    while [[ $val == *$'\n' ]]; do val=${val%$'\n'}; done
  elif val=$(printenv "$v"); then ok=1; else ok=; fi
  if [ -n "$ok" ]; then printf '%s=%s\n' "$v" "$val"; else printf 'unset %s\n' "$v"; fi
done
for f in "${fleet_hook_files[@]}"; do
  [ -r "$f" ] || continue
  while IFS= read -r l || [ -n "$l" ]; do
    if [[ $l == *"$fleet_hook_marker"* ]]; then printf 'hook %s\n' "$f"; break; fi
  done < "$f"
done
true
