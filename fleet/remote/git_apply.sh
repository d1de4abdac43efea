#!/usr/bin/env bash
# fleet/remote/git_apply.sh (fleet/resources/git.py apply, after retry.sh, the credentials' exports and git_guard.sh,
# under set -e): $dest checked out at $ref from $origin, cloned beside it and moved into place, or fetched; refuses
# (exit 3) a checkout another user owns, a place another user could change, another origin, local changes, or a
# directory that is not a checkout. Set before this: dest, ref, origin.
# shellcheck disable=SC2154  # dest, ref, origin, fleet_git_owner: set before this
if [ -d "$dest/.git" ] && [ -n "$fleet_git_owner" ]; then echo "refusing to use $dest: it is owned by $fleet_git_owner, and git would run what its config says (core.fsmonitor, hooks) as this user; chown -R it to root or move it away"; exit 3; fi
# where the checkout goes must be safe before git writes a config there that root's git then reads
fleet_why=$(fleet_trust "$dest"); if [ -n "$fleet_why" ]; then echo "refusing to check out into $dest: $fleet_why, so another user could change what git runs there"; exit 3; fi
if [ -d "$dest/.git" ]; then
  url=$(git -C "$dest" config --get remote.origin.url || true)
  if [ "$url" != "$origin" ]; then echo "refusing to replace $dest: it is a checkout of ${url:-no origin}, not $origin; move it away (mv $dest $dest.old) or point the role at that origin"; exit 3; fi
  if [ -n "$(git -C "$dest" status --porcelain --untracked-files=no)" ]; then echo "refusing to check out $ref in $dest: it has local changes (git -C $dest status); commit or stash them, or move the checkout away"; exit 3; fi
elif [ -e "$dest" ] && [ -n "$(ls -A -- "$dest" 2>/dev/null)" ]; then
  echo "refusing to replace $dest: it exists and is not a git checkout; move it away"; exit 3
fi
if [ ! -d "$dest/.git" ]; then
  parent=$(dirname -- "$dest"); mkdir -p -- "$parent"
  tmp=$(mktemp -d "$parent/.fleet-clone.XXXXXX"); trap 'rm -rf -- "$tmp"' EXIT
  echo "git clone $origin"
  fleet_clone() { rm -rf -- "$tmp/repo"; git clone -q --no-checkout "$origin" "$tmp/repo"; }
  fleet_retry 'git clone' fleet_clone
  git -C "$tmp/repo" -c advice.detachedHead=false checkout -q "$ref"
  rmdir -- "$dest" 2>/dev/null || true; mv -T -- "$tmp/repo" "$dest"
else
  fleet_retry 'git fetch' git -C "$dest" fetch -q --tags origin
  git -C "$dest" -c advice.detachedHead=false checkout -q "$ref"
fi
echo "checked out $ref: $(git -C "$dest" rev-parse HEAD)"
