"""Stand-in CRDs for the addons a Cluster lists (``spec.addons``).

Only the API types are installed (schema-less, ``x-kubernetes-preserve-unknown-fields``) so
that objects for an addon can be applied to the clusters that offer it and are rejected by
the others. No operator runs: a TFJob or ScaledObject is stored, not acted upon.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

#: addon name -> (group, version, [(kind, plural)])
ADDON_CRDS: dict[str, tuple[str, str, list[tuple[str, str]]]] = {
    "kubeflow-training": ("kubeflow.org", "v1", [
        ("TFJob", "tfjobs"), ("PyTorchJob", "pytorchjobs"), ("MPIJob", "mpijobs"),
        ("XGBoostJob", "xgboostjobs"), ("PaddleJob", "paddlejobs"), ("JAXJob", "jaxjobs"),
    ]),
    "keda": ("keda.sh", "v1alpha1", [
        ("ScaledObject", "scaledobjects"), ("ScaledJob", "scaledjobs"),
        ("TriggerAuthentication", "triggerauthentications"),
    ]),
}


def crds_for(addons: Iterable[str]) -> list[dict[str, Any]]:
    """CustomResourceDefinition objects for the known addons (unknown ones are skipped)."""
    crds = []
    for addon in addons:
        if addon not in ADDON_CRDS:
            continue
        group, version, kinds = ADDON_CRDS[addon]
        for kind, plural in kinds:
            crds.append({
                "apiVersion": "apiextensions.k8s.io/v1",
                "kind": "CustomResourceDefinition",
                "metadata": {"name": f"{plural}.{group}",
                             "labels": {"pincompute.io/fleet-addon": addon}},
                "spec": {
                    "group": group, "scope": "Namespaced",
                    "names": {"kind": kind, "plural": plural, "singular": kind.lower(),
                              "listKind": f"{kind}List"},
                    "versions": [{
                        "name": version, "served": True, "storage": True,
                        "subresources": {"status": {}},
                        "schema": {"openAPIV3Schema": {
                            "type": "object", "x-kubernetes-preserve-unknown-fields": True}},
                    }],
                },
            })
    return crds


def install(api_client: Any, addons: Iterable[str]) -> None:
    """Create the addon CRDs through ``api_client`` (a kubernetes.client.ApiClient)."""
    from kubernetes import client

    ext: Any = client.ApiextensionsV1Api(api_client)
    for crd in crds_for(addons):
        ext.create_custom_resource_definition(body=crd)
