"""Read ``kind: Cluster`` documents for the fleet.

Deliberately small and isolated: it can be swapped for the typed spec loader in
``pincompile/`` later without touching the rest of the fleet code.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

API_VERSION = "pincompute.io/v1"
YAML_SUFFIXES = (".yaml", ".yml")


class ClusterSpecError(ValueError):
    """A Cluster document the fleet cannot use."""


@dataclass(frozen=True)
class ClusterSpec:
    """What the fleet needs to know about one member cluster."""

    name: str
    context: str
    region: str = ""
    zone: str = ""
    kubernetes_version: str = ""
    capacity: dict[str, str] = field(default_factory=dict)
    gpu_types: tuple[str, ...] = ()
    arch: tuple[str, ...] = ("amd64",)
    labels: dict[str, str] = field(default_factory=dict)
    tiers: tuple[str, ...] = ()
    schedulable: bool = True
    addons: tuple[str, ...] = ()
    source: str = ""


def _strs(value: Any, where: str, what: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str | int | float) for v in value):
        raise ClusterSpecError(f"{where}: spec.{what} must be a list of strings")
    return tuple(str(v) for v in value)


def _map(value: Any, where: str, what: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ClusterSpecError(f"{where}: spec.{what} must be a mapping")
    return {str(k): str(v) for k, v in value.items()}


def cluster_from_document(doc: dict[str, Any], where: str = "<document>") -> ClusterSpec:
    """Build a :class:`ClusterSpec` from one parsed ``kind: Cluster`` document."""
    meta = doc.get("metadata") or {}
    spec = doc.get("spec") or {}
    if not isinstance(meta, dict) or not isinstance(spec, dict):
        raise ClusterSpecError(f"{where}: metadata and spec must be mappings")
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        raise ClusterSpecError(f"{where}: Cluster without metadata.name")
    arch = _strs(spec.get("arch"), where, "arch") or ("amd64",)
    return ClusterSpec(
        name=name,
        context=str(spec.get("context") or name),
        region=str(spec.get("region") or ""),
        zone=str(spec.get("zone") or ""),
        kubernetes_version=str(spec.get("kubernetesVersion") or ""),
        capacity=_map(spec.get("capacity"), where, "capacity"),
        gpu_types=_strs(spec.get("gpuTypes"), where, "gpuTypes"),
        arch=arch,
        labels=_map(spec.get("labels"), where, "labels"),
        tiers=_strs(spec.get("tiers"), where, "tiers"),
        schedulable=spec.get("schedulable", True) is not False,
        addons=_strs(spec.get("addons"), where, "addons"),
        source=where,
    )


def load_clusters(path: str | Path) -> list[ClusterSpec]:
    """Read every ``kind: Cluster`` document from the YAML files under ``path``.

    ``path`` may be a file or a directory (searched recursively). Results are sorted by
    name; duplicate names and duplicate contexts are errors.
    """
    root = Path(path)
    if root.is_file():
        files = [root]
    elif root.is_dir():
        files = sorted(p for p in root.rglob("*") if p.suffix in YAML_SUFFIXES and p.is_file())
    else:
        raise ClusterSpecError(f"{root}: no such file or directory")
    yaml = YAML(typ="safe", pure=True)
    found: dict[str, ClusterSpec] = {}
    for file in files:
        try:
            docs = list(yaml.load_all(file.read_text(encoding="utf-8")))
        except (YAMLError, UnicodeDecodeError, OSError) as exc:
            raise ClusterSpecError(f"{file}: cannot read YAML: {exc}") from exc
        for index, doc in enumerate(docs):
            if not isinstance(doc, dict) or doc.get("kind") != "Cluster":
                continue
            if doc.get("apiVersion", API_VERSION) != API_VERSION:
                continue
            spec = cluster_from_document(doc, f"{file} (document {index + 1})")
            if spec.name in found:
                raise ClusterSpecError(
                    f"{spec.source}: Cluster {spec.name!r} already defined in "
                    f"{found[spec.name].source}"
                )
            found[spec.name] = spec
    contexts: dict[str, str] = {}
    for spec in found.values():
        if spec.context in contexts:
            raise ClusterSpecError(
                f"{spec.source}: context {spec.context!r} also used by {contexts[spec.context]}"
            )
        contexts[spec.context] = spec.name
    return [found[name] for name in sorted(found)]
