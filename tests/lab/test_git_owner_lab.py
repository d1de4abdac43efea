"""git's ownership check stays on (issue 26): a CUTLASS checkout another user owns, with core.fsmonitor set to a
command, never runs that command as root, neither in `fleet facts` nor in `fleet apply`; apply refuses the
checkout naming its owner. Proven by asking the host whether the command left its mark."""

from __future__ import annotations

from helpers import ok, sh
from test_trust_lab import POD, inventory
from test_user_role_lab import fleet

MARK = "/var/tmp/fleet-test-fsmonitor-ran"
REPO = "https://github.com/NVIDIA/cutlass.git"     # the role's default origin: apply reaches `git status` on main
# nobody's checkout at the role's cutlass_dir, its fsmonitor a script that leaves the uid it ran as
PLANT = f"""set -e
rm -f {MARK}
printf '#!/bin/sh\\nid -u >> {MARK}\\n' > /var/tmp/fleet-test-fsmonitor; chmod 755 /var/tmp/fleet-test-fsmonitor
mkdir -p /opt/cutlass
cd /opt/cutlass
git init -q . && git -c user.name=n -c user.email=n@n commit -q --allow-empty -m planted
git remote add origin {REPO}
git config core.fsmonitor /var/tmp/fleet-test-fsmonitor
chown -R 65534:65534 /opt/cutlass
git -c safe.directory=/opt/cutlass status --porcelain >/dev/null; cat {MARK}; rm -f {MARK}
"""


def test_a_checkout_another_user_owns_never_runs_its_fsmonitor_as_root(lab, tmp_path):
    lab.reset([POD])
    try:
        assert ok(lab, POD, PLANT).split() == ["0"]        # the planted command does run as root when git trusts it
        inv = inventory(lab, tmp_path)
        code, out, err = fleet("facts", str(inv))
        assert code == 0, out[-2000:] + err[-2000:]
        code, out, err = fleet("apply", str(inv), "--roles", "cutlass")
        said = " ".join((out + err).split())
        assert code == 1, said[-3000:]
        # refused before the git resource's own refusal is reached: the trust check of cutlass_dir (fleet.facts.paths)
        assert ("cutlass_dir /opt/cutlass is not safe to run as root: /opt/cutlass is owned by nobody with mode 755"
                in said), said[-3000:]
        assert sh(lab, POD, f"cat {MARK}").exit != 0, "the checkout's fsmonitor ran"
        assert ok(lab, POD, "stat -c %U /opt/cutlass; git -c safe.directory=/opt/cutlass -C /opt/cutlass config core.fsmonitor").split() == [
            "nobody", "/var/tmp/fleet-test-fsmonitor"]              # the user's checkout kept as it was
    finally:
        sh(lab, POD, f"rm -rf /opt/cutlass {MARK} /var/tmp/fleet-test-fsmonitor")


def test_credentials_in_the_repo_url_are_not_kept_in_the_clone(lab, tmp_path):
    """A token in cutlass_repo reaches git for the clone, never the clone's .git/config (0644: every user reads it);
    a second apply finds the checkout in state."""
    lab.reset([POD])
    try:
        inv = inventory(lab, tmp_path, cutlass_repo="https://fleet:fleet-test-secret-9c1@github.com/NVIDIA/cutlass.git")
        for _ in range(2):
            code, out, err = fleet("apply", str(inv), "--roles", "cutlass")
            assert code == 0, (out + err)[-3000:]
        assert f"\n{POD}\t1\t0\t0\t" in out                 # the second run: in state (ok 1, changed 0, failed 0)
        found = ok(lab, POD, "git -C /opt/cutlass config --get remote.origin.url; git -C /opt/cutlass describe --tags; "
                             "grep -rl fleet-test-secret /opt/cutlass/.git || echo no-secret")
        assert found.split() == [REPO, "v4.3.0", "no-secret"]
    finally:
        sh(lab, POD, "rm -rf /opt/cutlass")


# Every process's command line on the host, sampled while the apply runs (cat of /proc/*/cmdline: what any user of
# the host may read), kept where it names a git remote helper or holds the token.
SAMPLER = r"""rm -f /var/tmp/fleet-test-argv /var/tmp/fleet-test-argv.stop
cat > /var/tmp/fleet-test-sampler <<'EOF'
for i in $(seq 3000); do [ -e /var/tmp/fleet-test-argv.stop ] && break
  cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\0' ' ' | grep -ao -e 'git-remote-[a-z]* [^ ]* [^ ]*' -e 'fleet-test-secre[t][^ ]*'
done >> /var/tmp/fleet-test-argv
EOF
setsid bash /var/tmp/fleet-test-sampler >/dev/null 2>&1 </dev/null &
sleep 0.2; pgrep -f fleet-test-sampler >/dev/null && echo started"""


def test_the_token_is_in_no_process_argv_while_git_clones(lab, tmp_path):
    """The clone's git-remote-https sees the URL without the token (git hands it the credential on stdin from the
    helper fleet gives it); before, it got the rewritten URL, token included, as an argument."""
    lab.reset([POD])
    try:
        inv = inventory(lab, tmp_path, cutlass_repo="https://fleet:fleet-test-secret-9c1@github.com/NVIDIA/cutlass.git")
        assert ok(lab, POD, SAMPLER).strip() == "started"
        code, out, err = fleet("apply", str(inv), "--roles", "cutlass")
        assert code == 0, (out + err)[-3000:]
        seen = ok(lab, POD, "touch /var/tmp/fleet-test-argv.stop; sleep 0.3; sort -u /var/tmp/fleet-test-argv")
        assert "git-remote-https origin https://github.com/NVIDIA/cutlass.git" in seen, seen   # it sampled the clone
        assert "fleet-test-secret" not in seen, seen
    finally:
        sh(lab, POD, "touch /var/tmp/fleet-test-argv.stop; rm -rf /opt/cutlass /var/tmp/fleet-test-argv")
