#!/usr/bin/env bash
# fleet/remote/identity.sh (fleet/facts/system.py IDENTITY): who we are and what kind of machine runs us.
# $EUID is what `id -u` prints (the effective uid), without a process
printf 'user %s\nuid %s\n' "$(id -un)" "${EUID:-$(id -u)}"
if [ -d /run/systemd/system ]; then echo 'systemd yes'; else echo 'systemd no'; fi
if [ -e /.dockerenv ] || [ -e /run/.containerenv ]; then echo 'container yes'; else echo 'container no'; fi
# RunPod's persistent volume (docs.runpod.io/pods/storage): what a role gates on with `when:`
if [ -d /workspace ]; then echo 'workspace yes'; else echo 'workspace no'; fi
# slim images ship without git: the cutlass role installs it first (its `when:` on facts.system.git)
if command -v git >/dev/null 2>&1; then echo 'git yes'; else echo 'git no'; fi
