"""Webhook authentication and interpretation, per provider."""

from __future__ import annotations

import hashlib
import hmac
import json

import pytest

from reconciler.serve.webhooks import Deliveries, Verdict, judge, repository_key, sign

SECRET = b"s3cret"
SHA = "0123456789abcdef0123456789abcdef01234567"


def body(ref: str = "refs/heads/main", after: str = SHA, **more: object) -> bytes:
    return json.dumps({"ref": ref, "after": after, **more}).encode()


def signed(provider: str, payload: bytes, secret: bytes = SECRET, event: str = "push"
           ) -> dict[str, str]:
    digest = hmac.new(secret, payload, hashlib.sha256).hexdigest()
    return {
        "github": {"X-Hub-Signature-256": f"sha256={digest}", "X-GitHub-Event": event},
        "gitlab": {"X-Gitlab-Token": secret.decode(),
                   "X-Gitlab-Event": "Push Hook" if event == "push" else event},
        "gitea": {"X-Gitea-Signature": digest, "X-Gitea-Event": event},
        "generic": {"X-Pincompile-Signature-256": f"sha256={digest}"},
    }[provider] | {"Content-Type": "application/json"}


PROVIDERS = ["github", "gitlab", "gitea", "generic"]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_signed_push_to_the_branch_is_accepted(provider: str) -> None:
    payload = body()
    verdict = judge(provider, signed(provider, payload), payload, SECRET, "main")
    assert verdict.status == 202 and verdict.result == "accepted"
    assert verdict.push is not None and verdict.push.after == SHA


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_wrong_secret_is_refused(provider: str) -> None:
    payload = body()
    verdict = judge(provider, signed(provider, payload, b"guess"), payload, SECRET, "main")
    assert (verdict.status, verdict.result, verdict.push) == (401, "unauthorized", None)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_an_unsigned_request_is_refused(provider: str) -> None:
    verdict = judge(provider, {"Content-Type": "application/json"}, body(), SECRET, "main")
    assert (verdict.status, verdict.push) == (401, None)


@pytest.mark.parametrize("provider", ["github", "gitea", "generic"])
def test_a_signature_over_another_body_is_refused(provider: str) -> None:
    headers = signed(provider, body(after="f" * 40))
    verdict = judge(provider, headers, body(), SECRET, "main")
    assert verdict.status == 401


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_push_to_another_branch_is_ignored(provider: str) -> None:
    payload = body(ref="refs/heads/feature")
    verdict = judge(provider, signed(provider, payload), payload, SECRET, "main")
    assert (verdict.status, verdict.result, verdict.push) == (200, "ignored", None)
    assert "refs/heads/main" in verdict.message


def test_tags_and_deleted_branches_do_not_trigger() -> None:
    for payload in (body(ref="refs/tags/main"), body(after="0" * 40),
                    body(deleted=True)):
        verdict = judge("github", signed("github", payload), payload, SECRET, "main")
        assert (verdict.status, verdict.push) == (200, None), verdict


@pytest.mark.parametrize("provider", ["github", "generic"])
def test_ping_answers_200(provider: str) -> None:
    payload = json.dumps({"zen": "hi", "event": "ping"}).encode()
    verdict = judge(provider, signed(provider, payload, event="ping"), payload, SECRET, "main")
    assert (verdict.status, verdict.result, verdict.push) == (200, "ping", None)


def test_other_events_are_ignored_not_errors() -> None:
    payload = b"{}"
    verdict = judge("github", signed("github", payload, event="issues"), payload, SECRET, "main")
    assert (verdict.status, verdict.result) == (200, "ignored")


def test_gitlab_system_hook_push_counts() -> None:
    payload = body(object_kind="push")
    headers = signed("gitlab", payload) | {"X-Gitlab-Event": "System Hook"}
    assert judge("gitlab", headers, payload, SECRET, "main").status == 202


def test_no_configured_secret_refuses_everything() -> None:
    payload = body()
    verdict = judge("github", signed("github", payload), payload, None, "main")
    assert verdict.status == 401 and "no webhook secret" in verdict.message


def test_malformed_bodies_are_400_after_authentication() -> None:
    for payload in (b"not json", b"[1]", json.dumps({"ref": "refs/heads/main"}).encode(),
                    body(after="HEAD")):
        verdict = judge("generic", signed("generic", payload), payload, SECRET, "main")
        assert verdict.status == 400, payload


def test_form_encoded_github_payloads_get_a_hint() -> None:
    payload = b"payload=%7B%7D"
    headers = signed("github", payload) | {"Content-Type": "application/x-www-form-urlencoded"}
    verdict = judge("github", headers, payload, SECRET, "main")
    assert verdict.status == 415 and "application/json" in verdict.message


def test_unknown_provider_is_404() -> None:
    assert judge("bitbucket", {}, b"", SECRET, "main").status == 404


def test_sign_matches_githubs_documented_example() -> None:
    # the example in GitHub's "Validating webhook deliveries" documentation
    assert sign(b"It's a Secret to Everybody", b"Hello, World!") == \
        "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"


