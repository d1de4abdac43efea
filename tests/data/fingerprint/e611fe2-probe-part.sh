
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
  while IFS= read -r fleet_l; do
    case $fleet_l in *': No such file or directory') continue;; esac
    IFS=$'\t' read -r fleet_u fleet_n fleet_g fleet_m fleet_t fleet_f <<< "$fleet_l"
    case $fleet_u in ''|*[!0-9]*) printf '%s cannot be examined (%s)\n' "$1" "$fleet_l"; return;; esac
    fleet_st[$fleet_f]=$fleet_l; fleet_have+=("$fleet_f")
  done < <(LC_ALL=C stat -c $'%u\t%U\t%g\t%a\t%F\t%n' -- "${fleet_all[@]}" 2>&1)
  [ -n "${fleet_st[/]+x}" ] || { printf '/ cannot be examined (stat did not answer)\n'; return; }
  # ACLs: one `ls -ldU` for every component that exists, in that order; the 11th character is '+' for an ACL
  if [ -z "${fleet_ls_gnu+x}" ]; then
    fleet_ls_gnu=; case $(LC_ALL=C ls --version 2>/dev/null) in *GNU*) fleet_ls_gnu=1;; esac; fi
  if [ -n "$fleet_ls_gnu" ]; then
    mapfile -t fleet_flags < <(LC_ALL=C ls -ldU -- "${fleet_have[@]}" 2>/dev/null)
    [ "${#fleet_flags[@]}" = "${#fleet_have[@]}" ] || { printf '%s cannot be examined (ls did not answer for each parent)\n' "$1"; return; }
  elif ! command -v getfacl >/dev/null 2>&1; then
    printf 'whether %s has a POSIX ACL cannot be told here (no getfacl, and ls is not GNU ls): install the acl package\n' "$1"; return
  else fleet_flags=("${fleet_have[@]/*/??????????+}"); fi
  local -A fleet_acl=()
  for fleet_i in "${!fleet_have[@]}"; do
    [ "${fleet_flags[$fleet_i]:10:1}" = + ] || continue
    fleet_c=${fleet_have[$fleet_i]}
    command -v getfacl >/dev/null 2>&1 || { fleet_acl[$fleet_c]=unreadable; continue; }
    fleet_e=
    while IFS= read -r fleet_l; do   # user:alice:rwx  [#effective:r-x]; default:group:staff:rwx
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
  # a symlink on the way: its target is judged too (once: a target's own links are judged by their owners)
  if [ "${#fleet_links[@]}" != 0 ] && [ -z "${fleet_trust_resolved-}" ]; then
    local fleet_trust_resolved=1 fleet_r=()
    for fleet_p in "${fleet_links[@]}"; do fleet_r+=("$(readlink -m -- "$fleet_p")"); done
    fleet_trust "${fleet_r[@]}"
  fi
}
fleet_root_group_alone() {  # root's group (gid 0) has no member but root, in /etc/group and as a primary group
  local fleet_x fleet_y fleet_z fleet_w
  while IFS=: read -r fleet_x fleet_y fleet_z fleet_w; do
    [ "$fleet_z" = 0 ] || continue; [ -z "$fleet_w" ] || [ "$fleet_w" = root ] || return 1
  done < /etc/group
  while IFS=: read -r fleet_x fleet_y fleet_z fleet_w _; do
    [ "$fleet_w" != 0 ] || [ "$fleet_z" = 0 ] || return 1
  done < /etc/passwd
}
fleet_judge() {
  local fleet_v=${1%/bin/*} fleet_j
  local -a fleet_s=("$1")
  if [ "$fleet_v" != "$1" ] && [ -e "$fleet_v/pyvenv.cfg" ]; then
    case ${1##*/} in python*|pip*|uv)
      fleet_s+=("$fleet_v/pyvenv.cfg")
      for fleet_j in "$fleet_v"/lib*/python*/site-packages "$fleet_v"/lib*/python*/site-packages/*.pth \
                     "$fleet_v"/lib*/python*/site-packages/sitecustomize.py "$fleet_v"/lib*/python*/site-packages/usercustomize.py; do
        [ -e "$fleet_j" ] && fleet_s+=("$fleet_j")
      done;;
    esac
  fi
  fleet_trust "${fleet_s[@]}"
}
fleet_judged() {  # PROGRAM: $fleet_prog is its path when fleet_judge passes it; else why, on stderr, and 126 (127: none)
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
  shift; ( cd / && "$fleet_prog" -s "$@" )
}
env_dir=/opt/fleet/venv; env_untrusted=
if [ -x "$env_dir/bin/python" ]; then env_untrusted=$(fleet_judge "$env_dir/bin/python"); fi
if [ -x "$env_dir/bin/python" ] && [ -z "$env_untrusted" ]; then py=$env_dir/bin/python; env_exists=yes
else py=$(command -v python3 || true); env_exists=no; fi
fleet_stat() { [ -e "$1" ] && stat -L -c '%n %s %Y' -- "$1" 2>/dev/null || echo "absent $1"; }
declare -A fleet_seen
fleet_libcuda() {  # fleet_r: the libcuda.so.1 the loader takes for this LD_LIBRARY_PATH (the path first, then the
  # ld cache, read once), as `path size mtime`; each file is resolved and stat'ed once for all three shells
  local fleet_d fleet_c= IFS=:
  for fleet_d in $1; do
    if [ -n "$fleet_d" ] && [ -e "$fleet_d/libcuda.so.1" ]; then fleet_c=$fleet_d/libcuda.so.1; break; fi
  done
  IFS=$' \t\n'
  if [ -z "$fleet_c" ]; then
    [ -n "${fleet_cached+x}" ] || fleet_cached=$("$(command -v ldconfig || echo /sbin/ldconfig)" -p 2>/dev/null | awk '/libcuda\.so\.1 /{print $NF; exit}')
    [ -n "$fleet_cached" ] || { fleet_r=none; return; }
    fleet_c=$fleet_cached
  fi
  [ -n "${fleet_seen[$fleet_c]+x}" ] || fleet_seen[$fleet_c]=$(fleet_stat "$(readlink -f "$fleet_c")")
  fleet_r=${fleet_seen[$fleet_c]}
}
fleet_ld_of() {  # fleet_v: the LD_LIBRARY_PATH a fresh session's shell of this kind ends up with, as the probe's own
  # trace of the startup files found it (facts.shells: the same trace, so the gate starts no shell of its own)
  local line kind=
  fleet_v=
  while IFS= read -r line; do
    case $line in
      "@@shell "*) kind=${line#@@shell } ;;
      "@@value LD_LIBRARY_PATH="*) [ "$kind" = "$1" ] && fleet_v=${line#@@value LD_LIBRARY_PATH=} ;;
    esac
  done <<< "$fleet_shells_out"
}
fleet_first_line() {  # what `head -n 1 FILE` prints, else "none"
  [ -r "$1" ] || { echo none; return; }
  local line=; IFS= read -r line < "$1"; printf '%s\n' "$line"
}
echo "driver $(fleet_first_line /proc/driver/nvidia/version)"
echo "python $(fleet_stat "$(readlink -f "$py" 2>/dev/null)")"
fleet_recs=$(shopt -s nullglob; printf '%s\n' "$env_dir"/lib/python3*/site-packages/torch-*.dist-info/RECORD /usr/local/lib/python3*/dist-packages/torch-*.dist-info/RECORD /usr/lib/python3/dist-packages/torch-*.dist-info/RECORD /usr/local/lib/python3*/site-packages/torch-*.dist-info/RECORD)
case $fleet_recs in
  *$'\n'*) fleet_rec=$(ls -d $fleet_recs 2>/dev/null | head -n 1) ;;  # several: ls's order picks, as it always did
  *) fleet_rec=$fleet_recs ;;
