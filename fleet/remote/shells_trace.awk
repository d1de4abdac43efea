/^\++@@.*@@ (alias|unalias|hash) .*(python|pip|nvcc)/ {
  dd = match($0, /[^+]/) - 1; r = substr($0, dd + 3)
  i = index(r, "@@"); f = substr(r, 1, i - 1); r = substr(r, i + 2); n = substr(r, 1, index(r, "@@") - 1)
  c = substr($0, index($0, "@@ ") + 3); gsub(/\t/, " ", c)
  v = ""; for (k = 2; k < dd; k++) v = v (v == "" ? "" : ">") stack[k]
  if (c ~ /^(alias|unalias|hash) /) printf "@@def\t%d\t%s\t%s\t%s\t%s\n", dd - 1, f, n, substr(c, 1, 300), v
}

function words(s, w,    n, i, c, q, in_w, cur) {
  n = 0; cur = ""; q = 0; in_w = 0
  for (i = 1; i <= length(s); i++) {
    c = substr(s, i, 1)
    if (c == "'") { q = !q; in_w = 1; continue }
    if (c == "\\" && !q) { i++; cur = cur substr(s, i, 1); in_w = 1; continue }
    if (c == " " && !q) { if (in_w) w[++n] = cur; cur = ""; in_w = 0; continue }
    cur = cur c; in_w = 1
  }
  if (in_w) w[++n] = cur
  return n
}
function setters(cmd, d, file, line,    w, n, k, j, name, text, via, verb) {
  n = words(cmd, w); k = 1
  while (k <= n && w[k] ~ /^[A-Za-z_][A-Za-z0-9_]*\+?=/) k++
  verb = (k <= n) ? w[k] : ""
  if (k <= n && verb !~ /^(export|declare|typeset|readonly|local|unset)$/) return
  text = ""
  for (j = 1; j <= n; j++) {
    name = w[j]; sub(/[+]?=.*/, "", name)
    text = text (j > 1 ? " " : "") (toupper(name) ~ secret ? name "=***" : w[j])
  }
  via = ""; for (j = 2; j < d; j++) via = via (via == "" ? "" : ">") stack[j]
  for (j = 1; j <= n; j++) {
    if (j == k || w[j] ~ /^-/) continue
    name = w[j]; sub(/[+]?=.*/, "", name)
    if (name !~ fam || toupper(name) ~ secret) continue
    val = "@noval@"; if (w[j] ~ /=/) { val = w[j]; sub(/^[^=]*=/, "", val) }
    s = (d - 1) "\t" file "\t" line "\t" substr(text, 1, 200) "\t" via
    if (verb == "unset") { gone[name] = s; continue }
    delete gone[name]; last[name] = s; if (val != "@noval@") lastv[name, val] = s
  }
}
function limits(cmd, d, file, line,    w, n, j, via) {
  n = words(cmd, w); if (w[n] ~ /^-/) return
  via = ""; for (j = 2; j < d; j++) via = via (via == "" ? "" : ">") stack[j]
  for (j = 2; j <= n; j++) if (w[j] ~ /^-[A-Za-z]+$/) {
    if (w[j] ~ /n/) lim["nofile"] = (d - 1) "\t" file "\t" line "\t" substr(cmd, 1, 200) "\t" via
    if (w[j] ~ /l/) lim["memlock"] = (d - 1) "\t" file "\t" line "\t" substr(cmd, 1, 200) "\t" via
  }
}
/^\++@@/ {
  d = match($0, /[^+]/) - 1; rest = substr($0, d + 3)
  i = index(rest, "@@"); file = substr(rest, 1, i - 1); rest = substr(rest, i + 2)
  i = index(rest, "@@"); line = substr(rest, 1, i - 1); rest = substr(rest, i + 2)
  if (substr(rest, 1, 9) == "@unset@@@") { ld = "@unset@"; rest = substr(rest, 10) }
  else { i = index(rest, "@@"); ld = substr(rest, 1, i - 1); rest = substr(rest, i + 2) }
  i = index(rest, "@@ "); vs = substr(rest, 1, i - 1); cmd = substr(rest, i + 3)
  gsub(/\t/, " ", cmd)
  if (have && (ld != pld || vs != pvs)) {
    via = ""; for (k = 2; k < pd; k++) via = via (via == "" ? "" : ">") stack[k]
    if (ld != pld)
      printf "@@change\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", pd - 1, pf, pl, pld, ld, substr(pcmd, 1, 200), via
    if (vs != pvs) {
      n = split(pvs, a, "@%"); split(vs, b, "@%")
      for (k = 1; k <= n; k++) if (a[k] != b[k]) last_t[k] = (pd - 1) "\t" pf "\t" pl "\t" substr(pcmd, 1, 200) "\t" via
    }
  }
  if (cmd ~ famw) setters(cmd, d, file, line)
  if (cmd ~ /^ulimit /) limits(cmd, d, file, line)
  stack[d] = file ":" line; have = 1; pd = d; pf = file; pl = line; pld = ld; pvs = vs; pcmd = cmd; next
}
/^@@fam / { name = substr($0, 7); v = name; sub(/=.*/, "", name); sub(/^[^=]*=/, "", v); fin[name] = v; print; next }
/^@@(value|unset|cmd|py|limit|nccl) / { print }
/^@@def\t/ { print }
/^@@ld(var|find|obj|missing) / { print }
END {
  for (k in last_t) printf "@@set\t%d\t%s\n", k, last_t[k]
  for (k in lim) printf "@@limset\t%s\t%s\n", k, lim[k]
  for (name in gone) if (!(name in fin)) printf "@@famunset\t%s\t%s\n", name, gone[name]
  for (name in fin) {
    if ((name, fin[name]) in lastv) s = lastv[name, fin[name]]; else if (name in last) s = last[name]; else continue
    printf "@@famset\t%s\t%s\n", name, s
  }
}
