set -u
fleet_changed=0
fleet_applied=''
fleet_first() { printf '%s\n' "$1" | sed -n '/^@@diff@@$/q;/./{p;q}'; }
fleet_tail() { printf '%s\n' "$1" | grep -v '^[[:space:]]*$' | tail -n 8 | tr '\n' '|' | sed 's/|$//;s/|/ | /g'; }
# fleet_report EXIT sends the run's report (fleet script --report: fleet/remote/report.sh defines it after this)
fleet_report() { :; }
fleet_end() { fleet_report "$1"; printf 'changed=%d\n' "$fleet_changed"; exit "$1"; }
fleet_fail() { printf 'FAILED  %s: %s\n' "$1" "$2" >&2; fleet_end 1; }
# fleet_task LABEL N: run check N; apply N only when the check answers 10 (not in state).
fleet_task() {
  local label=$1 n=$2 out rc
  out=$("fleet_check_$n" 2>&1 </dev/null); rc=$?
  case $rc in
    0) printf 'ok      %s\n' "$label"; return 0 ;;
    10) printf 'change  %s: %s\n' "$label" "$(fleet_first "$out")" ;;
    *) fleet_fail "$label" "the check could not run (exit $rc): $(fleet_tail "$out")" ;;
  esac
  "fleet_apply_$n" </dev/null 2>&1 | sed -u 's/^/        /'
  rc=${PIPESTATUS[0]}
  [ "$rc" -eq 0 ] || fleet_fail "$label" "apply failed (exit $rc)"
  fleet_changed=$((fleet_changed + 1))
  fleet_applied="$fleet_applied $n"
}
# fleet_confirm LABEL N: after every apply, a changed task must now check in state.
fleet_confirm() {
  local out rc
  out=$("fleet_check_$2" 2>&1 </dev/null); rc=$?
  [ "$rc" -eq 0 ] || fleet_fail "$1" "applied, but the check still says: $(fleet_first "$out")"
}
