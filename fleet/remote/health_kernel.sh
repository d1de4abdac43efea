#!/usr/bin/env bash
# fleet/remote/health_kernel.sh (fleet/facts/health.py XID): the kernel log since boot: dmesg (the ring buffer), else
# /dev/kmsg read without blocking, else the journal's kernel messages of this boot. Only Xid lines and "fallen off the
# bus" come back, the last 100, with how many lines were read (a log that reads as empty is not a clean one).
# shellcheck disable=SC2154,SC2086  # t: set by the line before this, empty or the words `timeout 30`
# one awk: how many lines were read, then the last 100 Xid / off-the-bus lines
xids() { awk '/NVRM: Xid|fallen off the bus/ { l[n++] = $0 } END { print "@@lines " NR; for (i = (n > 100 ? n - 100 : 0); i < n; i++) print l[i] }'; }
if k=$(dmesg 2>/dev/null) && [ -n "$k" ]; then echo '@@via dmesg'
elif [ -r /dev/kmsg ] && k=$($t dd if=/dev/kmsg iflag=nonblock bs=65536 2>/dev/null; true) && [ -n "$k" ]; then echo '@@via kmsg'
elif command -v journalctl >/dev/null 2>&1 && k=$($t journalctl -k -b -q --no-pager 2>/dev/null) && [ -n "$k" ]; then echo '@@via journal'
else echo '@@via unreadable'; exit 0; fi
printf '%s\n' "$k" | xids
