#!/usr/bin/env bash
# fleet/remote/fingerprint_trace.sh: the fingerprint's parts the shells' trace gives, then every part printed in one
# fixed order (fleet/facts/fingerprint.py). Runs after fingerprint.sh (its functions and $fleet_p1, $fleet_p3,
# $fleet_p5, $fleet_ni, $fleet_r_*) and after $fleet_shells_out holds the trace (fleet.facts.shells.CAPTURED).
# shellcheck disable=SC2154  # fleet_shells_out and the fleet_p*/fleet_r* parts: set by the programs before this
# what the trace gives: one pass over it (facts.shells): each kind's LD_LIBRARY_PATH as its shell ends up with it
# (the last value set; unset keeps it), and each kind's whole relevant environment (the variables, every variable of
# the families a GPU job reads and those NCCL's config files give, the commands and where each python finds torch)
# as a digest per kind; line numbers are not part of it (a comment moves them), nor each kind's limits (@@limit: a
# limit is only ever a note of verify, never its failure, and the facts say it at every probe)
declare -A fleet_env fleet_ldk
fleet_kind=
# its lines split in the shell's memory, not read: read takes one system call a byte of the here-string's pipe, and
# this is the fingerprint's only work between the trace and the gate (empty lines, which split drops, match no case)
fleet_ifs=$IFS; IFS=$'\n'; set -f
# shellcheck disable=SC2206  # split on newlines alone, globbing off (set -f): one element a line
fleet_tl=($fleet_shells_out); set +f; IFS=$fleet_ifs
for line in "${fleet_tl[@]}"; do
  case $line in
    "@@shell "*) fleet_kind=${line#@@shell } ;;
    "@@value LD_LIBRARY_PATH="*) [ -z "$fleet_kind" ] || fleet_ldk[$fleet_kind]=${line#@@value LD_LIBRARY_PATH=} ;;  # the ld.KIND parts
    "@@unset LD_LIBRARY_PATH") ;;
    "@@value "*|"@@unset "*|"@@fam "*|"@@cmd "*|"@@py "*) [ -n "$fleet_kind" ] && fleet_env[$fleet_kind]+=$line$'\n' ;;
    "@@nccl "*) [ -n "$fleet_kind" ] && fleet_env[$fleet_kind]+=${line%%$'\t'*}$'\n' ;;   # NCCL's config files' values, not their lines
  esac
done
fleet_i=${fleet_ldk[interactive]-} fleet_l=${fleet_ldk[login]-}
fleet_libcuda "$fleet_i"; fleet_r_i=$fleet_r
fleet_libcuda "$fleet_l"; fleet_r_l=$fleet_r
# the four digests by one sha256sum (a here-string ends the text with the newline its last line has; the empty
# text's digest is the empty input's)
fleet_p4='' fleet_n=0 fleet_empty=''; command -v sha256sum >/dev/null && fleet_empty=e3b0c44298fc1c14
declare -a fleet_hs=()
fleet_hs_args=()
for fleet_kind in noninteractive interactive login bare; do
  [ -n "${fleet_env[$fleet_kind]-}" ] && fleet_hs_args+=("/dev/fd/$((3 + fleet_n))")
  fleet_n=$((fleet_n + 1))
done
if [ "${#fleet_hs_args[@]}" -gt 0 ]; then
  while IFS=' ' read -r fleet_h fleet_f; do fleet_hs[${fleet_f#/dev/fd/}]=${fleet_h:0:16}; done < <(sha256sum -- "${fleet_hs_args[@]}" \
    3<<< "${fleet_env[noninteractive]%$'\n'}" 4<<< "${fleet_env[interactive]%$'\n'}" \
    5<<< "${fleet_env[login]%$'\n'}" 6<<< "${fleet_env[bare]%$'\n'}")
fi
fleet_n=3
for fleet_kind in noninteractive interactive login bare; do
  fleet_h=${fleet_hs[$fleet_n]-}; [ -n "${fleet_env[$fleet_kind]-}" ] || fleet_h=$fleet_empty
  fleet_p4+=${fleet_p4:+$'\n'}"env.$fleet_kind $fleet_h"
  fleet_n=$((fleet_n + 1))
done
printf '%s\n' "$fleet_p1" "ld.noninteractive $fleet_ni" "ld.interactive $fleet_i" "ld.login $fleet_l" \
  "libcuda.noninteractive $fleet_r_ni" "libcuda.interactive $fleet_r_i" "libcuda.login $fleet_r_l" \
  "libcuda.bare $fleet_r_bare" "$fleet_p3" "$fleet_p4" "$fleet_p5"
