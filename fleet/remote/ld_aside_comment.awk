FNR == n { print m $0; next }
{ print }
