"""Commit links in an app's history (credentials never on the page) and the login
throttle for wrong tokens (per client address, 429 with Retry-After)."""

from __future__ import annotations

from datetime import UTC, datetime

from fastapi.testclient import TestClient

from reconciler.console.links import commit_url
from reconciler.console.throttle import LoginThrottle
from reconciler.store import RevisionRecord, Store
from tests.reconciler.console.conftest import csrf, logged_in

SHA = "0123456789abcdef0123456789abcdef01234567"


def test_a_commit_links_to_its_https_git_host_without_credentials() -> None:
    assert commit_url("https://deploy:s3cret@git.example.com/platform/specs.git", SHA) == \
        f"https://git.example.com/platform/specs/commit/{SHA}"
    assert commit_url("https://gitlab.example.com:8443/a/b/", SHA) == \
        f"https://gitlab.example.com:8443/a/b/-/commit/{SHA}"
    for repo in ("/srv/git/platform.git", "git@github.com:a/b.git", "http://git.test/a/b",
                 "https://git.test", "https://git.test:99999/a/b", "file:///srv/a.git"):
        assert commit_url(repo, SHA) is None, repo
    assert commit_url("https://git.test/a/b", "<script>") is None


def test_the_history_links_commits_and_never_shows_the_repository_credentials(
        console: TestClient, store: Store) -> None:
    key = ("PinApp", "shop", "cart")
    store.add_revision(RevisionRecord(app=key, revision="r1", result="converged", commit=SHA,
                                      applied_at=datetime(2026, 11, 1, tzinfo=UTC)))
    store.add_revision(RevisionRecord(app=key, revision="r0", result="converged", commit="",
                                      applied_at=datetime(2026, 10, 1, tzinfo=UTC)))
    page = logged_in(console).get("/apps/PinApp/shop/cart").text
    assert f'<a href="https://git.example.com/platform/specs/commit/{SHA}"><code>0123456789ab' \
        in page
    assert "s3cret" not in page and "deploy" not in page
    assert page.count("/commit/") == 1  # a revision without a commit has no link


def test_wrong_tokens_from_one_address_are_refused_for_a_while() -> None:
    throttle = LoginThrottle(failures=3, window=60.0, size=2)
    for t in (0.0, 1.0, 2.0):
        assert throttle.retry_after("10.0.0.1", now=t) == 0.0
        throttle.failed("10.0.0.1", now=t)
    assert throttle.retry_after("10.0.0.1", now=3.0) == 57.0
    assert throttle.retry_after("10.0.0.2", now=3.0) == 0.0  # per address
    assert throttle.retry_after("10.0.0.1", now=60.5) == 0.0  # the first left the window
    throttle.failed("10.0.0.2", now=4.0)
    throttle.failed("10.0.0.3", now=5.0)  # at most 2 addresses remembered
    assert throttle.retry_after("10.0.0.1", now=6.0) == 0.0


def test_the_login_form_answers_429_after_ten_wrong_tokens_but_not_for_a_right_one(
        console: TestClient) -> None:
    for _ in range(3):
        logged_in(console)  # right tokens are not counted
    for _ in range(10):
        assert console.post("/login", data={"token": "guess", "csrf": csrf(console)}
                            ).status_code == 401
    refused = console.post("/login", data={"token": "alice-token", "csrf": csrf(console)})
    assert refused.status_code == 429 and 1 <= int(refused.headers["retry-after"]) <= 60
    assert "too many wrong tokens from this address" in refused.text
