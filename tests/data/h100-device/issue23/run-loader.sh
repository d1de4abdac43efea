# Issue 23, the loader helper's two further traps on the lent H100, run after run.sh on the same machine (same
# converged host): a compat line at the top of /etc/ld.so.conf (before its include, so first in the ld cache),
# and a stub libcuda in /etc/ld.so.preload (every process; CUDA_ERROR_STUB_LIBRARY 34). Each: ask every kind of
# process (ask.py, paramiko), fleet facts (facts.loader names the file), apply --check --diff, apply, ask again.
set -u
export PYTHONUNBUFFERED=1
T=$OUT/transcript-loader.txt
source .gpu/env.sh > "$OUT/setup-loader.txt" 2>&1 || { cat "$OUT/setup-loader.txt"; exit 1; }
INV=$GPU_INV; FACTS=/tmp/gpu-inventory/facts/h100.json
step() { printf '\n$ %s\n' "$*" >> "$T"; "$@" >> "$T" 2>&1; printf '[exit %s]\n' "$?" >> "$T"; }
note() { printf '\n# %s\n' "$*" >> "$T"; }
F() { local sub=$1; shift; python3 -m fleet "$sub" --accept-new-host-keys "$@"; }
ask() { step env PYTHONPATH=/tmp/fleet-site python3 /tmp/issue23/ask.py 127.0.0.1 2222 root /tmp/fleet-sshd/client_ed25519; }
kinds() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))["loader"]; [print(k, v["libcuda"], v["version"], v["step"], v["set_by"], "stub" if v["stub"] else "") for k, v in d["kinds"].items()]' "$FACTS" >> "$T" 2>&1; }
C=/usr/local/cuda-13.0/compat
S=/usr/local/cuda-13.0/targets/x86_64-linux/lib/stubs
note "facts.loader on the converged host (after run.sh)"
step F facts "$INV"; kinds; cp "$FACTS" "$OUT/facts-loader-0.json"
note "LOADER TRAP A: a compat line at the top of /etc/ld.so.conf, ldconfig"
sed -i "1i $C" /etc/ld.so.conf && ldconfig
step bash -c "head -3 /etc/ld.so.conf; ldconfig -p | grep 'libcuda.so.1 '"
ask
step F facts "$INV"; kinds; cp "$FACTS" "$OUT/facts-loader-A-before.json"
step F apply "$INV" --check --diff
step F apply "$INV"
step bash -c "head -3 /etc/ld.so.conf; ldconfig -p | grep 'libcuda.so.1 '"
ask
note "LOADER TRAP B: a stub libcuda in /etc/ld.so.preload (the toolkit's stub where there is one, else one built like it)"
if [ ! -e "$S/libcuda.so" ]; then
  mkdir -p "$S" && printf 'int cuInit(unsigned f){return 34;} int cuDriverGetVersion(int *v){*v=13000;return 0;}\n' > /tmp/stub.c &&
    gcc -shared -fPIC -Wl,-soname,libcuda.so.1 -o "$S/libcuda.so" /tmp/stub.c && note "built a stub (no toolkit stub here)"
fi
echo "$S/libcuda.so" >> /etc/ld.so.preload
step cat /etc/ld.so.preload
ask
step F facts "$INV"; kinds; cp "$FACTS" "$OUT/facts-loader-B-before.json"
step F apply "$INV" --check --diff
step F apply "$INV"
step cat /etc/ld.so.preload
ask
note "a second apply changes nothing"
F apply "$INV" --json > "$OUT/apply-loader-noop.json" 2>> "$T"; printf '[exit %s]\n' "$?" >> "$T"
step F facts "$INV"; kinds; cp "$FACTS" "$OUT/facts-loader-after.json"
step ls -R /var/lib/fleet/aside
