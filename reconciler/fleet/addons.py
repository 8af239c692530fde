"""The CRDs of the addons a Cluster lists (``spec.addons``).

``kubeflow-training``: the CRDs of the kinds the fleet's Kubeflow training operator serves
(TFJob, PyTorchJob), as its release ships them (stored with the fleet's binaries, see
:mod:`reconciler.fleet.build`); the operator itself runs for that cluster
(:mod:`reconciler.fleet.training`).

Other addons (``keda``): only stand-in API types are installed (schema-less,
``x-kubernetes-preserve-unknown-fields``) so that objects for an addon can be applied to the
clusters that offer it and are rejected by the others. No operator runs: a ScaledObject is
stored, not acted upon.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from reconciler.fleet import build, training
from reconciler.fleet.errors import FleetError

LABEL = "pincompute.io/fleet-addon"
#: how long the API server may take to serve a new CRD
ESTABLISH_TIMEOUT = 60.0
#: stand-in addons: addon name -> (group, version, [(kind, plural)])
ADDON_CRDS: dict[str, tuple[str, str, list[tuple[str, str]]]] = {
    "keda": ("keda.sh", "v1alpha1", [
        ("ScaledObject", "scaledobjects"), ("ScaledJob", "scaledjobs"),
        ("TriggerAuthentication", "triggerauthentications"),
    ]),
}


def training_crds(bin_dir: Path) -> list[dict[str, Any]]:
    """The training operator's CRDs stored with the binaries in ``bin_dir``."""
    crds = []
    for name in build.TRAINING_OPERATOR_CRDS:
        crd = build.load_crd(bin_dir, name)
        crd.setdefault("metadata", {}).setdefault("labels", {})[LABEL] = training.ADDON
        crds.append(crd)
    return crds


def crds_for(addons: Iterable[str], bin_dir: Path) -> list[dict[str, Any]]:
    """CustomResourceDefinition objects for the known addons (unknown ones are skipped)."""
    crds = []
    for addon in addons:
        if addon == training.ADDON:
            crds += training_crds(bin_dir)
        if addon not in ADDON_CRDS:
            continue
        group, version, kinds = ADDON_CRDS[addon]
        for kind, plural in kinds:
            crds.append({
                "apiVersion": "apiextensions.k8s.io/v1",
                "kind": "CustomResourceDefinition",
                "metadata": {"name": f"{plural}.{group}",
                             "labels": {LABEL: addon}},
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


def install(api_client: Any, addons: Iterable[str], bin_dir: Path,
            timeout: float = ESTABLISH_TIMEOUT) -> None:
    """Create the addon CRDs through ``api_client`` (a kubernetes.client.ApiClient) and
    wait until the API server serves each: an operator started earlier may not find its
    kinds (the training operator's REST mapper reads a group's kinds once, and exits
    when one is missing)."""
    from kubernetes import client

    ext: Any = client.ApiextensionsV1Api(api_client)
    custom: Any = client.CustomObjectsApi(api_client)
    crds = crds_for(addons, bin_dir)
    for crd in crds:
        ext.create_custom_resource_definition(body=crd)
    pending = {crd["metadata"]["name"] for crd in crds}
    deadline = time.monotonic() + timeout
    while pending:
        pending = {name for name in pending if not served(
            custom, ext.read_custom_resource_definition_status(name))}
        if pending and time.monotonic() > deadline:
            raise FleetError(f"CRDs not established after {timeout:.0f}s: "
                             f"{', '.join(sorted(pending))}")
        if pending:
            time.sleep(0.2)


def served(custom: Any, crd: Any) -> bool:
    """Whether the API server serves a CRD: Established, and its kind in the discovery
    of its group version (what a client's REST mapper reads; ``custom``: a
    CustomObjectsApi)."""
    from kubernetes.client.rest import ApiException

    conditions = (crd.status.conditions if crd.status else None) or []
    if not any(c.type == "Established" and c.status == "True" for c in conditions):
        return False
    version = next(v.name for v in crd.spec.versions if v.served)
    try:
        found = custom.get_api_resources(crd.spec.group, version)
    except ApiException as exc:
        if exc.status == 404:  # the group version is not served yet
            return False
        raise
    return any(r.name == crd.spec.names.plural for r in found.resources or [])
