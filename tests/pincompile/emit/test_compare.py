"""The pure comparison: Manifest lists in, added / changed / removed per cluster out."""

from __future__ import annotations

import copy
import json
from typing import Any

from pincompile.emit.compare import (
    MARKDOWN_LIMIT,
    changed_paths,
    diff_manifests,
    render_json,
    render_markdown,
    render_text,
    summary_line,
    to_yaml,
    without_volatile,
)
from pincompile.manifest import Manifest


def deployment(replicas: int = 2, *, name: str = "cart", labels: dict[str, str] | None = None,
               revision: str = "aaa", image: str = "registry.internal/shop/cart:1.0.0",
               api: str = "apps/v1") -> dict[str, Any]:
    return {
        "apiVersion": api, "kind": "Deployment",
        "metadata": {"name": name, "namespace": "shop", "labels": labels or {"team": "shop"},
                     "annotations": {"pincompute.io/revision": revision}},
        "spec": {"replicas": replicas, "template": {
            "metadata": {"labels": {"app": name},
                         "annotations": {"pincompute.io/revision": revision}},
            "spec": {"containers": [
                {"name": "proxy", "image": "registry.internal/proxy:3.2.1"},
                {"name": "main", "image": image, "env": [{"name": "A", "value": "1"}]}]}}},
    }


def configmap(name: str = "cart-config", data: str = "a: 1\nb: 2\n") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "shop"}, "data": {"app.yaml": data}}


def namespace() -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}}


def m(cluster: str, obj: dict[str, Any]) -> Manifest:
    return Manifest(cluster, copy.deepcopy(obj))


BASE = [m("east-a", namespace()), m("east-a", deployment(2)), m("east-a", configmap()),
        m("east-b", namespace()), m("east-b", deployment(2))]


def test_identical_compiles_show_nothing() -> None:
    report = diff_manifests(BASE, copy.deepcopy(BASE))
    assert report.empty and report.unchanged == 5
    assert report.clusters == ["east-a", "east-b"]
    assert render_text(report) == "no differences: 5 objects in 2 clusters unchanged\n"


def test_added_changed_removed_per_cluster() -> None:
    head = [m("east-a", namespace()), m("east-a", deployment(4)),
            m("east-b", namespace()), m("east-b", deployment(2)),
            m("east-b", configmap("new-config"))]
    report = diff_manifests(BASE, head)
    got = [(c.key.cluster, c.action, c.key.kind, c.key.name) for c in report.changes]
    assert got == [
        ("east-a", "removed", "ConfigMap", "cart-config"),
        ("east-a", "changed", "Deployment", "cart"),
        ("east-b", "added", "ConfigMap", "new-config"),
    ]
    assert report.counts("east-a") == {"added": 0, "changed": 1, "removed": 1}
    assert report.counts("east-b") == {"added": 1, "changed": 0, "removed": 0}
    assert report.unchanged == 3


def test_key_order_and_revision_annotation_do_not_count() -> None:
    obj = deployment(2, revision="bbb")
    reordered = {k: obj[k] for k in reversed(list(obj))}
    reordered["metadata"] = {k: obj["metadata"][k] for k in reversed(list(obj["metadata"]))}
    report = diff_manifests([m("east-a", deployment(2, revision="aaa"))],
                            [m("east-a", reordered)])
    assert report.empty


def test_other_annotations_do_count() -> None:
    obj = deployment(2)
    obj["metadata"]["annotations"]["pincompute.io/source"] = "apps/shop/cart.yaml"
    report = diff_manifests([m("east-a", deployment(2))], [m("east-a", obj)])
    assert [c.action for c in report.changes] == ["changed"]


def test_moving_a_spec_to_another_file_counts() -> None:
    def with_source(source: str) -> dict[str, Any]:
        obj = deployment(2)
        obj["metadata"]["annotations"]["pincompute.io/source"] = source
        return obj

    moved = diff_manifests([m("east-a", with_source("apps/cart.yaml"))],
                           [m("east-a", with_source("apps/shop/cart.yaml"))])
    assert moved.changes[0].paths == [
        'metadata.annotations["pincompute.io/source"]: "apps/cart.yaml" → "apps/shop/cart.yaml"']


def test_normalize_strips_the_revision_at_every_metadata_level() -> None:
    out = without_volatile(deployment(2, revision="x"))
    assert "annotations" not in out["metadata"]
    assert "annotations" not in out["spec"]["template"]["metadata"]
    # a data key that merely looks like an annotation is left alone
    cm = configmap()
    cm["data"]["annotations"] = "pincompute.io/revision"
    assert without_volatile(cm) == cm


