#!/usr/bin/env bash
# fleet/remote/shells_commands.sh (fleet/facts/shells.py _CMDS): in each kind of shell, after its startup files,
# what each user command (fleet_cmds, set before this from fleet.facts.shells.COMMANDS) resolves to in this kind
# (`command -v`: an alias or a function counts, as when typed), its real file, the version of the toolkit an nvcc
# belongs to (its version.json, else version.txt: no nvcc start), the interpreter a pip runs (its #! line); then each
# distinct python asked once where it finds torch (find_spec: no import, no GPU) and whether pip would refuse there
# (PEP 668: EXTERNALLY-MANAGED beside a stdlib outside a venv). Printed as @@cmd and @@py lines (facts/shells.py parse).
# shellcheck disable=SC2154  # fleet_cmds: set by the line before this program
fleet_pys=
declare -A fleet_real fleet_path
# x: what `grep -m1 -A3 '"cuda" *:' FILE | grep -m1 -o '"version" *: *"[^"]*"'` prints, by builtins (two processes
# fewer a kind, and no alias of grep an interactive shell's startup files made)
fleet_nvcc_json() {
  local l n=-1 rest m=
  x=
  while IFS= read -r l || [ -n "$l" ]; do
    if [ "$n" -lt 0 ]; then [[ $l =~ \"cuda\"\ *: ]] || continue; n=4; fi
    [ "$n" -gt 0 ] || break
    n=$((n - 1)); rest=$l
    while [[ $rest =~ \"version\"\ *:\ *\"[^\"]*\" ]]; do
      m+=${m:+$'\n'}${BASH_REMATCH[0]}; rest=${rest#*"${BASH_REMATCH[0]}"}
    done
    [ -z "$m" ] || break
  done < "$1"
  x=$m
}
# How each name resolves, as bash resolves what is typed (bash manual, "Command Search and Execution"): an alias
# (expanded only where expand_aliases is on: interactive shells), a shell function, a name hashed by `hash -p` or
# hashed before PATH changed, then PATH. fleet_how[name] says which (alias, function, hash, path) and fleet_def[name]
# what made it so: the alias's text, a hashed name's PATH answer. A function's file:line (extdebug's declare -F) is an
# @@def line of its own, as the trace's alias and hash lines are (line numbers stay out of @@cmd, which the verify
# fingerprint digests: a comment above a line must not re-run verify). An alias's first word is what runs: its path
# (the PATH search for a bare name) is the path asked below.
# `command -v` without a process per name: a name that is no alias, no function and not hashed yet is an executable
# found on PATH where `hash` finds it (bash searches PATH as command -v does and keeps the path in BASH_CMDS); else
# (a name the startup files hashed, a non-executable file the only one found, set +h, nothing at all) command -v
# itself answers
# fleet_argv0[path]: a hashed name's, run as bash runs it: that path with argv[0] the bare name, from which a python
# finds its prefix by searching PATH (CPython's getpath), so it is asked the same way
declare -A fleet_how fleet_def fleet_argv0
for c in "${fleet_cmds[@]}"; do
  fleet_how[$c]=path; fleet_def[$c]=
  if [ -n "${BASH_ALIASES[$c]+x}" ] && shopt -q expand_aliases; then
    fleet_how[$c]='alias'; fleet_def[$c]=${BASH_ALIASES[$c]}
    w=${BASH_ALIASES[$c]}; w=${w#"${w%%[![:space:]]*}"}; w=${w%%[[:space:]]*}
    case $w in /*) p=$w ;; *) p=$(type -P -- "$w" 2>/dev/null) || p= ;; esac
  elif declare -F "$c" >/dev/null; then
    fleet_how[$c]=function; w=$(shopt -s extdebug; declare -F "$c"); w=${w#* }
    printf '@@def\t1\t%s\t%s\t%s() { ... }\t\n' "${w#* }" "${w%% *}" "$c"; p=$c
  elif [ -n "${BASH_CMDS[$c]+x}" ]; then
    p=${BASH_CMDS[$c]}; w=$(hash -d "$c" 2>/dev/null; type -P -- "$c" 2>/dev/null)
    [ "$w" = "$p" ] || { fleet_how[$c]='hash'; fleet_def[$c]=$w; fleet_argv0[$p]=$c; }
  elif [[ $- == *h* ]] && hash "$c" 2>/dev/null; then p=${BASH_CMDS[$c]}
  else p=$(command -v "$c" 2>/dev/null) || p=; fi
  fleet_path[$c]=$p
done
# every path's real file by one readlink (GNU: one line each, NUL-ended, all or the status says not); else one each
fleet_rs=()
for c in "${fleet_cmds[@]}"; do case ${fleet_path[$c]} in /*) fleet_rs+=("${fleet_path[$c]}") ;; esac; done
if [ "${#fleet_rs[@]}" -gt 1 ] && (( BASH_VERSINFO[0] > 4 || (BASH_VERSINFO[0] == 4 && BASH_VERSINFO[1] >= 4) )) && mapfile -d '' -t fleet_r < <(readlink -f -z -- "${fleet_rs[@]}" 2>/dev/null; printf '%s' "$?") &&
   [ "${fleet_r[-1]}" = 0 ] && [ "${#fleet_r[@]}" = $(( ${#fleet_rs[@]} + 1 )) ]; then
  for i in "${!fleet_rs[@]}"; do fleet_real[${fleet_rs[$i]}]=${fleet_r[$i]}; done
fi
for c in "${fleet_cmds[@]}"; do
  p=${fleet_path[$c]}
  r=; x=
  case $p in /*) [ -n "${fleet_real[$p]+x}" ] || fleet_real[$p]=$(readlink -f -- "$p" 2>/dev/null); r=${fleet_real[$p]} ;; esac
  if [ "$c" = nvcc ] && [ -n "$r" ]; then
    t=${r%/bin/nvcc}
    if [ -r "$t/version.json" ]; then fleet_nvcc_json "$t/version.json"; x=${x##*: }; x=${x//\"/}
    elif [ -r "$t/version.txt" ]; then read -r x < "$t/version.txt"; x=${x##* }; fi
  elif [ "$c" = pip ] && [ -n "$r" ]; then
    IFS= read -r x < "$r" 2>/dev/null; case $x in '#!'*) x=${x#\#!}; x=${x%% *} ;; *) x= ;; esac
  fi
  d=${fleet_def[$c]//[$'\t\n']/ }
  printf '@@cmd %s\t%s\t%s\t%s\t%s\t%s\n' "$c" "$p" "$r" "$x" "${fleet_how[$c]}" "$d"
  # a python is asked by the path it is run by: a venv's bin/python3 links to the system's, and only that path
  # finds the venv (its pyvenv.cfg)
  case $c in python*) q=$p ;; pip) q=$x ;; *) q= ;; esac
  for q in $q; do case $q in */python*) case " $fleet_pys " in *" $q "*) ;; *) fleet_pys="$fleet_pys $q" ;; esac ;; esac; done
done
# one Python start per interpreter: the same interpreter in the same directory answers the same in this shell (the
# variables Python reads are this shell's for all of them), so python3, python and pip's #! of one venv start it once
declare -A fleet_pya
for q in $fleet_pys; do
  [ -x "$q" ] || continue
  [ -n "${fleet_real[$q]+x}" ] || fleet_real[$q]=$(readlink -f -- "$q")
  k="${q%/*}|${fleet_real[$q]}|${fleet_argv0[$q]-}"
  if [ -n "${fleet_pya[$k]+x}" ]; then a=${fleet_pya[$k]}
  else
    a=$(exec -a "${fleet_argv0[$q]:-$q}" "$q" -c "$fleet_pyq" 2>/dev/null)
    [ -n "$a" ] && a="${a//$'\n'/ } "
    fleet_pya[$k]=$a
  fi
  printf '@@py %s\t%s\n' "$q" "$a"
done
