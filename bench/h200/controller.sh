# Where the controller's time goes on the lent H200 for a converged host: each of `fleet run -- true`, the no-op
# apply and `fleet facts` 3 times under bench/_fleet_cprofile.py (CPU of every thread, summed) and under
# bench/_fleet_phases.py, plus their wall and CPU (bash's time). Writes controller.txt and cprofile-*.txt.
set -u
source tests/data/h200-device/lib.sh
F apply "$INV" >> "$T" 2>&1; F apply "$INV" >> "$T" 2>&1
O=$OUT/controller.txt
for i in 1 2 3; do
  for what in run apply facts; do
    case $what in run) args="run $INV -q -- true";; apply) args="apply $INV -q";; facts) args="facts $INV";; esac
    { TIMEFORMAT="$what wall %R user %U sys %S"; time python3 -m fleet $args >/dev/null 2>&1; } 2>> "$O"
    python3 bench/_fleet_cprofile.py "$OUT/cprofile-$what.txt" $args >/dev/null 2>&1
    echo "$what cprofile: $(head -1 "$OUT/cprofile-$what.txt")" >> "$O"
  done
done
for what in apply facts; do
  python3 bench/_fleet_phases.py $what "$INV" $( [ $what = apply ] && echo -q ) 2>&1 >/dev/null | grep '^@@phases' | sed "s/^/$what /" >> "$O"
done
cat "$O"
