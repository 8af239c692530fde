"""The addon CRDs: the training operator's as released, stand-ins for the others."""

from __future__ import annotations

import json
from pathlib import Path

from reconciler.fleet import addons, build


def test_addon_crds_are_the_operators_for_training_and_stand_ins_for_keda(
        tmp_path: Path) -> None:
    (tmp_path / build.CRD_DIR).mkdir()
    for name in build.TRAINING_OPERATOR_CRDS:
        group_plural = name.split("_", 1)[1] + ".kubeflow.org"
        build.crd_path(tmp_path, name).write_text(json.dumps(
            {"kind": "CustomResourceDefinition", "metadata": {"name": group_plural}}))
    crds = {c["metadata"]["name"]: c
            for c in addons.crds_for(["kubeflow-training", "keda", "nope"], tmp_path)}
    assert set(crds) == {"tfjobs.kubeflow.org", "pytorchjobs.kubeflow.org",
                         "scaledobjects.keda.sh", "scaledjobs.keda.sh",
                         "triggerauthentications.keda.sh"}
    assert crds["tfjobs.kubeflow.org"]["metadata"]["labels"] == {
        addons.LABEL: "kubeflow-training"}
    assert "spec" not in crds["tfjobs.kubeflow.org"]  # as stored: the release's own schema


def test_a_crd_is_served_once_established_and_in_its_group_versions_discovery() -> None:
    """What the training operator needs before it starts: its REST mapper reads a group
    version's kinds once, and the operator exits when one of them is missing."""
    from types import SimpleNamespace as Obj

    def crd(established: str) -> Obj:
        return Obj(status=Obj(conditions=[Obj(type="Established", status=established)]),
                   spec=Obj(group="kubeflow.org", versions=[Obj(name="v1", served=True)],
                            names=Obj(plural="pytorchjobs")))

    class Discovery:
        """The group version discovery of CustomObjectsApi."""

        def __init__(self, plurals: list[str] | None) -> None:
            self.plurals = plurals
            self.asked: list[str] = []

        def get_api_resources(self, group: str, version: str) -> Obj:
            from kubernetes.client.rest import ApiException

            self.asked.append(f"{group}/{version}")
            if self.plurals is None:
                raise ApiException(status=404, reason="Not Found")
            return Obj(resources=[Obj(name=p) for p in self.plurals])

    early = Discovery(["tfjobs"])
    assert not addons.served(early, crd("False")) and not early.asked
    assert not addons.served(early, crd("True"))  # established, not yet discovered
    assert early.asked == ["kubeflow.org/v1"]
    assert not addons.served(Discovery(None), crd("True"))  # no such group version yet
    assert addons.served(Discovery(["tfjobs", "pytorchjobs"]), crd("True"))
