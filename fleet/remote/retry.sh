#!/usr/bin/env bash
# fleet/remote/retry.sh (fleet.shell.RETRY_FN): one retry for a transient failure, in every snippet that downloads.
# This defines `fleet_retry WHAT COMMAND...`: runs COMMAND (its output streamed, and kept); where it fails with
# what a network blip says (a connection reset, refused or timed out, a name that could not be resolved for now, an
# HTTP 5xx or 429, an early EOF: the lines of git, curl, pip, uv and apt in TRANSIENT), it says so, naming the cause,
# and runs it again after 1, 2, 4 and 8 s (5 runs in all); a failure of any other kind (a 404, a wrong pin, a bad
# certificate) returns at once with its status, and the last transient one says it gave up. git, pip/uv, apt and
# curl are all run through it (fleet/resources: git, pip, apt, FETCH). A tool that retried by itself and says it
# ran out of its own retries (pip's last "Retrying (Retry(total=0, ...", uv's "failed after N retries": the lines
# in SELF_RETRIED) is not retried again: retries on retries made a blocked index cost 25 pip runs and ~52 s a
# command; the tool's own count (pip --retries, UV_HTTP_RETRIES) is then the one that holds.
# The case patterns below are fleet.shell.TRANSIENT and the grep -e patterns fleet.shell.SELF_RETRIED (a unit
# test holds the two equal).
fleet_retry() {
  local fleet_what=$1 fleet_n=1 fleet_rc fleet_log fleet_cause fleet_l
  shift
  fleet_log=$(mktemp 2>/dev/null) || { "$@"; return; }
  while :; do
    "$@" 2>&1 | tee -- "$fleet_log"; fleet_rc=${PIPESTATUS[0]}
    [ "$fleet_rc" != 0 ] || { rm -f -- "$fleet_log"; return 0; }
    fleet_cause=
    while IFS= read -r fleet_l; do
      case $fleet_l in *'Connection reset by peer'*|*'Connection refused'*|*'Connection timed out'*|*'Operation timed out'*|*'timed out'*|*'Temporary failure in name resolution'*|*'Could not resolve host'*|*'early EOF'*|*'RPC failed'*|*'unexpected disconnect'*|*'Recv failure'*|*'Empty reply from server'*|*'The requested URL returned error: 5'*|*'The requested URL returned error: 429'*|*'Remote end closed'*|*IncompleteRead*|*ReadTimeoutError*|*ProtocolError*|*'502 Bad Gateway'*|*'503 Service Unavailable'*|*'504 Gateway Time'*|*'500 Internal Server Error'*|*'Too Many Requests'*|*'Hash Sum mismatch'*|*'Connection failed'*|*'Network is unreachable'*|*'Could not connect to'*|*'error sending request'*) fleet_cause=$fleet_l;; esac
    done < <(tail -n 40 -- "$fleet_log")
    if [ -z "$fleet_cause" ]; then rm -f -- "$fleet_log"; return "$fleet_rc"; fi
    fleet_cause=${fleet_cause:0:200}
    if grep -qE -e 'Retry\(total=0,' -e 'failed after [0-9]+ retr' -- "$fleet_log"; then
      echo "fleet: $fleet_what failed with a network error after its own retries, not retried again ($fleet_cause)"
      rm -f -- "$fleet_log"; return "$fleet_rc"
    fi
    if [ "$fleet_n" -ge 5 ]; then
      echo "fleet: $fleet_what failed $fleet_n times with a network error, giving up (last: $fleet_cause)"
      rm -f -- "$fleet_log"; return "$fleet_rc"
    fi
    echo "fleet: $fleet_what failed with a network error ($fleet_cause); retry $((fleet_n + 1)) of 5 in $((1 << (fleet_n - 1))) s"
    sleep $((1 << (fleet_n - 1))); fleet_n=$((fleet_n + 1))
  done
}
