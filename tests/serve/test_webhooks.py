"""Webhook authentication and interpretation, per provider."""

from __future__ import annotations

import hashlib
import hmac
import json

import pytest

from reconciler.serve.webhooks import judge, sign

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