# -- replays ------------------------------------------------------------------------------
DELIVERY_HEADER = {"github": "X-GitHub-Delivery", "gitlab": "X-Gitlab-Event-UUID",
                   "gitea": "X-Gitea-Delivery", "generic": "X-Pincompile-Delivery"}


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_replayed_delivery_is_refused_within_the_window(provider: str) -> None:
    clock = Clock()
    deliveries = Deliveries(window=600, clock=clock)
    payload = body()
    headers = signed(provider, payload) | {DELIVERY_HEADER[provider]: "d-1"}

    def send(h: dict[str, str], p: bytes) -> Verdict:
        return judge(provider, h, p, SECRET, "main", deliveries=deliveries)

    accepted = send(headers, payload)
    assert accepted.status == 202 and accepted.push is not None
    assert accepted.push.delivery == "d-1"  # what the history records as its push
    again = send(headers, payload)
    assert (again.status, again.result, again.push) == (409, "replayed", None)
    # the same body under a fresh delivery id is the same delivery
    assert send(headers | {DELIVERY_HEADER[provider]: "d-2"}, payload).status == 409
    # the same id with another (signed) body too
    other = body(after="f" * 40)
    assert send(signed(provider, other) | {DELIVERY_HEADER[provider]: "d-1"}, other).status \
        == 409
    fresh = body(after="e" * 40)
    assert send(signed(provider, fresh) | {DELIVERY_HEADER[provider]: "d-3"}, fresh).status \
        == 202
    clock.now += 601
    assert send(headers, payload).status == 202, "the window is over"


def test_gitlab_retries_are_known_by_their_idempotency_key() -> None:
    deliveries = Deliveries()
    first, retry = body(), body(after="f" * 40)
    key = {"Idempotency-Key": "k-1", "X-Gitlab-Event-UUID": "u-1"}
    assert judge("gitlab", signed("gitlab", first) | key, first, SECRET, "main",
                 deliveries=deliveries).status == 202
    assert judge("gitlab", signed("gitlab", retry) | key | {"X-Gitlab-Event-UUID": "u-2"},
                 retry, SECRET, "main", deliveries=deliveries).status == 409


def test_an_unauthenticated_request_is_not_remembered() -> None:
    deliveries = Deliveries()
    payload = body()
    forged = signed("github", payload, b"guess") | {"X-GitHub-Delivery": "d-1"}
    assert judge("github", forged, payload, SECRET, "main", deliveries=deliveries).status == 401
    real = signed("github", payload) | {"X-GitHub-Delivery": "d-1"}
    assert judge("github", real, payload, SECRET, "main", deliveries=deliveries).status == 202


def test_deliveries_keep_at_most_their_limit() -> None:
    deliveries = Deliveries(limit=100)
    for i in range(1000):
        assert not deliveries.replayed([f"k{i}"])
    assert len(deliveries._seen) <= 101


# -- the repository a push names ------------------------------------------------------------
FOLLOWED = "https://ci-bot:tok@git.internal/platform/specs.git"


def named(provider: str, url: str, full_name: str) -> dict[str, object]:
    """Where each provider's push payload names its repository."""
    if provider == "gitlab":
        return {"project": {"path_with_namespace": full_name, "git_http_url": url,
                            "git_ssh_url": f"git@git.internal:{full_name}.git"},
                "repository": {"git_http_url": url}}
    return {"repository": {"full_name": full_name, "clone_url": url,
                           "ssh_url": f"git@git.internal:{full_name}.git"}}


@pytest.mark.parametrize("provider", ["github", "gitlab", "gitea"])
def test_a_push_to_the_followed_repository_is_accepted(provider: str) -> None:
    for url in ("https://git.internal/platform/specs.git", "https://GIT.internal/platform/specs",
                "https://git.internal:443/platform/specs/"):
        payload = body(**named(provider, url, "platform/specs"))
        verdict = judge(provider, signed(provider, payload), payload, SECRET, "main",
                        repo=FOLLOWED)
        assert verdict.status == 202, (url, verdict)


@pytest.mark.parametrize("provider", ["github", "gitlab", "gitea"])
def test_a_push_naming_another_repository_is_refused(provider: str) -> None:
    payload = body(**named(provider, "https://git.internal/attacker/specs.git", "attacker/specs"))
    verdict = judge(provider, signed(provider, payload), payload, SECRET, "main",
                    repo=FOLLOWED)
    assert (verdict.status, verdict.result, verdict.push) == (403, "other_repository", None)
    assert "attacker/specs" in verdict.message and "tok" not in verdict.message


@pytest.mark.parametrize("provider", ["github", "gitlab", "gitea"])
def test_a_push_naming_no_repository_is_refused(provider: str) -> None:
    payload = body()
    verdict = judge(provider, signed(provider, payload), payload, SECRET, "main",
                    repo=FOLLOWED)
    assert (verdict.status, verdict.push) == (400, None)


@pytest.mark.parametrize(("url", "key"), [
    ("https://u:t@GitHub.com/acme/platform.git", "github.com/acme/platform"),
    ("git@github.com:acme/platform", "github.com/acme/platform"),
    ("ssh://git@github.com:22/acme/platform/", "github.com/acme/platform"),
    ("http://127.0.0.1:8080/x.git", "127.0.0.1:8080/x"),
    ("/srv/git/platform.git", "/srv/git/platform"),
])
def test_repository_key_forgets_credentials_scheme_and_suffix(url: str, key: str) -> None:
    assert repository_key(url) == key


def test_a_delivery_id_is_kept_short_and_plain() -> None:
    payload = body()
    hostile = signed("github", payload) | {"X-GitHub-Delivery": "<b>x</b>\n" + "7" * 300}
    verdict = judge("github", hostile, payload, SECRET, "main")
    assert verdict.push is not None and verdict.push.delivery == "bxb" + "7" * 125
    plain = judge("github", signed("github", payload), payload, SECRET, "main")
    assert plain.push is not None and plain.push.delivery == ""
