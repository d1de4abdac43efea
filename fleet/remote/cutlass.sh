#!/usr/bin/env bash
# fleet/remote/cutlass.sh (fleet/facts/software.py cutlass_command): the CUTLASS checkout at $d (set before this):
# its version.h, CuTe, and git's describe and commit. git's ownership check stays on for a checkout another user owns
# (fleet/remote/git_guard.sh, pasted before this by the command; it calls the shared functions "trust").
# shellcheck disable=SC2154  # d: set by the line before this
[ -d "$d" ] || { printf 'absent %s\n' "$d"; exit 0; }
printf 'path %s\n' "$d"
[ -r "$d/include/cutlass/version.h" ] && grep -E '^#define CUTLASS_(MAJOR|MINOR|PATCH) ' "$d/include/cutlass/version.h"
[ -e "$d/include/cute/tensor.hpp" ] && echo 'cute yes'
if command -v git >/dev/null 2>&1 && [ -e "$d/.git" ]; then
  fleet_cutlass_git
  printf 'describe %s\n' "$(git -C "$d" describe --tags 2>/dev/null)"
  printf 'commit %s\n' "$(git -C "$d" rev-parse HEAD 2>/dev/null)"
fi
true
