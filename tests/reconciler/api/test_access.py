"""What authentication costs the host: a client address gets only so many reviews of
tokens the cache does not know, and a token the host refused is not reviewed again while
the cache holds it (the reviews themselves: test_access_e2e.py, on a real API server)."""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from reconciler.api.access import REVIEWS, Caller, HostAccess, RateLimits
from reconciler.api.app import Gateway, create_app
from reconciler.model import Obj
from reconciler.store import Store
from tests.support.api_fakes import Statuses, TablePolicy
from tests.support.kube_fake import FakeAccess, FakeCluster

APPS = {("PinApp", "shop", "web"): {"phase": "Healthy"}}


class CountingPolicy(TablePolicy):
    """Tokens and grants as tables; counts the token reviews it is asked for."""

    reviews = 0

    def authenticate(self, token: str) -> Caller:
        self.reviews += 1
        return super().authenticate(token)


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store.open(f"sqlite:///{tmp_path / 'insight.db'}")


def test_a_flood_of_made_up_tokens_costs_the_host_a_bounded_number_of_reviews(
        store: Store) -> None:
    policy = CountingPolicy({"alice-token": "alice"}, {("alice", "list", "PinApp", "shop")})
    app = create_app(Gateway(apps=Statuses(APPS), store=store, access=policy,
                             limits=RateLimits(1000, 1000)))
    attacker = TestClient(app, client=("203.0.113.9", 40000))
    started = time.monotonic()
    answers = [attacker.get("/api/v1/apps", headers={
        "Authorization": f"Bearer {secrets.token_hex(16)}"}) for _ in range(400)]
    elapsed = time.monotonic() - started
    qps, burst = REVIEWS
    assert policy.reviews <= burst + qps * elapsed + 1, (policy.reviews, elapsed)
    assert {a.status_code for a in answers} == {401, 429}
    refused = next(a for a in answers if a.status_code == 429)
    assert int(refused.headers["Retry-After"]) >= 1 and "too many" in refused.json()["detail"]

    user = TestClient(app, client=("198.51.100.7", 40000))  # another address is not held up
    ok = user.get("/api/v1/apps", headers={"Authorization": "Bearer alice-token"})
    assert ok.status_code == 200 and [i["name"] for i in ok.json()["items"]] == ["web"]


def host_of(token: Callable[[Obj], Obj], access: Callable[[Obj], Obj]) -> FakeAccess:
    """An in-memory host cluster answering TokenReviews with ``token`` and
    SubjectAccessReviews with ``access``."""
    cluster = FakeCluster("host")
    cluster.reviewers.update(TokenReview=token, SubjectAccessReview=access)
    return FakeAccess("host", cluster)


def alice_only(review: Obj) -> Obj:
    """Only ``alice-token`` is someone: alice."""
    if review["spec"]["token"] == "alice-token":
        return {"authenticated": True, "user": {"username": "alice"}}
    return {"authenticated": False}


def test_a_refused_token_sent_again_costs_neither_a_review_nor_the_addresss_budget(
        store: Store) -> None:
    host = host_of(alice_only, lambda _review: {"allowed": True})
    app = create_app(Gateway(apps=Statuses(APPS), store=store, access=HostAccess(host),
                             limits=RateLimits(1000, 1000)))
    client = TestClient(app)
    answers = {client.get("/api/v1/apps", headers={"Authorization": "Bearer stolen"}
                          ).status_code for _ in range(100)}
    assert answers == {401} and host.stats.by_verb["create"] == 1
    assert client.get("/api/v1/apps", headers={"Authorization": "Bearer alice-token"}
                      ).status_code == 200


def test_a_tenants_repeated_overviews_ask_again_only_about_what_it_may_see(
        store: Store) -> None:
    """Most of a tenant's decisions on an overview are denials (every other project's
    apps): they are kept longer than allows, so a refresh asks about its own projects."""
    apps = {(kind, project, "web"): {"phase": "Healthy"}
            for kind in ("PinApp", "PinterestService", "PinScaler")
            for project in ("shop", "ads", "search", "maps")}
    reviews: list[str] = []

    def shop_only(review: Obj) -> Obj:
        namespace = review["spec"]["resourceAttributes"]["namespace"]
        reviews.append(namespace)
        return {"allowed": namespace == "shop"}

    host = host_of(alice_only, shop_only)
    app = create_app(Gateway(apps=Statuses(apps), store=store,
                             access=HostAccess(host, ttl=0.2), limits=RateLimits(1000, 1000)))
    client = TestClient(app)
    auth = {"Authorization": "Bearer alice-token"}
    first = client.get("/api/v1/apps", headers=auth).json()["items"]
    assert {a["project"] for a in first} == {"shop"} and len(reviews) == 12
    time.sleep(0.3)  # the allows' ttl passes; the denials' does not
    reviews.clear()
    assert client.get("/api/v1/apps", headers=auth).json()["items"] == first
    assert reviews == ["shop"] * 3
