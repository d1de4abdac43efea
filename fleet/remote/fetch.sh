#!/usr/bin/env bash
# fleet/remote/fetch.sh: the shared function "fetch" (fleet/shell.py FUNCTIONS; it calls fleet_retry, "retry"):
# `fleet_fetch URL DEST` works for https:// and file:// alike. The URL reaches curl and wget on stdin (curl's -K
# config, wget's -i), never in argv: it may hold credentials, and a command line is every user's (/proc/*/cmdline).
# A download that fails on a network blip is run again (fleet_retry, fleet/remote/retry.sh).
# shellcheck disable=SC2016  # the python3 fallback's text is Python's, not the shell's
fleet_fetch_once() {
  if command -v curl >/dev/null; then
    local u=${1//\\/\\\\}; u=${u//\"/\\\"}
    printf 'url = "%s"\n' "$u" | curl -fsSL -K - -o "$2"
  elif command -v wget >/dev/null; then printf '%s\n' "$1" | wget -q -O "$2" -i -
  else (cd / && FLEET_URL=$1 python3 -I -c 'import os,sys,urllib.request; urllib.request.urlretrieve(os.environ["FLEET_URL"], sys.argv[1])' "$2"); fi
}
fleet_fetch() {
  case "$1" in
    file://*) cp -- "${1#file://}" "$2" ;;
    /*) cp -- "$1" "$2" ;;
    *) local fleet_n=${1%%[?#]*}; fleet_retry "download of ${fleet_n##*/}" fleet_fetch_once "$1" "$2" ;;
  esac
}
