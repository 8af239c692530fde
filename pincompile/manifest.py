"""The compiler's output unit, shared by the compiler and the reconciler (imports nothing
of either, so neither depends on the other through it)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pincompile.catalog import Entry

#: Every generated object carries these; the reconciler never touches an object without
#: ``MANAGED_BY: MANAGED_BY_VALUE``.
MANAGED_BY = "app.kubernetes.io/managed-by"
MANAGED_BY_VALUE = "pincompile"
LABEL_PROJECT = "pincompute.io/project"
LABEL_APP = "pincompute.io/app"
LABEL_KIND = "pincompute.io/kind"
LABEL_TIER = "pincompute.io/tier"
LABEL_CLUSTER = "pincompute.io/cluster"
ANNOTATION_SOURCE = "pincompute.io/source"
ANNOTATION_REVISION = "pincompute.io/revision"
#: On a PinPod's Pod: "true" when it is recreated in another cluster if its cluster is lost.
ANNOTATION_FAILOVER = "pincompute.io/failover"
#: A PinScaler HPA's scheduled floors (JSON), which the reconciler applies.
ANNOTATION_SCALE_SCHEDULES = "pincompute.io/scale-schedules"


@dataclass
class Manifest:
    """One generated Kubernetes object destined for one member cluster."""

    cluster: str
    obj: dict[str, Any]
    source: Entry[Any] | None = None

    @property
    def kind(self) -> str:
        return str(self.obj["kind"])

    @property
    def api_version(self) -> str:
        return str(self.obj["apiVersion"])

    @property
    def name(self) -> str:
        return str(self.obj["metadata"]["name"])

    @property
    def namespace(self) -> str | None:
        ns = self.obj["metadata"].get("namespace")
        return str(ns) if ns else None

    def at_revision(self, revision: str) -> Manifest:
        """This object as a compile of ``revision`` makes it (where only the revision
        changed): a copy with its revision annotation set, sharing everything else."""
        meta = self.obj["metadata"]
        annotations = meta.get("annotations")
        if not annotations or ANNOTATION_REVISION not in annotations:
            return self
        meta = {**meta, "annotations": {**annotations, ANNOTATION_REVISION: revision}}
        return Manifest(self.cluster, {**self.obj, "metadata": meta}, self.source)

    @property
    def relpath(self) -> str:
        """``<cluster>/<namespace or _cluster>/<kind>-<name>.yaml``."""
        return f"{self.cluster}/{self.namespace or '_cluster'}/{self.kind.lower()}-{self.name}.yaml"
