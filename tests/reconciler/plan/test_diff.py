"""Diff normalization: what never counts as drift."""

from __future__ import annotations

from reconciler.plan import diff


def test_server_owned_fields_and_the_revision_never_count_as_drift() -> None:
    desired = {"apiVersion": "v1", "kind": "ConfigMap", "data": {"a": "1"}, "metadata": {
        "name": "c", "annotations": {"pincompute.io/revision": "new"}}}
    live = {"apiVersion": "v1", "kind": "ConfigMap", "data": {"a": "1"}, "metadata": {
        "name": "c", "uid": "u", "resourceVersion": "7", "creationTimestamp": "t",
        "managedFields": [{"manager": "pincompile"}],
        "annotations": {"pincompute.io/revision": "old"}}}
    assert diff.same(live, desired)
    changed = {**desired, "data": {"a": "2"}}
    assert not diff.same(live, changed)
    text = diff.unified(live, changed, "ConfigMap/c")
    assert "-  a: '1'" in text and "+  a: '2'" in text and "revision" not in text
