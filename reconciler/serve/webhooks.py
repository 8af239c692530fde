"""Authenticate and read push webhooks from GitHub, GitLab, Gitea and plain git servers.

:func:`judge` is pure: headers, body and secret in, a :class:`Verdict` out (the HTTP status,
a metrics label, a message, and the push when one should trigger a pass). Signatures are
compared in constant time and checked before the body is parsed, so nothing an
unauthenticated sender writes is ever interpreted.

=========  ==============================  ===========================================
provider   authentication header           value
=========  ==============================  ===========================================
github     ``X-Hub-Signature-256``         ``sha256=`` + hex HMAC-SHA256 of the body
gitlab     ``X-Gitlab-Token``              the secret itself
gitea      ``X-Gitea-Signature``           hex HMAC-SHA256 of the body
generic    ``X-Pincompile-Signature-256``  ``sha256=`` + hex HMAC-SHA256 of the body
=========  ==============================  ===========================================

Once authenticated, a delivery is refused as a replay (409) when its delivery id
(``X-GitHub-Delivery``, GitLab's ``Idempotency-Key`` or ``X-Gitlab-Event-UUID``,
``X-Gitea-Delivery``, ``X-Pincompile-Delivery``) or its exact body was seen within the
window (:class:`Deliveries`); and a push whose payload names another repository than the
followed one is refused (403): GitHub's and Gitea's ``repository``, GitLab's ``project``
and ``repository`` name it by URL and full name, compared without credentials, scheme or
``.git`` (:func:`repository_key`).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from reconciler.serve.redact import redact

GENERIC_SIGNATURE_HEADER = "X-Pincompile-Signature-256"
DEFAULT_MAX_BODY = 2 * 1024 * 1024
_SHA = re.compile(r"^[0-9a-f]{40}([0-9a-f]{24})?$")
_ZERO = re.compile(r"^0+$")
DELIVERY_HEADERS = {"github": ("x-github-delivery",),
                    "gitlab": ("idempotency-key", "x-gitlab-event-uuid"),
                    "gitea": ("x-gitea-delivery",), "generic": ("x-pincompile-delivery",)}
"""Per provider, the headers that identify one delivery (the first present counts)."""
DEFAULT_REPLAY_WINDOW = 3600.0


@dataclass
class Deliveries:
    """Delivery ids and body digests seen within ``window`` seconds (at most ``limit`` of
    each kept: the oldest are forgotten first)."""

    window: float = DEFAULT_REPLAY_WINDOW
    limit: int = 10_000
    clock: Callable[[], float] = time.monotonic
    _seen: OrderedDict[str, float] = field(default_factory=OrderedDict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def replayed(self, keys: list[str]) -> bool:
        """Whether any of ``keys`` was seen within the window; records them all."""
        now = self.clock()
        with self._lock:
            while self._seen and (len(self._seen) > self.limit
                                  or next(iter(self._seen.values())) < now - self.window):
                self._seen.popitem(last=False)
            seen = any(k in self._seen for k in keys)
            for key in keys:
                self._seen[key] = now
                self._seen.move_to_end(key)
            return seen


def _delivery_header(provider: str, headers: Mapping[str, str]) -> str:
    """The first delivery id header the provider sent (lower-case ``headers``), or ""."""
    return next((headers[name] for name in DELIVERY_HEADERS.get(provider, ())
                 if headers.get(name)), "")


def delivery_keys(provider: str, headers: Mapping[str, str], body: bytes) -> list[str]:
    """What identifies a delivery: its id header (if any) and the digest of its body."""
    keys = [f"{provider}:body:{hashlib.sha256(body).hexdigest()}"]
    if sent := _delivery_header(provider, headers):
        keys.append(f"{provider}:id:{sent[:200]}")
    return keys


def delivery_id(provider: str, headers: Mapping[str, str]) -> str:
    """The delivery's id as its sender named it (lower-case ``headers``), for the
    history: letters, digits and ``-._:`` only, at most 128 characters; "" if none."""
    return re.sub(r"[^A-Za-z0-9._:-]", "", _delivery_header(provider, headers))[:128]


_SCP_LIKE = re.compile(r"^(?:[^@/\s]+@)?([^:/\s]+):(?!//)(.+)$")


def repository_key(url: str) -> str:
    """A repository URL or path reduced to ``host/path`` (lowercase host, no credentials,
    scheme, port of ssh, trailing ``/`` or ``.git``), so every clone URL of one repository
    gives the same key: ``https://u:t@GitHub.com/acme/platform.git``,
    ``git@github.com:acme/platform`` and ``ssh://git@github.com/acme/platform`` all
    give ``github.com/acme/platform``."""
    text = redact(url.strip())
    scheme, sep, rest = text.partition("://")
    if sep:
        host, _, path = rest.partition("/")
        host = host.rsplit("@", 1)[-1].lower()
        if scheme.lower() in ("ssh", "git", "git+ssh", "ssh+git"):
            host = host.split(":", 1)[0]
        elif (scheme.lower(), host.rsplit(":", 1)[-1]) in (("https", "443"), ("http", "80")):
            host = host.rsplit(":", 1)[0]
        text = f"{host}/{path}"
    elif (scp := _SCP_LIKE.match(text)) is not None:
        text = f"{scp.group(1).lower()}/{scp.group(2)}"
    text = text.rstrip("/")
    return (text.removesuffix(".git") if text.endswith(".git") else text).rstrip("/")


def named_repositories(provider: str, payload: dict[str, Any]) -> tuple[list[str], list[str]]:
    """(clone/web URLs, ``owner/name`` full names) the payload names its repository by."""
    urls: list[str] = []
    names: list[str] = []
    for part in ("repository", "project"):
        repo = payload.get(part)
        if not isinstance(repo, dict):
            continue
        urls += [v for k in ("clone_url", "ssh_url", "git_url", "html_url", "url",
                             "git_http_url", "git_ssh_url", "web_url", "homepage")
                 if isinstance(v := repo.get(k), str) and v]
        names += [v for k in ("full_name", "path_with_namespace")
                  if isinstance(v := repo.get(k), str) and v]
    return urls, names


def same_repository(followed: str, urls: list[str], names: list[str]) -> bool:
    """Whether the named URLs or full names are the followed repository."""
    path = repository_key(followed).lower()
    if any(repository_key(u).lower() == path for u in urls):
        return True
    return any(path.endswith("/" + n.strip("/").lower().removesuffix(".git")) for n in names)


@dataclass(frozen=True)
class Push:
    """A push to a branch: the ref and the commit it now points at."""

    provider: str
    ref: str
    after: str
    delivery: str = ""
    """The delivery's id (:func:`delivery_id`), "" when the sender gave none."""


