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
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

GENERIC_SIGNATURE_HEADER = "X-Pincompile-Signature-256"
DEFAULT_MAX_BODY = 2 * 1024 * 1024
_SHA = re.compile(r"^[0-9a-f]{40}([0-9a-f]{24})?$")
_ZERO = re.compile(r"^0+$")


@dataclass(frozen=True)
class Push:
    """A push to a branch: the ref and the commit it now points at."""

    provider: str
    ref: str
    after: str


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
          branch: str) -> Verdict:
    """Decide what one webhook request means for a server that follows ``branch``."""
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
    return _push(provider, payload, branch)


def _push(provider: str, payload: dict[str, Any], branch: str) -> Verdict:
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
                   Push(provider, ref, after))
