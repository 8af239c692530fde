"""The typed repository: every valid spec, indexed, each with the document it came from."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from pincompile.diagnostics import Location
from pincompile.loader import Document
from pincompile.models import (
    Cluster, PinScaler, Project, PinterestSideCar, Resource, RuntimeProfile, Workload,
)

R = TypeVar("R", bound=Resource)


@dataclass
class Entry(Generic[R]):
    """A typed spec and the document it was read from."""

    resource: R
    doc: Document

    def at(self, *path: str | int, key: bool = False) -> Location:
        """Location of a field of this spec, e.g. ``entry.at("spec", "replicas")``."""
        return self.doc.locate(path, key=key)

    @property
    def file(self) -> str:
        return self.doc.file


@dataclass
class Catalog:
    """All specs of one repository revision."""

    entries: list[Entry[Resource]] = field(default_factory=list)

    def add(self, entry: Entry[Resource]) -> None:
        self.entries.append(entry)

    def of_kind(self, kind: str) -> Iterator[Entry[Resource]]:
        return (e for e in self.entries if e.resource.kind == kind)

    @property
    def clusters(self) -> dict[str, Entry[Cluster]]:
        return _first_by_name(self.entries, Cluster)

    @property
    def projects(self) -> dict[str, Entry[Project]]:
        return _first_by_name(self.entries, Project)

    @property
    def sidecars(self) -> dict[str, Entry[PinterestSideCar]]:
        return _first_by_name(self.entries, PinterestSideCar)

    @property
    def runtime(self) -> Entry[RuntimeProfile] | None:
        profiles = [e for e in self.entries if isinstance(e.resource, RuntimeProfile)]
        return profiles[0] if profiles else None  # type: ignore[return-value]

    @property
    def workloads(self) -> list[Entry[Workload]]:
        items = [e for e in self.entries if isinstance(e.resource, Workload)]
        return sorted(items, key=lambda e: e.resource.key)  # type: ignore[arg-type,return-value]

    @property
    def scalers(self) -> list[Entry[PinScaler]]:
        items = [e for e in self.entries if isinstance(e.resource, PinScaler)]
        return sorted(items, key=lambda e: e.resource.key)  # type: ignore[arg-type,return-value]


def _first_by_name(entries: list[Entry[Resource]], cls: type[R]) -> dict[str, Entry[R]]:
    found: dict[str, Entry[R]] = {}
    for e in entries:
        if isinstance(e.resource, cls):
            found.setdefault(e.resource.name, e)  # type: ignore[arg-type]
    return dict(sorted(found.items()))