@dataclass(frozen=True)
class Verdict:
    """How to answer one webhook request and whether it triggers a pass."""

    status: int
    result: str
    """Metrics label: accepted, ignored, ping, unauthorized, too_large, bad_request, ..."""
    message: str
    push: Push | None = None


def sign(secret: bytes, body: bytes) -> str:
    """``sha256=<hex>``: the signature GitHub and the generic endpoint expect."""
    return "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()


def _hmac_ok(secret: bytes, body: bytes, given: str | None, prefix: str) -> bool:
    if not given or not given.startswith(prefix):
        return False
    expected = hmac.new(secret, body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected.encode(), given[len(prefix):].strip().lower().encode())


def _github_auth(h: Mapping[str, str], secret: bytes, body: bytes) -> bool:
    return _hmac_ok(secret, body, h.get("x-hub-signature-256"), "sha256=")


def _gitlab_auth(h: Mapping[str, str], secret: bytes, body: bytes) -> bool:
    token = h.get("x-gitlab-token")
    return token is not None and hmac.compare_digest(token.encode(), secret)


def _gitea_auth(h: Mapping[str, str], secret: bytes, body: bytes) -> bool:
    return _hmac_ok(secret, body, h.get("x-gitea-signature"), "")


def _generic_auth(h: Mapping[str, str], secret: bytes, body: bytes) -> bool:
    return _hmac_ok(secret, body, h.get(GENERIC_SIGNATURE_HEADER.lower()), "sha256=")


def _github_event(h: Mapping[str, str], payload: dict[str, Any]) -> str:
    return h.get("x-github-event", "")


