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
