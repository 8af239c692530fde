"""The record of what was applied: which objects provably need no dry-run, and that any
change made by someone else makes the object unsure again."""

from __future__ import annotations

import copy
from typing import Any

from reconciler.plan import applied


def desired(image: str = "web:1", revision: str = "a") -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "shop", "labels": {"app": "web"},
                         "annotations": {"pincompute.io/revision": revision, "team": "x"}},
            "spec": {"template": {"spec": {"containers": [
                {"name": "m", "image": image, "ports": [{"containerPort": 80}]}]}}}}


def live_after_apply(obj: dict[str, Any]) -> dict[str, Any]:
    """What the API server holds after applying ``obj``: defaults, status, bookkeeping."""
    out = copy.deepcopy(obj)
    out["metadata"].update(resourceVersion="41", uid="u", generation=1,
                           managedFields=[{"manager": "pincompile"}])
    out["spec"]["replicas"] = 1
    container = out["spec"]["template"]["spec"]["containers"][0]
    container["imagePullPolicy"] = "IfNotPresent"
    container["ports"][0]["protocol"] = "TCP"
    out["status"] = {"readyReplicas": 1}
    return out


def test_the_same_content_over_defaults_and_status_is_provably_unchanged() -> None:
    live = live_after_apply(applied.stamp(desired()))
    assert applied.unchanged(applied.stamp(desired()), live)
    # another commit leaving the object alone: only the revision differs
    assert applied.unchanged(applied.stamp(desired(revision="b")), live)
    # another manager's label on top is theirs: applying again would not remove it
    live["metadata"]["labels"]["oncall"] = "paged"
    assert applied.unchanged(applied.stamp(desired()), live)


def test_a_changed_value_of_ours_or_a_changed_desire_is_unsure() -> None:
    live = live_after_apply(applied.stamp(desired()))
    assert not applied.unchanged(applied.stamp(desired("web:2")), live)
    for change in (
        lambda o: o["metadata"]["labels"].update(app="other"),          # our label
        lambda o: o["metadata"]["annotations"].update(team="y"),        # our annotation
        lambda o: o["metadata"]["annotations"].pop("team"),             # removed
        lambda o: o["spec"]["template"]["spec"]["containers"][0].update(image="web:9"),
        lambda o: o["spec"]["template"]["spec"]["containers"].append({"name": "x"}),
    ):
        drifted = copy.deepcopy(live)
        change(drifted)
        assert not applied.unchanged(applied.stamp(desired()), drifted)


def test_without_a_record_or_with_another_one_the_object_is_unsure() -> None:
    live = live_after_apply(desired())  # applied by a pincompile without the record
    assert not applied.unchanged(applied.stamp(desired()), live)
    # we stopped setting a field (the label): the record differs, so a dry-run decides
    fewer = desired()
    del fewer["metadata"]["labels"]
    assert not applied.unchanged(applied.stamp(fewer),
                                 live_after_apply(applied.stamp(desired())))


def test_a_basis_leaves_out_what_an_hpa_owns_and_stamping_copies() -> None:
    with_replicas = desired()
    with_replicas["spec"]["replicas"] = 3
    without = copy.deepcopy(desired())
    assert applied.recorded(applied.stamp(with_replicas, without)) == \
        applied.recorded(applied.stamp(without))
    original = desired()
    applied.stamp(original)
    assert applied.ANNOTATION not in original["metadata"]["annotations"]


def test_records_are_the_digest_of_json_dumps_whatever_the_values() -> None:
    """Records written before (with ``json.dumps``) stay valid: the fast serializer is
    used only where its bytes are the same."""
    import hashlib
    import json

    values = [1e-05, 2.5e-07, 1e16, 0.1, -0.0, 2**70, float("nan"), "é", "a\x7fb",
              "\u2028", "rt-east", "1e-5", None, True, 0, "null"]
    for value in values:
        obj = desired()
        obj["spec"]["template"]["metadata"] = {"annotations": {"v": value}}  # type: ignore[index]
        obj["spec"]["extra"] = [value, {"k": value}]
        meta = {k: v for k, v in obj["metadata"].items() if k != "annotations"}
        meta["annotations"] = {"team": "x"}
        content = {k: v for k, v in obj.items() if k != "metadata"}
        blob = json.dumps([meta, content], sort_keys=True, separators=(",", ":"))
        assert applied.digest(obj) == hashlib.sha256(blob.encode()).hexdigest()[:20], value
