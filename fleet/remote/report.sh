#!/usr/bin/env bash
# fleet/remote/report.sh (fleet script --report, fleet/workflows/script.py): fleet_report EXIT sends the run's
# report after every run, however it ended, and is never the script's failure. The sender is
# fleet/remote/report_send.py, whose text is in $fleet_report_program; its target, host name, fleet version and
# verify record path are in fleet_report_target, fleet_report_host, fleet_report_version and fleet_report_verify.
# The token is FLEET_REPORT_TOKEN in the pod's own environment: the sender reads it there, no argv carries it.
# The GPUs' health: fleet_report_health holds the sections `fleet health` sends (fleet/workflows/health.py); their
# framed output reaches the sender on its stdin (at most 256 KB, a minute), and the controller judges it
# (fleet/store/pod_health.py) as `fleet health` does.
fleet_report() {
  local py
  # shellcheck disable=SC2154 # fleet_judged (shell.TRUST_FN) and the fleet_report_* values come before it
  if ! py=$(command -v python3) || ! fleet_judged "$py" 2>/dev/null; then
    printf 'report: not sent: no python3 that root may run here\n'
    return 0
  fi
  # shellcheck disable=SC2154
  { timeout 60 bash -c "$fleet_report_health" </dev/null 2>/dev/null | head -c 262144; } |
    (cd / && "$py" -I -c "$fleet_report_program" "$fleet_report_target" "$fleet_report_host" \
      "$fleet_report_version" "$1" "${fleet_changed:-0}" "$fleet_report_verify") || true
}
