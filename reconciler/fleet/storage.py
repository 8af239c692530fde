"""StorageClasses whose volumes kwok provisions (fake PVs; see the volume stages).

``pincompute-block`` and ``pincompute-shared`` are the classes compiled ``ebs`` / ``efs``
volumes ask for; ``kwok-volume`` is the default class for claims that name none.
"""

from __future__ import annotations

from typing import Any

PROVISIONER = "kwok.x-k8s.io/volume"
DEFAULT_CLASS = "kwok-volume"
#: must match the storage classes listed in stages.yaml
STORAGE_CLASSES = (DEFAULT_CLASS, "pincompute-block", "pincompute-shared")


def storage_classes() -> list[dict[str, Any]]:
    """The StorageClass objects every fleet cluster gets."""
    return [{
        "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
        "metadata": {"name": name, "annotations": {
            "storageclass.kubernetes.io/is-default-class": str(name == DEFAULT_CLASS).lower()}},
        "provisioner": PROVISIONER, "reclaimPolicy": "Delete",
        "volumeBindingMode": "Immediate", "allowVolumeExpansion": True,
    } for name in STORAGE_CLASSES]


def install(api_client: Any) -> None:
    """Create the storage classes through ``api_client``."""
    from kubernetes import client

    api: Any = client.StorageV1Api(api_client)
    for sc in storage_classes():
        api.create_storage_class(body=sc)
