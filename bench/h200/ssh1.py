"""One command over SSH with paramiko, as `ssh -p PORT -i KEY USER@HOST CMD` runs it (the lent H200 has no ssh client):
its output, then its exit status. A plain client, not fleet's code: what a user's ssh would see.

    python3 bench/h200/ssh1.py HOST PORT USER KEY COMMAND
"""
import sys

import paramiko

host, port, user, key, command = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
client = paramiko.SSHClient()
client.set_missing_host_key_policy(paramiko.AutoAddPolicy())   # the machine's own loopback sshd, new each lease
client.connect(host, port=port, username=user, key_filename=key, look_for_keys=False, allow_agent=False)
channel = client.get_transport().open_session()
channel.set_combine_stderr(True)
channel.exec_command(command)
with channel.makefile("rb") as out:
    sys.stdout.write(out.read().decode(errors="replace"))
status = channel.recv_exit_status()
client.close()
sys.exit(status)
