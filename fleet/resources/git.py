"""A git checkout pinned at a ref (tag, branch or commit), cloned through a temp dir so it is never half there.

A repair never destroys what a person may have made: a checkout of another origin, a directory that is not a
checkout, or a checkout with uncommitted changes to tracked files is refused with its path and how to fix it,
never deleted or overwritten (`checkout --force` would drop the changes without a word).

Credentials in the repo URL (https://user:token@host/...) are never stored in the clone's config and never in any
process's argv: origin is the URL without them, and git gets them from a credential helper given in its environment
(GIT_CONFIG_COUNT) that reads them from the environment too, which, unlike a command line, no other user of the host
can read (`credentials_env`).
"""

from __future__ import annotations

from urllib.parse import unquote, urlsplit, urlunsplit

from fleet import remote
from fleet.resources.base import Param, Resource, q, qpath
from fleet.shell import exports, git_guard


def public_url(repo: str) -> str:
    """The repo URL without its user and password (an http(s) URL's credentials); other URLs unchanged."""
    parts = urlsplit(repo)
    if parts.scheme.lower() not in ("http", "https") or "@" not in parts.netloc:
        return repo
    return urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]))


# git asks a credential helper for the user and password of the host it fetches from (gitcredentials(7): `get`,
# then key=value lines on stdin, host=HOST[:PORT] among them): this one answers from the environment, for the
# repo's own host only. Its text holds no secret: git starts it with `sh -c`, and its argv is every user's.
_HELPER = ('!f() { test "$1" = get || return 0; h=; while IFS= read -r l && [ -n "$l" ]; do '
           'case $l in host=*) h=${l#host=};; esac; done; [ "$h" = "$FLEET_GIT_HOST" ] || return 0; '
           'printf "username=%s\\n" "$FLEET_GIT_USER"; '
           '[ -z "${FLEET_GIT_PASSWORD+x}" ] || printf "password=%s\\n" "$FLEET_GIT_PASSWORD"; }; f')


def credentials_env(repo: str) -> str:
    """Shell exporting, for a repo URL that holds credentials, a credential helper that hands them to git from the
    environment (nothing otherwise). Before, `url.<with>.insteadOf=<without>` kept them out of git's argv but git
    hands the rewritten URL, token and all, to git-remote-https as an argument (/proc/*/cmdline: every user's, for
    the clone's whole duration). The helper list is emptied first (an empty value resets it, git-config(1)
    credential.helper), so a stored credential of the host's never answers instead."""
    public = public_url(repo)
    if public == repo:
        return ""
    parts = urlsplit(repo)
    env = {"GIT_CONFIG_COUNT": "2", "GIT_CONFIG_KEY_0": "credential.helper", "GIT_CONFIG_VALUE_0": "",
           "GIT_CONFIG_KEY_1": "credential.helper", "GIT_CONFIG_VALUE_1": _HELPER, "GIT_TERMINAL_PROMPT": "0",
           "FLEET_GIT_HOST": parts.netloc.rsplit("@", 1)[1].lower(), "FLEET_GIT_USER": unquote(parts.username or "")}
    if parts.password is not None:
        env["FLEET_GIT_PASSWORD"] = unquote(parts.password)
    return exports(env)


class Git(Resource):
    type_name = "git"
    default_deadline = 1800     # downloads (fleet.sections.bounded)
    path_param = "dest"
    needs_root = True
    needs = ("trust",)           # git_guard's fleet_trusted
    apply_needs = ("retry",)
    params = {"repo": Param((str,), required=True), "ref": Param((str,), required=True),
              "dest": Param((str,), required=True), "root": Param((bool,), default=None)}

    def locks(self) -> frozenset[str]:
        return frozenset({f"path:{self.p['dest']}"})

    def describe(self) -> str:
        return f"check out {self.p['repo']} at {self.p['ref']} in {self.p['dest']}"


    def check(self) -> str:
        """fleet/remote/git_check.sh, after git_guard (a checkout another user owns stays refused)."""
        return (f"dest={qpath(self.p['dest'])} ref={q(self.p['ref'])} origin={q(public_url(self.p['repo']))}\n"
                + git_guard('"$dest"') + remote.program("git_check") + "\n")

    def apply(self) -> str:
        """fleet/remote/git_apply.sh, after the retry function, the credentials' helper and git_guard."""
        return ("set -e\n" + credentials_env(self.p["repo"])
                + f"dest={qpath(self.p['dest'])} ref={q(self.p['ref'])} origin={q(public_url(self.p['repo']))}\n"
                + git_guard('"$dest"') + remote.program("git_apply") + "\n")
