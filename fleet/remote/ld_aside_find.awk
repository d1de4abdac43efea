function flush() {
  if (file == "") return
  if (hits > 0 && hits == lines && !preload && file ~ /\/ld\.so\.conf\.d\/[^\/]+\.conf$/) print "move\t" file
  else for (i = 1; i <= hits; i++) print (preload ? "drop" : "comment") "\t" file "\t" hn[i] "\t" ht[i]
}
FNR == 1 { flush(); file = FILENAME; hits = 0; lines = 0; preload = (FILENAME ~ /ld\.so\.preload$/) }
{ l = $0; sub(/#.*/, "", l); gsub(/^[[:space:]]+|[[:space:]]+$/, "", l)
  if (l == "" || (!preload && l ~ /^include[[:space:]]/)) next
  lines++
  bad = 0
  if (preload) { n = split(l, part, /[[:space:]:]+/); for (i = 1; i <= n; i++) if (part[i] ~ ("^" pat "/?/[^/]+$")) bad = 1 }
  else if (l ~ ("^" pat "/?$")) bad = 1
  if (bad) { hits++; hn[hits] = FNR; ht[hits] = $0 }
}
END { flush() }
