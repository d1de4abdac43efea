#!/usr/bin/env bash
# fleet/remote/paths.sh (fleet/facts/paths.py command): each path's verdict, one line each:
# `path<TAB><escaped path><TAB>ok` where fleet_trust (the shared functions "trust") says nothing, else the sentence it
# says, its newlines made spaces. Arguments: PATH ESCAPED pairs, the path as the controller escaped it (\\, \n, \t: a
# path with a newline must not split its line).
while [ "$#" -ge 2 ]; do
  r=$(fleet_trust "$1"); r=${r//$'\n'/ }
  printf 'path\t%s\t%s\n' "$2" "${r:-ok}"
  shift 2
done
