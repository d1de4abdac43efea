"""A plain SSH client (paramiko, not fleet's code) asking each kind of process on the H100 what it loads.

    python3 ask.py HOST PORT USER KEY   -> one line per kind: kind, then chk.py's answer

Kinds: `ssh host cmd` (the command as sshd runs it: bash reads ~/.bashrc), a login shell (`bash -l -c`: bash reads
/etc/profile and the first of ~/.bash_profile, ~/.bash_login, ~/.profile), an interactive shell (`bash -i -c`, all
of ~/.bashrc), and a bare process (`env -i`: no startup file, as services, cron jobs and docker exec start).
"""
import sys

import paramiko

host, port, user, key = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
py = "/opt/torch/.venv/bin/python /tmp/issue23/chk.py"
KINDS = {
    "ssh host cmd": py,
    "bash -l": f"bash -l -c '{py}'",
    "bash -i": f"setsid -w bash -i -c '{py}' </dev/null 2>/dev/null",
    "bare (env -i)": f"env -i PATH=/usr/bin:/bin HOME=/root {py}",
}
client = paramiko.SSHClient()
client.set_missing_host_key_policy(paramiko.AutoAddPolicy())   # the machine's own loopback sshd, new each lease
client.connect(host, port=port, username=user, key_filename=key, look_for_keys=False, allow_agent=False)
for kind, command in KINDS.items():
    _, out, err = client.exec_command(command, timeout=120)
    text = out.read().decode().strip().splitlines()
    print(f"{kind:14} {text[-1] if text else 'no answer: ' + err.read().decode().strip()[-200:]}")
client.close()
