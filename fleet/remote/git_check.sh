#!/usr/bin/env bash
# fleet/remote/git_check.sh (fleet/resources/git.py check, after git_guard.sh): is $dest a checkout of $origin at
# $ref? Set before this: dest, ref, origin (the repo's URL without credentials); exits 10 (NEEDS_CHANGE) when not.
# A checkout root owns, read by a non-root user: git refuses "dubious ownership" unless told it is safe; one another
# user owns stays refused (its config could run a command as root).
# shellcheck disable=SC2154  # dest, ref, origin, fleet_git_owner: set before this
if [ ! -d "$dest/.git" ]; then echo 'not cloned'; exit 10; fi
if [ -n "$fleet_git_owner" ]; then echo "owned by $fleet_git_owner, not root or this user"; exit 10; fi
head=$(git -C "$dest" rev-parse HEAD 2>/dev/null)
want=$(git -C "$dest" rev-parse --verify -q "$ref^{commit}" 2>/dev/null)
url=$(git -C "$dest" config --get remote.origin.url)
if [ "$url" != "$origin" ]; then echo "origin is $url"; exit 10; fi
if [ -n "$want" ] && [ "$head" = "$want" ]; then echo "at $ref ($head)"; exit 0; fi
echo "at ${head:-nothing}, want $ref"; exit 10
