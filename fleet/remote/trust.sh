#!/usr/bin/env bash
# fleet/remote/trust.sh: fleet_trust and the functions around it (fleet.shell.TRUST_FN, loaded by
# fleet.remote.program: the comments and blank lines here are stripped, so what ships carries none).
# Trust is judged where a program is run, in the same shell, just before it runs.
#
# This defines, for any snippet that runs a program from a configured path (a bash of its own under sudo or
# timeout(1) included: each snippet that runs one carries the text):
#
#   fleet_trust PATH...      prints nothing when every PATH is safe to run (or write) as root, else ONE sentence
#                            naming the first component that is not and why ("/workspace is owned by root with mode
#                            775 and a POSIX ACL granting write to user:alice:rwx"). A helper program fleet installs
#                            (/var/lib/fleet/bin) is judged with it too: `fleet_trust "$helper"` or fleet_trusted.
#   fleet_judge PROGRAM      fleet_trust of PROGRAM, and where it is a Python of a venv (bin/python*, bin/pip*, bin/uv
#                            next to a pyvenv.cfg) what that Python reads at start: pyvenv.cfg, lib*/python*/
#                            site-packages and every .pth, sitecustomize and usercustomize file in them
#   fleet_judged PROGRAM     $fleet_prog: PROGRAM's path (found on PATH when it has no /) when fleet_judge passes it,
#                            else says why on stderr and returns TRUST_REFUSED (126, "cannot execute"; 127: none such):
#                            for a program started through another (`timeout N "$fleet_prog" ...`, sudo)
#   fleet_trusted PROGRAM ARGS...         runs PROGRAM when fleet_judged passes it, else its status, PROGRAM not
#                                         started
#   fleet_trusted_python PYTHON ARGS...   the same for a Python, started -I from / (isolated: no PYTHONPATH or
#                                         PYTHONHOME from the environment or /etc/environment, no user site, and
#                                         neither `-c` nor `-m` imports a module planted in the working directory)
#   fleet_trust_prime PATH... [--judge PROGRAM...]
#                            at a read-only script's start (a probe's, facts/probe.prime): fleet_trust of every PATH and
#                            of what fleet_judge judges for each PROGRAM, once, its output dropped, keeping what its
#                            stat, ls and readlink -m (a symlink on the way) answered in fleet_pst, fleet_pfl, fleet_plk;
#                            every section started after it inherits them, and fleet_trust asks only for what they do
#                            not hold. Only a path stat answered for is kept: a path missing then (a section may make it),
#                            or one stat could not answer for, is asked again where it is judged; a target behind a
#                            link is kept only where no path before it was refused (fleet_trust stops there)
#
# fleet_root_group_alone: root's group (gid 0) has no
# member but root, in /etc/group and as a primary group. fleet_judge_paths PROGRAM: fleet_s, the paths fleet_judge
# judges for it (the caller's array). fleet_judged PROGRAM: $fleet_prog is its path when fleet_judge passes it; else
# why, on stderr, and 126 (127: none). ACLs: one `ls -ldU` for every component that exists, in that order (its 11th
# character is '+' for an ACL), getfacl's lines read as `user:alice:rwx [#effective:r-x]`; a symlink on the way: its
# target is judged too (once: a target's own links are judged by their owners).
#
# What "safe" means, failing closed at every step:
# - every component from the path up to / exists or is missing at the end (a venv to be made), owned by root or the
#   running user; a component stat cannot answer for (permission denied, I/O error, no stat at all) is refused;
# - no component is writable by others, nor by its group unless that group is root's and root's group has no other
#   member (/etc/group's list, and no /etc/passwd user but root with it as primary group); a sticky directory (1777
#   /tmp) is passed only for an entry under it that already exists (that entry's own owner then counts);
# - no component has a POSIX ACL granting write to a named user or group (access or default ACL, as getfacl reads
#   it, the mask applied). GNU ls marks a file that has any extended ACL with '+'; where getfacl is not installed
#   (Ubuntu's base image has no acl package) such a file is refused, since what it grants cannot be read; where ls
#   is not GNU's and getfacl is missing too, nothing can tell whether an ACL is there, and every path is refused
#   (fail closed: the `setfacl -R -m u:alice:rwx /workspace` that shares a pod's volume looks like plain 775);
# - a symlink on the way: its target is judged too;
# - a path with a newline in it, or that is not absolute, is refused.
# shellcheck disable=SC2034  # fleet_pst/fleet_pfl/fleet_plk: kept across calls (fleet_trust_prime fills them)
declare -gA fleet_pst fleet_pfl fleet_plk 2>/dev/null
fleet_trust() {
  local fleet_p fleet_c fleet_l fleet_u fleet_n fleet_g fleet_m fleet_t fleet_f fleet_below fleet_i fleet_e
  local -a fleet_all=() fleet_have=() fleet_links=() fleet_flags=()
  local -A fleet_st=() fleet_want=()
  for fleet_p in "$@"; do
    case $fleet_p in *$'\n'*) printf '%s... has a newline in its name\n' "${fleet_p%%$'\n'*}"; return;; /*) ;;
      *) printf '%s is not an absolute path\n' "$fleet_p"; return;; esac
    fleet_c=$fleet_p
    while [ -n "$fleet_c" ] && [ "$fleet_c" != / ]; do
      [ -n "${fleet_want[$fleet_c]+x}" ] || { fleet_want[$fleet_c]=1; fleet_all+=("$fleet_c"); }
      fleet_c=${fleet_c%/*}
    done
  done
  fleet_all+=(/)
  local -a fleet_ask=() fleet_got=()
  for fleet_c in "${fleet_all[@]}"; do
    if [ -n "${fleet_pst[$fleet_c]+x}" ]; then fleet_st[$fleet_c]=${fleet_pst[$fleet_c]}; else fleet_ask+=("$fleet_c"); fi
  done
  [ "${#fleet_ask[@]}" = 0 ] || while IFS= read -r fleet_l; do
    case $fleet_l in *': No such file or directory') continue;; esac
    IFS=$'\t' read -r fleet_u fleet_n fleet_g fleet_m fleet_t fleet_f <<< "$fleet_l"
    case $fleet_u in ''|*[!0-9]*) printf '%s cannot be examined (%s)\n' "$1" "$fleet_l"; return;; esac
    fleet_st[$fleet_f]=$fleet_l; [ -z "${fleet_trust_rec-}" ] || fleet_pst[$fleet_f]=$fleet_l
  done < <(LC_ALL=C stat -c $'%u\t%U\t%g\t%a\t%F\t%n' -- "${fleet_ask[@]}" 2>&1)
  for fleet_c in "${fleet_all[@]}"; do [ -z "${fleet_st[$fleet_c]+x}" ] || fleet_have+=("$fleet_c"); done
  [ -n "${fleet_st[/]+x}" ] || { printf '/ cannot be examined (stat did not answer)\n'; return; }
  if [ -z "${fleet_ls_gnu+x}" ]; then
    fleet_ls_gnu=; case $(LC_ALL=C ls --version 2>/dev/null) in *GNU*) fleet_ls_gnu=1;; esac; fi
  if [ -n "$fleet_ls_gnu" ]; then
    fleet_ask=()
    for fleet_c in "${fleet_have[@]}"; do [ -n "${fleet_pfl[$fleet_c]+x}" ] || fleet_ask+=("$fleet_c"); done
    [ "${#fleet_ask[@]}" = 0 ] || mapfile -t fleet_got < <(LC_ALL=C ls -ldU -- "${fleet_ask[@]}" 2>/dev/null)
    [ "${#fleet_got[@]}" = "${#fleet_ask[@]}" ] || { printf '%s cannot be examined (ls did not answer for each parent)\n' "$1"; return; }
    fleet_i=0
    for fleet_c in "${fleet_have[@]}"; do
      if [ -n "${fleet_pfl[$fleet_c]+x}" ]; then fleet_flags+=("${fleet_pfl[$fleet_c]}")
      else fleet_flags+=("${fleet_got[$fleet_i]}"); fleet_i=$((fleet_i + 1))
        [ -z "${fleet_trust_rec-}" ] || fleet_pfl[$fleet_c]=${fleet_flags[-1]}; fi
    done
  elif ! command -v getfacl >/dev/null 2>&1; then
    printf 'whether %s has a POSIX ACL cannot be told here (no getfacl, and ls is not GNU ls): install the acl package\n' "$1"; return
  else fleet_flags=("${fleet_have[@]/*/??????????+}"); fi
  local -A fleet_acl=()
  for fleet_i in "${!fleet_have[@]}"; do
    [ "${fleet_flags[$fleet_i]:10:1}" = + ] || continue
    fleet_c=${fleet_have[$fleet_i]}
    command -v getfacl >/dev/null 2>&1 || { fleet_acl[$fleet_c]=unreadable; continue; }
    fleet_e=
    while IFS= read -r fleet_l; do
      case $fleet_l in user:?*:*|group:?*:*|default:user:?*:*|default:group:?*:*) ;; *) continue;; esac
      fleet_l=${fleet_l//$'\t'/ }
      fleet_m=${fleet_l%% *}; fleet_m=${fleet_m##*:}
      case $fleet_l in *'#effective:'*) fleet_m=${fleet_l##*#effective:};; esac
      [[ $fleet_m == *w* ]] && fleet_e+=${fleet_e:+,}${fleet_l%% *}
    done < <(LC_ALL=C getfacl -cp -- "$fleet_c" 2>/dev/null || echo user:?:w)
    [ -z "$fleet_e" ] || fleet_acl[$fleet_c]=$fleet_e
  done
  for fleet_p in "$@"; do
    fleet_c=$fleet_p fleet_below=
    while :; do
      [ -n "$fleet_c" ] || fleet_c=/
      if [ -z "${fleet_st[$fleet_c]+x}" ]; then
        [ -z "$fleet_below" ] || { printf '%s cannot be examined (stat did not answer for it)\n' "$fleet_c"; return; }
      else
        IFS=$'\t' read -r fleet_u fleet_n fleet_g fleet_m fleet_t fleet_f <<< "${fleet_st[$fleet_c]}"
        if [ "$fleet_u" != 0 ] && [ "$fleet_u" != "$EUID" ]; then echo "$fleet_c is owned by $fleet_n with mode $fleet_m"; return; fi
        if [ "$fleet_t" = "symbolic link" ]; then fleet_links+=("$fleet_p")
        else
          case ${fleet_acl[$fleet_c]-} in '') ;;
            unreadable) echo "$fleet_c has a POSIX ACL that cannot be read here (no getfacl: install the acl package)"; return;;
            *) echo "$fleet_c is owned by $fleet_n with mode $fleet_m and a POSIX ACL granting write to ${fleet_acl[$fleet_c]}"; return;; esac
          fleet_m=$((8#$fleet_m))
          if { [ $((fleet_m & 2)) != 0 ] || { [ $((fleet_m & 16)) != 0 ] && { [ "$fleet_g" != 0 ] || ! fleet_root_group_alone; }; }; } &&
             { [ $((fleet_m & 512)) = 0 ] || [ -z "$fleet_below" ]; }; then
            printf '%s is owned by %s with mode %o\n' "$fleet_c" "$fleet_n" "$fleet_m"; return; fi
        fi
        fleet_below=yes
      fi
      [ "$fleet_c" != / ] || break
      fleet_c=${fleet_c%/*}
    done
  done
  if [ "${#fleet_links[@]}" != 0 ] && [ -z "${fleet_trust_resolved-}" ]; then
    local fleet_trust_resolved=1 fleet_r=()
    for fleet_p in "${fleet_links[@]}"; do
      fleet_c=${fleet_plk[$fleet_p]-$(readlink -m -- "$fleet_p")}; fleet_r+=("$fleet_c")
      [ -z "${fleet_trust_rec-}" ] || fleet_plk[$fleet_p]=$fleet_c
    done
    fleet_trust "${fleet_r[@]}"
  fi
}
fleet_root_group_alone() {
  local fleet_x fleet_y fleet_z fleet_w
  while IFS=: read -r fleet_x fleet_y fleet_z fleet_w; do
    [ "$fleet_z" = 0 ] || continue; [ -z "$fleet_w" ] || [ "$fleet_w" = root ] || return 1
  done < /etc/group
  while IFS=: read -r fleet_x fleet_y fleet_z fleet_w _; do
    [ "$fleet_w" != 0 ] || [ "$fleet_z" = 0 ] || return 1
  done < /etc/passwd
}
fleet_judge() {
  local -a fleet_s
  fleet_judge_paths "$1"
  fleet_trust "${fleet_s[@]}"
}
fleet_judge_paths() {
  local fleet_v=${1%/bin/*} fleet_j
  fleet_s=("$1")
  if [ "$fleet_v" != "$1" ] && [ -e "$fleet_v/pyvenv.cfg" ]; then
    case ${1##*/} in python*|pip*|uv)
      fleet_s+=("$fleet_v/pyvenv.cfg")
      for fleet_j in "$fleet_v"/lib*/python*/site-packages "$fleet_v"/lib*/python*/site-packages/*.pth \
                     "$fleet_v"/lib*/python*/site-packages/sitecustomize.py "$fleet_v"/lib*/python*/site-packages/usercustomize.py; do
        [ -e "$fleet_j" ] && fleet_s+=("$fleet_j")
      done;;
    esac
  fi
}
fleet_judged() {
  local fleet_why
  fleet_prog=$1
  case $fleet_prog in */*) ;; *) fleet_prog=$(type -P -- "$1") || { echo "fleet: $1: command not found" >&2; return 127; };; esac
  [ -e "$fleet_prog" ] || { echo "fleet: $fleet_prog: no such file" >&2; return 127; }
  fleet_why=$(fleet_judge "$fleet_prog")
  [ -z "$fleet_why" ] && return 0
  printf 'fleet: not running %s: %s, so another user could plant what it runs; make it and each parent owned by root and writable by no one else\n' "$fleet_prog" "$fleet_why" >&2
  return 126
}
fleet_trusted() {
  local fleet_prog
  fleet_judged "$1" || return
  shift; "$fleet_prog" "$@"
}
fleet_trusted_python() {
  local fleet_prog
  fleet_judged "$1" || return
  shift; ( cd / && "$fleet_prog" -I "$@" )
}
