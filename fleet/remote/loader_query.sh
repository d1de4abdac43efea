#!/usr/bin/env bash
# fleet/remote/loader_query.sh (fleet/facts/loader.py QUERY).
# Run inside a shell of one kind, after its startup files (shells.py appends it to each traced shell's body).
# `fleet_ldq` prints the process's LD_PRELOAD and LD_LIBRARY_PATH as the loader sees them, the loader's search for
# libcuda.so.1 (LD_DEBUG's lines for that library, pid stripped), the trace's libcuda objects, and the real file
# (symlinks resolved) behind each. It walks LD_DEBUG's lines in its variable, as `while read ... <<< "$o"` would read
# them but without read's one system call a byte of a pipe.
fleet_ldq() {
  printf '@@ldvar LD_PRELOAD=%s\n' "${LD_PRELOAD-@unset@}"
  printf '@@ldvar LD_LIBRARY_PATH=%s\n' "${LD_LIBRARY_PATH-@unset@}"
  # shellcheck disable=SC1007  # t= is an empty local
  local o l p t= f=0
  o=$(LD_DEBUG=libs LD_TRACE_LOADED_OBJECTS=1 LD_PRELOAD="${LD_PRELOAD:+$LD_PRELOAD }libcuda.so.1" /bin/true 2>&1)
  o+=$'\n'
  while [ -n "$o" ]; do
    l=${o%%$'\n'*}; o=${o#*$'\n'}
    l=${l#*:$'\t'}
    case $l in
      "find library=libcuda.so.1"*) f=1 ;;
      "") [ -n "$t" ] && printf '@@ldfind %s\n' "$t"; f=0; t= ;;
    esac
    if [ "$f" = 1 ]; then
      case $l in *"trying file="*) t=$l ;; *) [ ${#l} -gt 300 ] && l="${l:0:200} ... ${l: -60}"; printf '@@ldfind %s\n' "$l" ;; esac
      continue
    fi
    case $l in
      *libcuda*" => /"*) p=${l#* => }; p=${p%% (0x*}; printf '@@ldobj %s\t%s\n' "$p" "$(readlink -f -- "$p" 2>/dev/null)" ;;
      *"/libcuda"*" (0x"*) p=${l#"${l%%[![:space:]]*}"}; p=${p%% (0x*}; printf '@@ldobj %s\t%s\n' "$p" "$(readlink -f -- "$p" 2>/dev/null)" ;;
      *"libcuda"*"cannot be preloaded"*) printf '@@ldmissing %s\n' "$l" ;;
    esac
  done
}
fleet_ldq
