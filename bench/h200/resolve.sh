#!/usr/bin/env bash
# Issue 45 item 4 on the lent H200: what `python3` and `import torch` resolve to, whatever the mechanism.
#
#   run from the project root on the H200, with .gpu carried (../shared/tools/real-gpu-prep.sh .gpu):
#   bash bench/h200/resolve.sh
#
# 1. converge (`fleet apply`), then every kind of shell asked by a plain SSH client (ask_kinds.py);
# 2. each trap set by hand as a user would (the TRAPS table below: an alias, a shell function, `hash -p`, a PATH line,
#    PYTHONPATH to an unbuilt source tree, PYTHONHOME, a .pth line, a user-site torch, a venv and a conda-like
#    environment activated after fleet's guard), then every kind asked by the plain SSH client, then fleet asked
#    (`fleet verify`, or `fleet apply` for an activation: the apply that moves fleet's guard below it), each failed
#    check of the host's own verify record printed as one `CHECK {json}` line, and the trap undone;
# 3. a last `fleet verify` on the host put back (passes).
# Writes transcript.txt and setup.txt under $OUT; tests/unit/test_h200_resolve_records.py loads them from
# tests/data/h200-device/resolve/.
set -u
source tests/data/h200-device/lib.sh
SRC=/root/pytorch-src
# a name hashed to another program (the system's python3 hashed by its bare name still finds the venv through PATH:
# CPython's getpath searches PATH for argv[0], which bash sets to the bare name)
WRAPPER=/opt/resolve-trap/python3-system
note "first apply (converge)"
step F apply "$INV"
ask "converged"
VENV=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["python"]["env"])' "$FACTS" 2>/dev/null)
[ -n "$VENV" ] || VENV=$(bash -c '. ~/.bashrc >/dev/null 2>&1; python3 -c "import sys; print(sys.prefix)"')
SITE=$(ls -d "$VENV"/lib/python3*/site-packages | head -1)
USER_SITE=$(/usr/bin/python3 -c 'import site; print(site.getusersitepackages())')
note "fleet's venv: $VENV ($SITE); the system python's user site: $USER_SITE"
checks() {   # the failed checks of the host's own verify record, one JSON line each
  python3 - >> "$T" 2>&1 <<'PY'
import json
r = json.load(open("/var/lib/fleet/verify.json"))
for c in r.get("checks", []):
    if not c.get("passed") or c["name"].startswith("user_commands_"):
        print("CHECK " + json.dumps({"name": c["name"], "passed": c.get("passed"), "detail": c.get("detail")}))
PY
}
# name|file|command fleet is asked with|setup|the lines appended (\n between lines)|undo
TRAPS=(
  "alias|/root/.bashrc|verify||alias python3=/usr/bin/python3|"
  "function|/root/.bashrc|verify||python3() {\n  /usr/bin/python3 \"\$@\"\n}|"
  "hash|/root/.bashrc|verify|mkdir -p /opt/resolve-trap && printf '%s\\n' '#!/bin/sh' 'exec /usr/bin/python3 \"\$@\"' > $WRAPPER && chmod 755 $WRAPPER|hash -p $WRAPPER python3|rm -rf /opt/resolve-trap"
  "PATH|/root/.bashrc|verify||export PATH=/usr/bin:\$PATH|"
  "PYTHONPATH|/root/.profile|verify|mkdir -p $SRC/torch && echo 'from torch._C import *' > $SRC/torch/__init__.py|export PYTHONPATH=$SRC|rm -rf $SRC"
  "PYTHONHOME|/root/.profile|verify||export PYTHONHOME=/usr/lib/nothing-here|"
  "pth|$SITE/zz-pytorch-src.pth|verify|mkdir -p $SRC/torch && echo 'from torch._C import *' > $SRC/torch/__init__.py|# pip install -e by hand\nimport sys; sys.path.insert(0, '$SRC')|rm -rf $SRC $SITE/zz-pytorch-src.pth"
  "user-site|/root/.profile|verify|mkdir -p $USER_SITE/torch && : > $USER_SITE/torch/__init__.py|export PATH=/usr/bin:\$PATH|rm -rf $USER_SITE/torch"
  "venv-activated|/root/.bashrc|apply|/usr/bin/python3 -m venv --without-pip /opt/projenv|. /opt/projenv/bin/activate|rm -rf /opt/projenv"
  "conda-activated|/root/.bashrc|apply|/usr/bin/python3 -m venv --without-pip /opt/condaenv && mkdir -p /opt/condaenv/etc && printf '%s\\n' 'export CONDA_PREFIX=/opt/condaenv CONDA_DEFAULT_ENV=condaenv CONDA_SHLVL=1' 'export PATH=/opt/condaenv/bin:\$PATH' > /opt/condaenv/etc/activate.sh|. /opt/condaenv/etc/activate.sh|rm -rf /opt/condaenv"
)
for row in "${TRAPS[@]}"; do
  IFS='|' read -r name file how setup lines undo <<< "$row"
  note "trap $name: appended to $file (from line $(( $( (wc -l < "$file") 2>/dev/null || echo 0) + 1 )))"
  [ -z "$setup" ] || eval "$setup" >> "$T" 2>&1
  touch "$file"; cp -p "$file" "$file.resolve"
  printf '%b\n' "$lines" >> "$file"
  sed 's/^/    | /' "$file" | tail -n 4 >> "$T"
  ask "trap $name"
  step F "$how" "$INV"
  checks
  mv -f "$file.resolve" "$file"
  [ -z "$undo" ] || eval "$undo"
done
note "every trap undone: verify again"
step F verify "$INV"
ask "put back"
note "done"
