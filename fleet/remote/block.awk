BEGIN { b = ENVIRON["b"]; e = ENVIRON["e"]; op = ENVIRON["fleet_do"] }
{ l = $0; sub(/\r$/, "", l); if (op == "keep") $0 = l }
l == b { if (on && op != "keep") printf "%s", buf; on = 1; buf = $0 ORS; next }
on { buf = buf $0 ORS
     if (l == e) { if (op == "keep") printf "%s", buf
                    if (op == "replace" && !done) printf "%s", want()
                    done = 1; on = 0; buf = "" }
     next }
op != "keep" { print }
END { if (on && op != "keep") printf "%s", buf }
function want(  w, line) { while ((getline line < ENVIRON["wantf"]) > 0) w = w line ORS; return w }