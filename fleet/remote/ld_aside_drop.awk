FNR == n {
  k = split($0, part, /[[:space:]:]+/); keep = ""
  for (i = 1; i <= k; i++) if (part[i] != "" && part[i] !~ ("^" pat "/?/[^/]+$")) keep = keep (keep == "" ? "" : " ") part[i]
  if (keep != "") print keep
  next
}
{ print }
