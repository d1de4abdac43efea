
BEGIN { n = split(ENVIRON["fleet_want"], w, " "); for (i = 1; i <= n; i++) want[w[i]] = 1
        m = split(ENVIRON["fleet_hold"], h, " "); for (i = 1; i <= m; i++) hold[h[i]] = 1 }
/^Package: / { p = $2; next }
/^Status: / && (p in want) { seen[p]++; if ($3 == "ok" && $4 == "installed") { ok[p] = 1; if ($2 == "hold") held[p] = 1 } }
END { for (p in want) if (!(p in ok) || seen[p] != 1) exit 1
      for (p in hold) if (!(p in held)) exit 1 }