esac
fleet_h=; [ -n "$fleet_rec" ] && fleet_h=$(sha256sum < "$fleet_rec")
echo "torch ${fleet_rec:-none} ${fleet_h:0:16}"
fleet_h=$(cat /etc/fleet/env.sh /etc/profile.d/fleet.sh 2>/dev/null | sha256sum)
echo "hook ${fleet_h:0:16}"
fleet_ni=${LD_LIBRARY_PATH:-}
fleet_ld_of interactive; fleet_i=$fleet_v
fleet_ld_of login; fleet_l=$fleet_v
echo "ld.noninteractive $fleet_ni"
echo "ld.interactive $fleet_i"
echo "ld.login $fleet_l"
fleet_libcuda "$fleet_ni"; echo "libcuda.noninteractive $fleet_r"
fleet_libcuda "$fleet_i"; echo "libcuda.interactive $fleet_r"
fleet_libcuda "$fleet_l"; echo "libcuda.login $fleet_r"
fleet_libcuda ""; echo "libcuda.bare $fleet_r"
fleet_h=$(shopt -s nullglob; cat /etc/ld.so.preload /etc/ld.so.conf /etc/ld.so.conf.d/*.conf 2>/dev/null | sha256sum)
echo "ld.files ${fleet_h:0:16}"
# each kind's whole relevant environment, as the probe's trace found it (facts.shells: the variables, the commands
# and where each python finds torch), as a digest per kind; line numbers are not part of it (a comment moves them)
declare -A fleet_env
fleet_kind=
while IFS= read -r line; do
  case $line in
    "@@shell "*) fleet_kind=${line#@@shell } ;;
    "@@value LD_LIBRARY_PATH="*|"@@unset LD_LIBRARY_PATH") ;;  # the ld.KIND parts
    "@@value "*|"@@unset "*|"@@cmd "*|"@@py "*) [ -n "$fleet_kind" ] && fleet_env[$fleet_kind]+=$line$'
' ;;
  esac
done <<< "$fleet_shells_out"
for fleet_kind in noninteractive interactive login bare; do
  fleet_h=$(printf '%s' "${fleet_env[$fleet_kind]-}" | sha256sum); echo "env.$fleet_kind ${fleet_h:0:16}"
done
# what torch loads beside itself: every distribution in its site-packages and the nvidia/* libraries there
if [ -n "$fleet_rec" ]; then
  fleet_site=${fleet_rec%/torch-*.dist-info/RECORD}
  fleet_h=$(shopt -s nullglob; cd "$fleet_site" 2>/dev/null && printf '%s
' *.dist-info nvidia/* | sha256sum)
  echo "packages ${fleet_h:0:16}"
else echo "packages none"; fi
