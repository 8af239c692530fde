"""Links from the console to where a commit can be read: the repository's web page of
the commit, when the repository is an https git host. Credentials in the URL
(``https://user:token@host/...``) never reach a page."""

from __future__ import annotations

import re
from urllib.parse import urlsplit, urlunsplit

COMMIT = re.compile(r"[0-9a-f]{7,64}")


def commit_url(repo: str, commit: str) -> str | None:
    """``https://host/owner/repo/commit/SHA`` (GitLab: ``/-/commit/SHA``) for a repository
    served over https; None for another scheme (a path, ssh, http), no path or a commit
    that is not a hex id."""
    if not COMMIT.fullmatch(commit):
        return None
    try:
        parts = urlsplit(repo.strip())
        port = parts.port
    except ValueError:
        return None
    host = parts.hostname
    path = parts.path.rstrip("/").removesuffix(".git")
    if parts.scheme.lower() != "https" or not host or not path.strip("/"):
        return None
    netloc = (f"[{host}]" if ":" in host else host) + (f":{port}" if port else "")
    step = "/-/commit/" if "gitlab" in host else "/commit/"
    return urlunsplit(("https", netloc, path + step + commit, "", ""))
