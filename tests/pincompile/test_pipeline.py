"""The one flow (load → parse → check → place → expand) as a user meets it through validate."""

from __future__ import annotations

import pytest

from pincompile.models.types import check_image
from pincompile.pipeline import run
from pincompile.source.loader import load_text

PLATFORM = """\
apiVersion: pincompute.io/v1
kind: Project
metadata: {name: search}
spec:
  quota: {ondemand: {cpu: "10", memory: 10Gi}}
---
apiVersion: pincompute.io/v1
kind: Cluster
metadata: {name: c1}
spec: {region: r, zone: z, capacity: {cpu: "100", memory: 100Gi}}
---
apiVersion: pincompute.io/v1
kind: RuntimeProfile
metadata: {name: default}
spec: {defaultResources: {cpu: 100m, memory: 128Mi}}
"""

APP = """\
apiVersion: pincompute.io/v1
kind: PinApp
metadata: {name: app, project: search}
spec:
  template:
    containers:
      - {name: main, image: "x:1", env: [{name: A, value: "1"}, {name: A, value: "2"}]}
      - {name: main, image: "x:1"}
    volumes:
      - {name: v, type: emptyDir, mountPath: /a}
      - {name: v, type: emptyDir, mountPath: /b}
"""


def test_each_mistake_is_reported_once_at_its_place() -> None:
    loaded = load_text("platform.yaml", PLATFORM)
    loaded.extend(load_text("app.yaml", APP))
    result = run(loaded, revision="test")
    assert [(d.file, d.line, d.column, d.code) for d in result.diagnostics] == [
        ("app.yaml", 7, 72, "duplicate-env"),
        ("app.yaml", 8, 16, "duplicate-container"),
        ("app.yaml", 11, 16, "duplicate-volume"),
    ]
    assert not result.ok


def test_a_valid_repo_compiles_to_objects_for_its_cluster() -> None:
    loaded = load_text("platform.yaml", PLATFORM)
    loaded.extend(load_text("app.yaml", APP.replace(
        '      - {name: main, image: "x:1"}\n', "").replace(
        ', {name: A, value: "2"}', "").replace(
        "      - {name: v, type: emptyDir, mountPath: /b}\n", "")))
    result = run(loaded, revision="test")
    assert result.ok, result.diagnostics
    kinds = {(m.cluster, m.kind, m.name) for m in result.manifests}
    assert ("c1", "Deployment", "app") in kinds
    assert ("c1", "Namespace", "search") in kinds


@pytest.mark.parametrize("image", ["x:1", "localhost:5000/team/app:2.0", "a/b@sha256:" + "0" * 64])
def test_images_with_a_tag_or_digest_are_accepted(image: str) -> None:
    assert check_image(image) == image


@pytest.mark.parametrize(("image", "problem"), [
    ("registry:5000/app", "has no tag or digest"),
    ("busybox", "has no tag or digest"),
    ("app:latest", "uses ':latest'"),
])
def test_images_without_a_pinned_version_are_refused(image: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        check_image(image)
