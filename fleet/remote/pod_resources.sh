#!/usr/bin/env bash
# fleet/remote/pod_resources.sh (fleet/facts/system.py RESOURCES): what a GPU job takes from the pod besides the GPU
# (issue 45): /dev/shm's size and free space (DataLoader workers and NCCL's shared-memory transport live there), the
# session's memlock and open-files limits (the ones `ssh host cmd` and a login shell get from sshd's PAM session),
# and the container's memory limit (cgroup v2 memory.max of this process's cgroup, else v1's
# memory.limit_in_bytes). One df; the rest are builtins and file reads.
if out=$(df -Pk /dev/shm 2>/dev/null) && [[ $out == *$'\n'* ]]; then printf 'shm %s\n' "${out#*$'\n'}"
else echo 'shm none'; fi
printf 'memlock '; ulimit -l
printf 'nofile '; ulimit -n
cg=
if [ -r /proc/self/cgroup ]; then
  while IFS= read -r line; do case $line in 0::*) cg=${line#0::};; esac; done </proc/self/cgroup
fi
for f in "/sys/fs/cgroup${cg%/}/memory.max" /sys/fs/cgroup/memory.max /sys/fs/cgroup/memory/memory.limit_in_bytes; do
  if [ -r "$f" ] && read -r v <"$f"; then printf 'memory_limit %s %s\n' "$v" "$f"; break; fi
done
true
