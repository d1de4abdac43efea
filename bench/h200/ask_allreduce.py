"""A plain SSH client (paramiko, not fleet's code) running a user's own all-reduce in each kind of shell on a lent
multi-GPU H200, as a user types it: `python3 -c ...` with torch.multiprocessing over every GPU (NCCL, 1 GiB fp32,
5 timed iterations).

    python3 ask_allreduce.py HOST PORT USER KEY   -> one JSON line per kind: {kind, busbw, gpus, nccl} or {kind, error}

Kinds: `ssh host cmd`, a login shell (`bash -l -c`), an interactive shell (`bash -i -c`). `nccl`: the NCCL_*
variables that kind's python had. NVLink multicast stays as the machine has it (never unset here).
"""
import json
import shlex
import sys

import paramiko

host, port, user, key = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
PY = r"""
import json, os, socket, time
import torch, torch.distributed as dist, torch.multiprocessing as mp

def rank(r, n, port):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.cuda.set_device(r)
    dist.init_process_group("nccl", rank=r, world_size=n)
    x = torch.ones(1 << 28, device="cuda")
    for _ in range(3):
        dist.all_reduce(x)
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(5):
        dist.all_reduce(x)
    torch.cuda.synchronize()
    t = (time.perf_counter() - start) / 5
    if r == 0:
        print("AR " + json.dumps({"busbw": round(x.numel() * 4 / t / 1e9 * 2 * (n - 1) / n, 1), "gpus": n,
                                  "nccl": {k: v for k, v in os.environ.items() if k.startswith("NCCL_")}}))
    dist.destroy_process_group()

if __name__ == "__main__":
    s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close()
    n = torch.cuda.device_count()
    mp.spawn(rank, args=(n, port), nprocs=n)
"""
BODY = f"cd /tmp && printf %s {shlex.quote(PY)} > /tmp/user_allreduce.py && python3 /tmp/user_allreduce.py 2>&1 | tail -3"
KINDS = {"ssh host cmd": BODY, "bash -l": f"bash -l -c {shlex.quote(BODY)}",
         "bash -i": f"setsid -w bash -i -c {shlex.quote(BODY)} </dev/null 2>/dev/null"}
client = paramiko.SSHClient()
client.set_missing_host_key_policy(paramiko.AutoAddPolicy())   # the machine's own loopback sshd, new each lease
client.connect(host, port=port, username=user, key_filename=key, look_for_keys=False, allow_agent=False)
for kind, command in KINDS.items():
    _, out, _ = client.exec_command(command, timeout=300)
    text = out.read().decode(errors="replace")
    line = next((l for l in text.splitlines() if l.startswith("AR ")), None)
    print(json.dumps({"kind": kind, **json.loads(line[3:])} if line else {"kind": kind, "error": text[-300:]}))
client.close()