def test_unified_diff_of_a_change() -> None:
    report = diff_manifests([m("east-a", deployment(2))],
                            [m("east-a", deployment(4, labels={"team": "shop", "x": "z"}))])
    (change,) = report.changes
    lines = change.diff.splitlines()
    assert lines[0] == "--- a/east-a/shop/deployment-cart.yaml"
    assert lines[1] == "+++ b/east-a/shop/deployment-cart.yaml"
    assert "-  replicas: 2" in lines and "+  replicas: 4" in lines
    assert "+    x: z" in lines
    assert any(line.startswith("@@ ") for line in lines)
    # only changed lines carry a sign; context lines start with a space
    assert sum(1 for line in lines[2:] if line[:1] in "+-") == 3
    assert change.paths == ['metadata.labels.x: added "z"', "spec.replicas: 2 → 4"]


def test_added_and_removed_diff_against_dev_null() -> None:
    report = diff_manifests([m("east-a", configmap("old"))], [m("east-a", configmap("new"))])
    removed, added = sorted(report.changes, key=lambda c: c.action, reverse=True)
    assert removed.action == "removed" and added.action == "added"
    assert added.diff.startswith("--- /dev/null\n+++ b/east-a/shop/configmap-new.yaml\n")
    assert removed.diff.startswith("--- a/east-a/shop/configmap-old.yaml\n+++ /dev/null\n")
    assert all(line.startswith("+") for line in added.diff.splitlines()[2:]
               if not line.startswith("@@"))


def test_multiline_strings_diff_line_by_line() -> None:
    report = diff_manifests([m("east-a", configmap(data="a: 1\nb: 2\nc: 3\n"))],
                            [m("east-a", configmap(data="a: 1\nb: 20\nc: 3\n"))])
    lines = report.changes[0].diff.splitlines()
    assert "-    b: 2" in lines and "+    b: 20" in lines


def test_api_version_bump_is_a_change_of_the_same_object() -> None:
    report = diff_manifests([m("east-a", deployment(2, api="apps/v1beta2"))],
                            [m("east-a", deployment(2))])
    (change,) = report.changes
    assert change.action == "changed"
    assert change.paths == ['apiVersion: "apps/v1beta2" → "apps/v1"']


def test_same_object_in_two_clusters_is_two_keys() -> None:
    report = diff_manifests([m("east-a", deployment(2))], [m("east-b", deployment(2))])
    assert [(c.key.cluster, c.action) for c in report.changes] == [
        ("east-a", "removed"), ("east-b", "added")]


def test_cluster_filter() -> None:
    head = [m("east-a", namespace()), m("east-a", deployment(4)), m("east-b", namespace()),
            m("east-b", deployment(3))]
    report = diff_manifests(BASE, head, clusters={"east-b"})
    assert {c.key.cluster for c in report.changes} == {"east-b"}
    assert report.clusters == ["east-b"]


def test_changed_paths_name_list_items_by_name() -> None:
    after = deployment(2, image="registry.internal/shop/cart:1.1.0")
    after["spec"]["template"]["spec"]["containers"][1]["env"].append({"name": "B", "value": "2"})
    del after["metadata"]["labels"]["team"]
    after["metadata"]["labels"]["app.kubernetes.io/name"] = "cart"
    paths = changed_paths(deployment(2), after)
    assert paths == [
        'metadata.labels.team: removed (was "shop")',
        'metadata.labels["app.kubernetes.io/name"]: added "cart"',
        "spec.template.spec.containers[name=main].env[name=B]: added "
        '{"name": "B", "value": "2"}',
        "spec.template.spec.containers[name=main].image: "
        '"registry.internal/shop/cart:1.0.0" → "registry.internal/shop/cart:1.1.0"',
    ]


def test_changed_paths_are_capped() -> None:
    before = {"data": {f"k{i}": "a" for i in range(30)}}
    after = {"data": {f"k{i}": "b" for i in range(30)}}
    paths = changed_paths(before, after, limit=5)
    assert len(paths) == 6 and paths[-1] == "… and 25 more"


def test_canonical_yaml_sorts_keys_and_keeps_block_strings() -> None:
    text = to_yaml({"b": 1, "a": {"z": "x\ny\n", "c": [2, 1]}})
    assert text.index("a:") < text.index("b:")
    assert "z: |" in text and "    x\n    y\n" in text
    assert "- 2\n  - 1" in text  # list order is meaning, never sorted


