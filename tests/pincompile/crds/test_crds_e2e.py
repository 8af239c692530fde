"""The CRDs against a real API server: the host of a local fleet accepts them as structural,
stores a custom resource, serves its status subresource and its printer columns.

Uses the session fleet of ``tests/conftest.py``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from pincompile.crds import PROJECT_LABEL, all_crds, custom_resource
from tests.support.wait import wait_for

pytestmark = pytest.mark.e2e

PROJECT = "crds-e2e"  # its own namespace on the shared host: other modules use "shop"

APP = {
    "apiVersion": "pincompute.io/v1", "kind": "PinApp",
    "metadata": {"name": "cart", "project": PROJECT, "labels": {"team": "shop"}},
    "spec": {"replicas": 2, "tier": "ondemand",
             "rollout": {"maxSurge": "25%", "maxUnavailable": 0},
             "template": {"containers": [
                 {"name": "main", "image": "registry.internal/shop/cart:1.0.0",
                  "resources": {"cpu": "500m", "memory": 1073741824}}]}},
}


@pytest.fixture(scope="module")
def host(kube: Callable[[str], Any]) -> Any:
    """A kubernetes ApiClient for the host context of the session fleet."""
    return kube("host")


def get_table(api: Any, path: str) -> dict[str, Any]:
    """GET ``path`` as a meta.k8s.io Table (what kubectl get prints), for any client version."""
    headers = {"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}
    token = api.configuration.get_api_key_with_prefix("authorization")
    if token:
        headers["Authorization"] = token
    response = api.rest_client.request("GET", api.configuration.host + path, headers=headers)
    data = response.data if getattr(response, "data", None) else response.read()
    return json.loads(data)  # type: ignore[no-any-return]


def test_crds_are_established_and_store_a_workload(host: Any) -> None:
    from kubernetes import client
    from kubernetes.client.rest import ApiException

    ext = client.ApiextensionsV1Api(host)
    for definition in all_crds():  # the session's host may hold them already (another test)
        try:
            ext.create_custom_resource_definition(definition)
        except ApiException as exc:
            if exc.status != 409:
                raise
            name = definition["metadata"]["name"]
            current = ext.read_custom_resource_definition(name)
            definition = {**definition, "metadata": {
                **definition["metadata"], "resourceVersion": current.metadata.resource_version}}
            ext.replace_custom_resource_definition(name, definition)

    def established() -> bool:
        for definition in all_crds():
            got = ext.read_custom_resource_definition(definition["metadata"]["name"])
            conditions = {c.type: c.status for c in got.status.conditions or []}
            assert conditions.get("NonStructuralSchema") != "True", got.metadata.name
            if conditions.get("Established") != "True":
                return False
        return True

    wait_for(established, 60, "every CRD to be established")

    client.CoreV1Api(host).create_namespace({"metadata": {"name": PROJECT}})
    custom = client.CustomObjectsApi(host)
    resource = custom_resource(APP)
    created = custom.create_namespaced_custom_object(
        "pincompute.io", "v1", PROJECT, "pinapps", resource, field_validation="Strict")
    assert created["metadata"]["labels"][PROJECT_LABEL] == PROJECT
    # stored exactly as written: no server-side defaults sneak in
    assert created["spec"] == resource["spec"]

    # unknown fields and invalid values are refused by the schema
    typo = json.loads(json.dumps(resource))
    typo["metadata"]["name"] = "typo"
    typo["spec"]["replicass"] = 3
    with pytest.raises(ApiException) as refused:
        custom.create_namespaced_custom_object(
            "pincompute.io", "v1", PROJECT, "pinapps", typo, field_validation="Strict")
    assert refused.value.status in (400, 422) and "replicass" in str(refused.value.body)
    bad = json.loads(json.dumps(resource))
    bad["metadata"]["name"] = "bad"
    bad["spec"]["tier"] = "gold"
    with pytest.raises(ApiException) as invalid:
        custom.create_namespaced_custom_object("pincompute.io", "v1", PROJECT, "pinapps", bad)
    assert invalid.value.status == 422 and "spec.tier" in str(invalid.value.body)

    # the status subresource: the reconciler's aggregated status, per cluster
    status = {"status": {
        "phase": "Healthy", "ready": "2/2", "replicas": 2, "readyReplicas": 2,
        "observedRevision": "0123abcd", "observedGeneration": 1,
        "conditions": [{"type": "Ready", "status": "True", "reason": "AllClustersReady",
                        "lastTransitionTime": "2025-01-01T00:00:00Z"}],
        "clusters": [{"name": "solo", "phase": "Healthy", "replicas": 2, "readyReplicas": 2}],
    }}
    patched = custom.patch_namespaced_custom_object_status(
        "pincompute.io", "v1", PROJECT, "pinapps", "cart", status)
    assert patched["status"]["clusters"][0]["readyReplicas"] == 2
    assert patched["spec"] == resource["spec"]

    # the printer columns, as kubectl get shows them
    table = get_table(host, f"/apis/pincompute.io/v1/namespaces/{PROJECT}/pinapps")
    columns = [c["name"] for c in table["columnDefinitions"]]
    assert columns == ["Name", "Project", "Tier", "Ready", "Phase", "Age"]
    (row,) = table["rows"]
    assert row["cells"][:5] == ["cart", PROJECT, "ondemand", "2/2", "Healthy"]
