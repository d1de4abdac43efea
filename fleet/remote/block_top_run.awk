inb { print; if ($0 == endm) inb = 0; next }
/^# BEGIN / { inb = 1; endm = "# END " substr($0, 9); print; next }
{ exit }