def test_text_rendering() -> None:
    head = [m("east-a", namespace()), m("east-a", deployment(4)), m("east-b", namespace()),
            m("east-b", deployment(2)), m("east-b", configmap("new"))]
    report = diff_manifests(BASE, head)
    text = render_text(report)
    assert text.splitlines()[:5] == [
        "cluster east-a: 0 added, 1 changed, 1 removed",
        "  - removed  ConfigMap shop/cart-config",
        "  ~ changed  Deployment shop/cart",
        "      spec.replicas: 2 → 4",
        "",
    ]
    assert "cluster east-b: 1 added, 0 changed, 0 removed" in text
    assert "+++ b/east-b/shop/configmap-new.yaml" in text
    assert text.rstrip().endswith(
        "3 objects differ in 2 of 2 clusters: 1 added, 1 changed, 1 removed (3 unchanged)")
    assert "\x1b[" not in text
    stat = render_text(report, stat=True)
    assert "@@" not in stat and "~ changed  Deployment shop/cart" in stat


def test_text_colors_like_git() -> None:
    report = diff_manifests([m("east-a", deployment(2))], [m("east-a", deployment(3))])
    text = render_text(report, color=True)
    assert "\x1b[31m-  replicas: 2\x1b[0m" in text
    assert "\x1b[32m+  replicas: 3\x1b[0m" in text
    assert "\x1b[36m@@" in text


def test_summary_line_grammar() -> None:
    report = diff_manifests([m("east-a", deployment(2))], [m("east-a", deployment(3))])
    assert summary_line(report) == (
        "1 object differs in 1 of 1 cluster: 0 added, 1 changed, 0 removed (0 unchanged)")


def test_markdown_comment() -> None:
    head = [m("east-a", namespace()), m("east-a", deployment(4)), m("east-b", namespace()),
            m("east-b", deployment(2))]
    report = diff_manifests(BASE, head)
    md = render_markdown(report, base="origin/main @ 0123abcd", head="working tree")
    assert md.startswith("### pincompile diff\n\n`origin/main @ 0123abcd` → `working tree`\n")
    assert "**2 objects change in 1 of 2 clusters** — 0 added, 1 changed, 1 removed" in md
    assert "#### `east-a` — 0 added, 1 changed, 1 removed" in md
    assert "| Change | Kind | Namespace | Name | What changes |" in md
    assert "| 🟡 changed | Deployment | shop | cart | <code>spec.replicas: 2 → 4</code> |" in md
    assert "| 🔴 removed | ConfigMap | shop | cart-config |  |" in md
    assert "<details><summary>~ Deployment shop/cart</summary>" in md
    assert "```diff\n--- a/east-a/shop/deployment-cart.yaml" in md
    assert md.count("<details>") == md.count("</details>") == 2
    assert "east-b" not in md  # nothing changes there


def test_markdown_without_changes() -> None:
    md = render_markdown(diff_manifests(BASE, BASE), base="main", head="feature")
    assert "**No changes** to generated objects (5 objects in 2 clusters)." in md


def test_markdown_escapes_table_cells_and_fences() -> None:
    tricky = configmap("tricky", data="```\nx | y <b>\n```\n")
    report = diff_manifests([m("east-a", configmap("tricky"))], [m("east-a", tricky)])
    md = render_markdown(report, base="a", head="b")
    row = next(line for line in md.splitlines() if line.startswith("| 🟡"))
    assert "&#124;" in row and "&lt;b&gt;" in row
    assert row.count("|") == 6  # five cells: the data did not split the row
    assert "````diff\n" in md  # a longer fence than the backticks inside


def test_markdown_stays_under_the_limit() -> None:
    base = [m("east-a", configmap(f"cm-{i:03}", data="x\n" * 200)) for i in range(300)]
    head = [m("east-a", configmap(f"cm-{i:03}", data="y\n" * 200)) for i in range(300)]
    report = diff_manifests(base, head)
    md = render_markdown(report, base="a", head="b", command="pincompile diff --base a")
    assert len(md) <= MARKDOWN_LIMIT
    assert "left out to keep this comment short. Run `pincompile diff --base a`" in md
    assert md.count("<details>") == md.count("</details>") >= 1
    small = render_markdown(report, base="a", head="b", limit=8_000)
    assert len(small) <= 8_000 and "table row" in small


def test_json_rendering() -> None:
    report = diff_manifests(BASE, [*BASE[:1], m("east-a", deployment(3)), *BASE[2:]])
    data = json.loads(render_json(report, base={"ref": "main"}, head={"ref": None}))
    assert data["different"] is True
    assert data["summary"] == {"added": 0, "changed": 1, "removed": 0, "unchanged": 4}
    (change,) = data["changes"]
    assert change["kind"] == "Deployment" and change["cluster"] == "east-a"
    assert change["apiVersion"] == "apps/v1" and change["namespace"] == "shop"
    assert change["changedPaths"] == ["spec.replicas: 2 → 3"]
    assert "+  replicas: 3" in change["diff"]
    assert data["clusters"]["east-b"] == {"added": 0, "changed": 0, "removed": 0}
