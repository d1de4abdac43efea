"""A plain SSH client (paramiko, not fleet's code) asking each kind of shell on the lent H200 what the user gets.

    python3 ask_kinds.py HOST PORT USER KEY   -> one JSON line per kind

Kinds: `ssh host cmd` (sshd's bash reads ~/.bashrc), a login shell (`bash -l -c`), an interactive shell
(`bash -i -c`, all of ~/.bashrc), and a bare process (`env -i`: no startup file). Each kind answers which
python3, python, pip and nvcc it runs, nvcc's release, CUDA_HOME and CUDA_VISIBLE_DEVICES, and what `python3`
says of torch: its file, torch.cuda.is_available() and the device count (or the import error); its sys.prefix and
VIRTUAL_ENV / CONDA_PREFIX where set (issue 45: an activated environment agrees with the python that runs).
"""
import json
import shlex
import sys

import paramiko

host, port, user, key = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
PY = ("import json,os,sys\n"
      "try:\n"
      " import torch; r={'torch': torch.__file__, 'version': torch.__version__, 'cuda': torch.cuda.is_available(),"
      " 'count': torch.cuda.device_count()}\n"
      "except Exception as e: r={'error': type(e).__name__ + ': ' + str(e)[:200]}\n"
      "r['python']=sys.executable; r['prefix']=sys.prefix\n"
      "r.update({k.lower(): os.environ[k] for k in ('VIRTUAL_ENV', 'CONDA_PREFIX') if k in os.environ})\n"
      "print('PY ' + json.dumps(r))\n")
BODY = ("for c in python3 python pip nvcc; do echo \"WHICH $c $(command -v $c 2>/dev/null)\"; done; "
        "echo \"NVCC $(nvcc --version 2>/dev/null | grep -o 'release [0-9.]*')\"; "
        "echo \"CUDA_HOME ${CUDA_HOME-unset}\"; echo \"CVD ${CUDA_VISIBLE_DEVICES-unset}\"; "
        "echo \"PIP $(pip --version 2>&1 | head -c 160)\"; "
        f"python3 -c {shlex.quote(PY)} 2>&1 | tail -1")
KINDS = {
    "ssh host cmd": BODY,
    "bash -l": f"bash -l -c {shlex.quote(BODY)}",
    "bash -i": f"setsid -w bash -i -c {shlex.quote(BODY)} </dev/null 2>/dev/null",
    "bare (env -i)": f"env -i PATH=/usr/bin:/bin HOME=/root bash -c {shlex.quote(BODY)}",
}
client = paramiko.SSHClient()
client.set_missing_host_key_policy(paramiko.AutoAddPolicy())   # the machine's own loopback sshd, new each lease
client.connect(host, port=port, username=user, key_filename=key, look_for_keys=False, allow_agent=False)
for kind, command in KINDS.items():
    _, out, err = client.exec_command(command, timeout=120)
    answer = {"kind": kind}
    for line in out.read().decode(errors="replace").splitlines():
        tag, _, rest = line.partition(" ")
        if tag == "WHICH":
            name, _, path = rest.partition(" ")
            answer[name] = path or None
        elif tag == "PY":
            try:
                answer["python3_torch"] = json.loads(rest)
            except ValueError:
                answer["python3_torch"] = rest
        elif tag in ("NVCC", "CUDA_HOME", "CVD", "PIP"):
            answer[tag.lower()] = rest
        elif line.strip():
            answer.setdefault("other", []).append(line[-200:])
    print(json.dumps(answer))
client.close()
