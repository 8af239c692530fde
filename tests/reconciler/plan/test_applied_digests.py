"""A long-running reconciler digests only what a push changed: the next pass's digests
reuse the last pass's for every object whose parts are the very objects digested then (an
incremental compile's new revision is a shallow copy), and compute afresh anything else."""

from __future__ import annotations

from typing import Any

import pytest

from pincompile.manifest import ANNOTATION_REVISION, Manifest
from reconciler.plan import applied


def deployment(image: str = "web:1", revision: str = "a") -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "shop", "labels": {"app": "web"},
                         "annotations": {ANNOTATION_REVISION: revision}},
            "spec": {"replicas": 2, "template": {"spec": {"containers": [
                {"name": "web", "image": image}]}}}}


@pytest.fixture
def computed(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many objects were serialized and hashed (one entry each)."""
    calls: list[int] = []
    real = applied.digest

    def counted(obj: dict[str, Any], *kept: Any) -> str:
        calls.append(1)
        return real(obj, *kept)

    monkeypatch.setattr(applied, "digest", counted)
    return calls


def test_an_object_at_a_new_revision_reuses_the_last_pass_digest(computed: list[int]) -> None:
    first = applied.Digests()
    manifest = Manifest("c1", deployment(), None)
    was = first.of(manifest.obj)
    computed.clear()
    moved = manifest.at_revision("b")
    assert moved.obj is not manifest.obj and moved.obj["spec"] is manifest.obj["spec"]
    reused = first.carried().of(moved.obj)
    assert not computed
    assert reused == was == applied.digest(moved.obj)


def test_anything_else_is_digested_afresh(computed: list[int]) -> None:
    first = applied.Digests()
    obj = deployment()
    first.of(obj)
    second = first.carried()
    computed.clear()
    relabeled = {**obj, "metadata": {**obj["metadata"], "labels": {"app": "other"}}}
    new_spec = {**obj, "spec": {**obj["spec"], "replicas": 3}}
    equal_but_new = deployment()  # same content, other objects: computed, same digest
    found = [second.of(changed) for changed in (relabeled, new_spec, equal_but_new)]
    assert len(computed) == 3
    assert found == [applied.digest(c) for c in (relabeled, new_spec, equal_but_new)]
    assert second.of(equal_but_new) == first.of(obj)
    assert second.of(relabeled) != first.of(obj) != second.of(new_spec)


def test_only_the_last_pass_is_carried(computed: list[int]) -> None:
    first = applied.Digests()
    obj = deployment()
    first.of(obj)
    third = first.carried().carried()  # the pass between digested nothing of it
    computed.clear()
    third.of({**obj, "metadata": dict(obj["metadata"])})
    assert len(computed) == 1
