"""The fleet's member clusters, from the ``kind: Cluster`` specs a compile reads.

The specs are read, validated and defaulted by the compiler
(:func:`pincompile.contract.read_clusters`), so the fleet starts exactly the clusters the
compiler places workloads on: a Cluster the compiler refuses is refused here too, with its
location, and a Cluster that names no ``tiers`` serves every tier on both sides.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from pincompile.contract import Cluster, Diagnostic, Entry, read_clusters


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
    """Where the spec was read (``file:line:column``)."""


def cluster_spec(entry: Entry[Cluster], root: Path) -> ClusterSpec:
    """The fleet's view of one parsed Cluster spec read under ``root``."""
    cluster, spec = entry.resource, entry.resource.spec
    return ClusterSpec(
        name=cluster.metadata.name, context=cluster.context, region=spec.region,
        zone=spec.zone, kubernetes_version=spec.kubernetes_version,
        capacity={str(k): str(v) for k, v in spec.capacity.items()},
        gpu_types=tuple(spec.gpu_types), arch=tuple(spec.arch), labels=dict(spec.labels),
        tiers=tuple(spec.tiers), schedulable=spec.schedulable, addons=tuple(spec.addons),
        source=_where(root, entry.doc.file, entry.doc.line, entry.doc.column))


def _where(root: Path, file: str, line: int, column: int) -> str:
    return f"{root / file if root.is_dir() else root}:{line}:{column}"


def _error(root: Path, problem: Diagnostic) -> str:
    hint = f" ({problem.hint})" if problem.hint else ""
    return f"{_where(root, problem.file, problem.line, problem.column)}: {problem.message}{hint}"


def load_clusters(path: str | Path) -> list[ClusterSpec]:
    """Read every ``kind: Cluster`` document from the YAML files under ``path``.

    ``path`` may be a file or a directory (searched recursively, as a compile reads it).
    Results are sorted by name; an invalid Cluster spec, duplicate names and duplicate
    contexts are errors.
    """
    root = Path(path)
    if not root.exists():
        raise ClusterSpecError(f"{root}: no such file or directory")
    entries, problems = read_clusters(root)
    if problems:
        raise ClusterSpecError("\n".join(_error(root, p) for p in sorted(set(problems))))
    found: dict[str, ClusterSpec] = {}
    for spec in (cluster_spec(e, root) for e in entries):
        if spec.name in found:
            raise ClusterSpecError(f"{spec.source}: Cluster {spec.name!r} already defined in "
                                   f"{found[spec.name].source}")
        found[spec.name] = spec
    contexts: dict[str, str] = {}
    for spec in found.values():
        if spec.context in contexts:
            raise ClusterSpecError(
                f"{spec.source}: context {spec.context!r} also used by {contexts[spec.context]}"
            )
        contexts[spec.context] = spec.name
    return [found[name] for name in sorted(found)]
