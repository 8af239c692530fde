"""A local bare mirror of the followed branch, and compiling a revision straight from it.

The mirror is a bare repository (no work tree) that fetches one branch from ``url`` (any
URL or path ``git fetch`` accepts) into ``refs/pincompile/<branch>``; specs are read from
git objects by :mod:`pincompile.source.gitsource`, so nothing is ever checked out.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

from pincompile.contract import Compiler, GitError, Result, SpecRoot, gitsource
from reconciler.serve.redact import redact

FETCH_TIMEOUT = 300


@dataclass(frozen=True)
class Commit:
    """Who made a revision, and its subject line (for the audit record)."""

    sha: str
    author: str
    email: str
    subject: str


_HELPER = ('!f() { test "$1" = get || exit 0; h=; while read -r l; do case "$l" in '
           'host=*) h="${l#host=}";; esac; done; test "$h" = "$PINCOMPILE_GIT_HOST" && '
           'printf "username=%s\\npassword=%s\\n" "$PINCOMPILE_GIT_USERNAME" '
           '"$PINCOMPILE_GIT_PASSWORD"; }; f')
"""A git credential helper that answers only for the repository's own host (a redirect to
another host gets nothing)."""


def credential_env(url: str) -> dict[str, str]:
    """Environment for ``git fetch`` of ``url`` without its userinfo: the credentials
    through a credential helper instead of the command line, which every local user can read
    in the process list. Empty for a URL without credentials."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or parts.username is None:
        return {}
    host = parts.hostname or ""
    if parts.port is not None:
        host += f":{parts.port}"
    return {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "credential.helper",
            "GIT_CONFIG_VALUE_0": _HELPER, "PINCOMPILE_GIT_HOST": host,
            "PINCOMPILE_GIT_USERNAME": unquote(parts.username or ""),
            "PINCOMPILE_GIT_PASSWORD": unquote(parts.password or "")}


class Mirror:
    """One branch of one repository, mirrored into ``directory``."""

    def __init__(self, url: str, branch: str, directory: Path, spec_path: str = "") -> None:
        if not branch or branch.startswith("-") or ".." in branch or " " in branch:
            raise GitError(f"'{branch}' is not a valid branch name")
        local = Path(url).expanduser()
        full = str(local.resolve()) if local.exists() else url
        if not local.exists() and "://" in url and urlsplit(url).query:
            # git appends its own paths to the URL, so a query never reaches the server as
            # meant; and the URL shown (redacted) is the one git is given
            raise GitError(f"{redact(url)}: git cannot fetch a URL with a query (?...); give "
                           "a token as the URL's password instead (USER:TOKEN@ before the host)")
        self.url = redact(full)
        """The URL as shown anywhere (logs, /status, errors) and passed to git: without its
        credentials, which git gets from :func:`credential_env` (never on a command line)."""
        self._credentials = credential_env(full)
        self.branch = branch
        self.directory = directory
        self.root = SpecRoot(directory, spec_path.strip("/"))
        self.ref = f"refs/pincompile/{branch}"
        self._compiled: tuple[str, Result] | None = None
        self._compiler = Compiler()
        """Keeps every file's parsed specs between pushes: a push re-reads only the files it
        changed."""

    def fetch(self) -> str:
        """Fetch the branch and return the commit it points at now."""
        if not (self.directory / "HEAD").exists():
            self.directory.mkdir(parents=True, exist_ok=True)
            gitsource.git(self.directory, "init", "--quiet", "--bare")
        env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", **self._credentials}
        try:
            proc = subprocess.run(
                ["git", "fetch", "--quiet", "--no-tags", "--force", "--end-of-options",
                 self.url, f"+refs/heads/{self.branch}:{self.ref}"],
                cwd=self.directory, capture_output=True, timeout=FETCH_TIMEOUT, env=env,
                check=False)
        except subprocess.TimeoutExpired as exc:
            raise GitError(f"git fetch {self.url} took longer than {FETCH_TIMEOUT}s") from exc
        if proc.returncode != 0:
            lines = proc.stderr.decode("utf-8", "replace").strip().splitlines()
            raise GitError(f"git fetch {self.url} {self.branch} failed: "
                           + redact(lines[-1] if lines else str(proc.returncode)))
        return self.head()

    def head(self) -> str:
        """The commit last fetched for the branch."""
        return gitsource.resolve_ref(self.directory, self.ref)

    def commit(self, sha: str) -> Commit:
        """Author and subject of ``sha``."""
        out = gitsource.git(self.directory, "log", "-1", "--no-show-signature",
                             "--format=%an%x00%ae%x00%s", sha, "--")
        fields = out.decode("utf-8", "replace").rstrip("\n").split("\0")
        author, email, subject = [*fields, "", "", ""][:3]
        return Commit(sha, author, email, subject)

    @property
    def parsed_files(self) -> int:
        """How many file contents this mirror has parsed so far (unchanged files are not
        parsed again)."""
        return self._compiler.stats["parsed"]

    @property
    def incremental(self) -> bool:
        """Whether the last compile re-ran only the apps the push changed (the other objects
        kept, with the new revision)."""
        return self._compiler.reused

    def current(self) -> Result | None:
        """The last revision compiled (None before the first)."""
        compiled = self._compiled
        return None if compiled is None else compiled[1]

    def compile(self, sha: str) -> Result:
        """Compile the specs at ``sha``; an unchanged head (a resync) reuses the last result."""
        if self._compiled is not None and self._compiled[0] == sha:
            return self._compiled[1]
        if not gitsource.path_exists(self.root, sha):
            raise GitError(f"{self.root.describe()} does not exist at {gitsource.short(sha)}")
        files, walked = gitsource.read_revision(self.root, sha)
        result = self._compiler.compile(files, revision=sha, loaded=walked)
        self._compiled = (sha, result)
        return result