def _gitlab_event(h: Mapping[str, str], payload: dict[str, Any]) -> str:
    event = h.get("x-gitlab-event", "")
    if event == "Push Hook" or (event == "System Hook" and payload.get("object_kind") == "push"):
        return "push"
    return event


def _gitea_event(h: Mapping[str, str], payload: dict[str, Any]) -> str:
    return h.get("x-gitea-event", "")


def _generic_event(h: Mapping[str, str], payload: dict[str, Any]) -> str:
    return str(payload.get("event", "push"))


Auth = Callable[[Mapping[str, str], bytes, bytes], bool]
Event = Callable[[Mapping[str, str], dict[str, Any]], str]
PROVIDERS: dict[str, tuple[Auth, Event]] = {
    "github": (_github_auth, _github_event),
    "gitlab": (_gitlab_auth, _gitlab_event),
    "gitea": (_gitea_auth, _gitea_event),
    "generic": (_generic_auth, _generic_event),
}


def judge(provider: str, headers: Mapping[str, str], body: bytes, secret: bytes | None,
          branch: str, *, repo: str | None = None, deliveries: Deliveries | None = None
          ) -> Verdict:
    """Decide what one webhook request means for a server that follows ``branch`` of
    ``repo`` (None: any repository); ``deliveries`` remembers deliveries to refuse
    replays."""
    if provider not in PROVIDERS:
        return Verdict(404, "not_found", f"no webhook endpoint for '{provider}'; use one of "
                       + ", ".join(f"/webhooks/{p}" for p in PROVIDERS))
    auth, event_of = PROVIDERS[provider]
    lowered = {k.lower(): v for k, v in headers.items()}
    if not secret:
        return Verdict(401, "unauthorized", "this server has no webhook secret configured "
                       "(--webhook-secret-file or PINCOMPILE_WEBHOOK_SECRET)")
    if not auth(lowered, secret, body):
        return Verdict(401, "unauthorized", "missing or wrong signature")
    if deliveries is not None and deliveries.replayed(delivery_keys(provider, lowered, body)):
        return Verdict(409, "replayed", "this delivery was already received; a replay "
                       "is not applied again")
    content_type = lowered.get("content-type", "application/json").split(";")[0].strip()
    if content_type not in ("application/json", ""):
        return Verdict(415, "bad_request", f"content type {content_type} is not supported; "
                       "configure the webhook to send application/json")
    try:
        payload = json.loads(body or b"{}")
    except (ValueError, UnicodeDecodeError) as exc:
        return Verdict(400, "bad_request", f"body is not JSON: {exc}")
    if not isinstance(payload, dict):
        return Verdict(400, "bad_request", "body is not a JSON object")
    event = event_of(lowered, payload)
    if event == "ping":
        return Verdict(200, "ping", "pong")
    if event != "push":
        return Verdict(200, "ignored", f"event '{event}' does not trigger a pass")
    if repo is not None and provider != "generic":
        urls, names = named_repositories(provider, payload)
        if not urls and not names:
            return Verdict(400, "bad_request", "the push names no repository")
        if not same_repository(repo, urls, names):
            shown = redact((names or urls)[0])[:200]
            return Verdict(403, "other_repository", f"the push is to {shown!r}, not to the "
                           f"followed repository {repository_key(repo)!r}")
    return _push(provider, payload, branch, delivery_id(provider, lowered))


def _push(provider: str, payload: dict[str, Any], branch: str, delivery: str) -> Verdict:
    ref, after = payload.get("ref"), payload.get("after")
    if not isinstance(ref, str) or not isinstance(after, str):
        return Verdict(400, "bad_request", "a push needs string fields 'ref' and 'after'")
    wanted = f"refs/heads/{branch}"
    if ref != wanted:
        return Verdict(200, "ignored", f"{ref} is not the followed branch {wanted}")
    after = after.lower()
    if payload.get("deleted") is True or _ZERO.match(after):
        return Verdict(200, "ignored", f"{ref} was deleted; nothing to apply")
    if not _SHA.match(after):
        return Verdict(400, "bad_request", f"'after' is not a commit sha: {after[:80]!r}")
    return Verdict(202, "accepted", f"{ref} at {after[:12]} queued",
                   Push(provider, ref, after, delivery))
