"""Which objects a LIST or watch of a managed kind asks the API server for."""

from __future__ import annotations

from reconciler import kinds
from reconciler.clients import read


def test_pods_are_listed_by_the_pinpod_label_so_no_deployment_pod_is_sent() -> None:
    pod, deployment = kinds.info("Pod"), kinds.info("Deployment")
    assert pod is not None and deployment is not None
    assert read.selector(kind=pod) == {
        "label_selector": "app.kubernetes.io/managed-by=pincompile,pincompute.io/kind=PinPod"}
    assert read.selector(kind=deployment) == {
        "label_selector": "app.kubernetes.io/managed-by=pincompile"}
    # a selector given is used as it is, whatever the kind
    assert read.selector(label_selector="pincompute.io/app", kind=pod) == {
        "label_selector": "pincompute.io/app"}
    assert read.selector(field_selector="involvedObject.kind=Pod", kind=pod) == {
        "field_selector": "involvedObject.kind=Pod"}


def test_only_pinpods_compile_to_bare_pods() -> None:
    """The Pod selector holds only while PinPod is the one spec kind compiled to a Pod."""
    from pathlib import Path

    from pincompile.compiler import compile_path
    from pincompile.manifest import LABEL_KIND

    examples = Path(__file__).resolve().parents[3] / "examples"
    pods = [m.obj for m in compile_path(examples).manifests if m.obj["kind"] == "Pod"]
    assert pods
    assert {p["metadata"]["labels"][LABEL_KIND] for p in pods} == {"PinPod"}
