# Run chk.py as `ssh host cmd` gets it (this shell) and as a fresh interactive shell (`bash -i`).
py=/opt/torch/.venv/bin/python
printf 'ssh host cmd : '; $py /tmp/issue11/chk.py
printf 'bash -i      : '
env -i HOME=/root TERM=dumb PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  setsid -w bash -i -c "$py /tmp/issue11/chk.py" </dev/null 2>/dev/null
