"""`pincompile fleet load`: its arguments, and the kwok usage rules that read what it sets."""

from __future__ import annotations

import pytest


def test_usage_config_serves_resource_metrics_and_reads_the_load_annotations() -> None:
    from ruamel.yaml import YAML

    from reconciler.fleet.fleet import USAGE
    from reconciler.fleet.load import annotation_key

    docs = {d["kind"]: d for d in YAML(typ="safe").load_all(USAGE.read_text())}
    assert docs["Metric"]["spec"]["path"] == "/metrics/nodes/{nodeName}/metrics/resource"
    usage = docs["ClusterResourceUsage"]["spec"]["usages"][0]["usage"]
    assert annotation_key("NS", "APP", "KIND", "cpu") == "APP.NS.load.fleet.pincompute.io/KIND.cpu"
    for resource in ("cpu", "memory"):
        expression = " ".join(usage[resource]["expression"].split())
        # the expression builds the key the CLI writes: APP.NS.<domain>/KIND.<resource>
        key = ('pod.metadata.labels["pincompute.io/app"] + "." + pod.metadata.namespace + '
               '".load.fleet.pincompute.io/" + pod.metadata.labels["pincompute.io/kind"] + '
               f'".{resource}')
        assert f'({key}") in node.metadata.annotations' in expression
        assert f'({key}-until") in node.metadata.annotations' in expression
        assert f'container.resources.requests["{resource}"]' in expression


def test_load_arguments_are_checked() -> None:
    from reconciler.fleet.load import LoadError, annotation_key, parse_app, parse_fraction

    assert parse_fraction("90%") == pytest.approx(0.9)
    assert parse_fraction("150%") == pytest.approx(1.5)
    for bad in ("90", "-5%", "ninety%", "2000%"):
        with pytest.raises(LoadError):
            parse_fraction(bad)
    app = parse_app("PinterestService/search/search-api")
    assert (app.kind, app.project, app.name) == ("PinterestService", "search", "search-api")
    for bad in ("search/search-api", "PinterestService/Search/x", "a/b/c/d"):
        with pytest.raises(LoadError):
            parse_app(bad)
    # a valid annotation key: DNS-subdomain prefix, name part of at most 63 characters
    key = annotation_key("search", "search-api", "PinService", "cpu-until")
    prefix, name = key.split("/")
    assert len(prefix) <= 253 and len(name) <= 63
