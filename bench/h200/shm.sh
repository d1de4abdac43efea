#!/usr/bin/env bash
# Issue 45 item 5 on the lent H200: the pod's /dev/shm made small by hand (a container's 64 MB default) after a
# converged apply; a real DataLoader with two workers run in each kind of shell by a plain SSH client; then
# `fleet health`, `fleet verify` and the facts; then /dev/shm put back to its size (always, by an EXIT trap) and
# the same again.
#
#   run from the project root on the H200, with .gpu carried (../shared/tools/real-gpu-prep.sh .gpu):
#   bash bench/h200/shm.sh          # writes $OUT/transcript.txt; tests/unit/test_real_h200_shm.py loads it from
#                                   # tests/data/h200-device/shm/
set -u
source tests/data/h200-device/lib.sh
SSH=(python3 bench/h200/ssh1.py 127.0.0.1 2222 root /tmp/fleet-sshd/client_ed25519)   # the device has no ssh client
# its size as df reads it (findmnt lists every mount stacked on /dev/shm: the lent machine has two)
SIZE=$(df -Pk /dev/shm | awk 'NR == 2 {print $2 "k"}')
trap 'mount -o remount,size="$SIZE" /dev/shm' EXIT
# The job: 16 samples of 16 MiB, batches of 4, two workers: each batch crosses /dev/shm from a worker (64 MiB).
cat > /tmp/fleet-shm-job.py <<'PY'
import torch
from torch.utils.data import DataLoader, Dataset


class Samples(Dataset):
    def __len__(self):
        return 16

    def __getitem__(self, i):
        return torch.zeros(4 * 1024 * 1024)


n = sum(batch.shape[0] for batch in DataLoader(Samples(), batch_size=4, num_workers=2))
print("dataloader ok", n)
PY
JOB='python3 /tmp/fleet-shm-job.py > /tmp/fleet-shm-job.out 2>&1; echo "exit $? $(grep -E "ok|Error|error" /tmp/fleet-shm-job.out | tail -n 1)"'
ask_job() {   # phase: the job in each kind, asked by a plain SSH client
  local kind cmd
  for kind in ssh login interactive; do
    case $kind in
      ssh) cmd=$JOB ;;
      login) cmd="bash -l -c $(printf %q "$JOB")" ;;
      interactive) cmd="setsid -w bash -i -c $(printf %q "$JOB") </dev/null 2>/dev/null" ;;
    esac
    printf -- '--- %s / %s (plain ssh): %s\n' "$1" "$kind" "$(timeout 300 "${SSH[@]}" "$cmd" 2>&1 | tail -n 1 | cut -c1-400)" >> "$T"
  done
}
facts_shm() { step bash -c "python3 -m fleet facts $(printf %q "$INV") | grep -E '^system\.resources\.'"; }
note "converge"
step F apply "$INV"
note "/dev/shm as the machine has it: $(df -Pk /dev/shm | tail -n 1)"
ask_job before
step F health "$INV" --set 'expect_gpus=1x H200'
facts_shm
mount -o remount,size=64m /dev/shm
note "/dev/shm made small by hand: $(df -Pk /dev/shm | tail -n 1)"
ask_job small
step F health "$INV" --set 'expect_gpus=1x H200'
step F verify "$INV"
facts_shm
mount -o remount,size="$SIZE" /dev/shm
note "/dev/shm put back: $(df -Pk /dev/shm | tail -n 1)"
ask_job restored
step F health "$INV" --set 'expect_gpus=1x H200'
facts_shm
