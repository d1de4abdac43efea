/^\++@@.*@@ (alias|unalias|hash) .*(python|pip|nvcc)/ {
  dd = match($0, /[^+]/) - 1; r = substr($0, dd + 3)
  i = index(r, "@@"); f = substr(r, 1, i - 1); r = substr(r, i + 2); n = substr(r, 1, index(r, "@@") - 1)
  c = substr($0, index($0, "@@ ") + 3); gsub(/\t/, " ", c)
  v = ""; for (k = 2; k < dd; k++) v = v (v == "" ? "" : ">") stack[k]
  if (c ~ /^(alias|unalias|hash) /) printf "@@def\t%d\t%s\t%s\t%s\t%s\n", dd - 1, f, n, substr(c, 1, 300), v
}

/^\++@@/ {
  d = match($0, /[^+]/) - 1; rest = substr($0, d + 3)
  i = index(rest, "@@"); file = substr(rest, 1, i - 1); rest = substr(rest, i + 2)
  i = index(rest, "@@"); line = substr(rest, 1, i - 1); rest = substr(rest, i + 2)
  i = index(rest, "@@"); ld = substr(rest, 1, i - 1); rest = substr(rest, i + 2)
  i = index(rest, "@@ "); vs = substr(rest, 1, i - 1); cmd = substr(rest, i + 3)
  gsub(/\t/, " ", cmd)
  if (have && (ld != pld || vs != pvs)) {
    via = ""; for (k = 2; k < pd; k++) via = via (via == "" ? "" : ">") stack[k]
    if (ld != pld)
      printf "@@change\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", pd - 1, pf, pl, pld, ld, substr(pcmd, 1, 200), via
    if (vs != pvs) {
      n = split(pvs, a, "@%"); split(vs, b, "@%")
      for (k = 1; k <= n; k++) if (a[k] != b[k]) last[k] = (pd - 1) "\t" pf "\t" pl "\t" substr(pcmd, 1, 200) "\t" via
    }
  }
  stack[d] = file ":" line; have = 1; pd = d; pf = file; pl = line; pld = ld; pvs = vs; pcmd = cmd; next
}
/^@@(value|unset|cmd|py) / { print }
/^@@def\t/ { print }
/^@@ld(var|find|obj|missing) / { print }
END { for (k in last) printf "@@set\t%d\t%s\n", k, last[k] }
