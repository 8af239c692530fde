"""Each app's own revision: the digest of its compiled objects, the host resource that
carries it, and a status that names the commit which last changed the app (pure)."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pincompile.manifest import ANNOTATION_REVISION, Manifest
from reconciler import host
from reconciler.desired import MemberState, app_digests
from reconciler.status import document
from reconciler.status.publish import Decided, documents, revisions_of

CART = ("PinApp", "shop", "cart")
NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)


def deployment(app: str, image: str, revision: str) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {
        "name": app, "namespace": "shop",
        "labels": {"pincompute.io/project": "shop", "pincompute.io/app": app,
                   "pincompute.io/kind": "PinApp"},
        "annotations": {ANNOTATION_REVISION: revision}},
        "spec": {"replicas": 1, "template": {"spec": {"containers": [{"image": image}]}}}}


def test_an_apps_digest_ignores_the_revision_and_follows_its_objects_only() -> None:
    def digests(cart_image: str, revision: str) -> dict[Any, str]:
        return app_digests([Manifest("rt-a", deployment("cart", cart_image, revision)),
                            Manifest("rt-b", deployment("cart", cart_image, revision)),
                            Manifest("rt-a", deployment("web", "web:1", revision))])

    first = digests("cart:1", "r1")
    assert first == digests("cart:1", "r2")
    changed = digests("cart:2", "r3")
    assert changed[CART] != first[CART]
    assert changed[("PinApp", "shop", "web")] == first[("PinApp", "shop", "web")]
    moved = app_digests([Manifest("rt-c", deployment("cart", "cart:1", "r1")),
                         Manifest("rt-b", deployment("cart", "cart:1", "r1"))])
    assert moved[CART] != first[CART]  # the same object placed in another cluster


def test_the_status_names_the_commit_its_resource_was_last_written_at() -> None:
    live = deployment("cart", "cart:1", "r1")
    live["status"] = {"readyReplicas": 1}
    member = MemberState("rt-a", "rt-a", "z", desired=[deployment("cart", "cart:1", "r2")],
                         live={("Deployment", "shop", "cart"): live})
    resource = {"apiVersion": host.API_VERSION, "kind": "PinApp", "metadata": {
        "name": "cart", "namespace": "shop", "annotations": {ANNOTATION_REVISION: "r1"}}}
    revisions = revisions_of({CART: resource})
    assert revisions == {CART: "r1"}
    first = documents({"rt-a": member}, {}, "r1", Decided(revisions=revisions), NOW)[CART]
    assert first["observedRevision"] == "r1"
    assert [c["observedRevision"] for c in first["clusters"]] == ["r1"]
    # a push (r2) that left the app alone: the same document, so nothing to write
    stored = copy.deepcopy(first)
    again = documents({"rt-a": member}, {CART: stored}, "r2", Decided(revisions=revisions),
                      NOW)[CART]
    assert again["observedRevision"] == "r1"
    assert not document.changed(stored, again)
    # without a revision of its own (the host could not be read): the pass's
    alone = documents({"rt-a": member}, {}, "r2", Decided(), NOW)[CART]
    assert alone["observedRevision"] == "r2"


def test_an_apps_resource_carries_its_digest_and_the_commit() -> None:
    from pincompile.compiler import compile_path

    result = compile_path(Path(__file__).parents[1] / "fixtures" / "repo", revision="r9")
    digests = app_digests(result.manifests)
    resources = {host.app_key(cr): cr for cr in host.desired_objects(
        result.catalog, "r9", digests) if cr["kind"] != "Namespace"}
    web = resources[("PinApp", "shop", "web")]["metadata"]["annotations"]
    assert web[host.ANNOTATION_COMPILED] == digests[("PinApp", "shop", "web")]
    assert web[ANNOTATION_REVISION] == "r9"
    assert host.observed_revision(resources[("PinApp", "shop", "web")]) == "r9"
