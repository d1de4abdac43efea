# main as it stood at this session's start (638870a) on the lent H200 over real SSH: the "before" figures of
# issues 34 and 35. Converge; time the no-op, facts and run -- true (9 interleaved rounds); the bytes of the
# no-op's one command; then issue 35's three real traps set by hand, each followed by apply and a plain SSH
# client asking every kind of shell what it gets. Writes transcript.txt and timings.txt under $OUT.
set -u
source tests/data/h200-device/lib.sh
note "first apply"
step F apply "$INV"
step F apply "$INV"
record_bytes
rounds 9
ask "converged, no trap"
note "TRAP 1 (issue 35): CUDA_VISIBLE_DEVICES=1 at the top of ~/.bashrc (copied from an 8-GPU box)"
cp ~/.bashrc /tmp/bashrc.orig
{ echo 'export CUDA_VISIBLE_DEVICES=1'; cat /tmp/bashrc.orig; } > ~/.bashrc
ask "trap 1 set"
step F apply "$INV"
step F apply "$INV" --check --detailed-exitcode
step F verify "$INV"
cp /tmp/bashrc.orig ~/.bashrc
note "TRAP 2 (issue 35): CUDA_VISIBLE_DEVICES emptied in /etc/profile.d (login shells only)"
echo 'export CUDA_VISIBLE_DEVICES=' > /etc/profile.d/zz-gpus.sh
ask "trap 2 set"
step F apply "$INV"
step F verify "$INV"
rm -f /etc/profile.d/zz-gpus.sh
note "TRAP 3 (issue 35): an older image's toolkit first on PATH, its CUDA_HOME at the end of ~/.bashrc (the 12.4 nvcc is a stand-in script printing 12.4's banner: the machine has only 13.0; what is tested is PATH's choice)"
mkdir -p /usr/local/cuda-12.4/bin
printf '#!/bin/sh\necho "nvcc: NVIDIA (R) Cuda compiler driver (stand-in)"\necho "Cuda compilation tools, release 12.4, V12.4.131"\n' > /usr/local/cuda-12.4/bin/nvcc
chmod 755 /usr/local/cuda-12.4/bin/nvcc
printf 'export PATH=/usr/local/cuda-12.4/bin:$PATH\nexport CUDA_HOME=/usr/local/cuda-12.4\n' >> ~/.bashrc
ask "trap 3 set"
step F apply "$INV"
ask "trap 3 after apply"
step F verify "$INV"
cp /tmp/bashrc.orig ~/.bashrc; rm -rf /usr/local/cuda-12.4
note "TRAP 4 (ours): pip uninstall of a venv CUDA library; is the verdict reused?"
step /opt/torch/.venv/bin/python -m pip list 2>/dev/null
tail -3 "$OUT/timings.txt" >/dev/null
grep -E "^median" "$T"
tail -60 "$T"
