"""The typed repository: every valid spec, indexed, each with the document it came from."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pincompile.diagnostics import Location
from pincompile.models import (
    KINDS,
    Cluster,
    PinScaler,
    PinterestSideCar,
    Project,
    Resource,
    RuntimeProfile,
    Workload,
)
from pincompile.source.loader import Document

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
    invalid: list[Document] = field(default_factory=list)
    """Specs that failed validation (see :func:`note_invalid`): rules that refer to one by
    name say so instead of reporting that no such spec exists."""
    _memo: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def add(self, entry: Entry[Resource]) -> None:
        self.entries.append(entry)
        self._memo.clear()

    def _cached(self, name: str, build: Callable[[], Any]) -> Any:
        """The indexes below are built once per set of entries and handed out as they are,
        read-only (callers ask for them once per workload: rebuilding or copying them each
        time would make a compile quadratic). The one cache of the catalog's indexes."""
        if self._memo.get("#entries") != len(self.entries):
            self._memo.clear()
            self._memo["#entries"] = len(self.entries)
        if name not in self._memo:
            self._memo[name] = build()
        return self._memo[name]

    def of_kind(self, kind: str) -> Iterator[Entry[Resource]]:
        return (e for e in self.entries if e.resource.kind == kind)

    @property
    def clusters(self) -> Mapping[str, Entry[Cluster]]:
        return self._cached("clusters", lambda: _first_by_name(self.entries, Cluster))  # type: ignore[no-any-return]

    @property
    def projects(self) -> Mapping[str, Entry[Project]]:
        return self._cached("projects", lambda: _first_by_name(self.entries, Project))  # type: ignore[no-any-return]

    @property
    def sidecars(self) -> Mapping[str, Entry[PinterestSideCar]]:
        return self._cached("sidecars",  # type: ignore[no-any-return]
                            lambda: _first_by_name(self.entries, PinterestSideCar))

    @property
    def runtime(self) -> Entry[RuntimeProfile] | None:
        def first() -> Entry[RuntimeProfile] | None:
            profiles = [e for e in self.entries if isinstance(e.resource, RuntimeProfile)]
            return profiles[0] if profiles else None  # type: ignore[return-value]

        return self._cached("runtime", first)  # type: ignore[no-any-return]

    @property
    def workloads(self) -> Sequence[Entry[Workload]]:
        def build() -> list[Entry[Workload]]:
            items = [e for e in self.entries if isinstance(e.resource, Workload)]
            return sorted(items, key=lambda e: e.resource.key)  # type: ignore[arg-type,return-value]

        return self._cached("workloads", build)  # type: ignore[no-any-return]

    @property
    def scalers(self) -> Sequence[Entry[PinScaler]]:
        def build() -> list[Entry[PinScaler]]:
            items = [e for e in self.entries if isinstance(e.resource, PinScaler)]
            return sorted(items, key=lambda e: e.resource.key)  # type: ignore[arg-type,return-value]

        return self._cached("scalers", build)  # type: ignore[no-any-return]

    @property
    def workloads_by_key(self) -> Mapping[tuple[str, str, str], Entry[Workload]]:
        """:attr:`workloads` by (kind, project, name), one each (see :func:`canonical`)."""
        return self._cached("workloads_by_key",  # type: ignore[no-any-return]
                            lambda: canonical(self.workloads))

    @property
    def scalers_by_key(self) -> Mapping[tuple[str, str, str], Entry[PinScaler]]:
        """:attr:`scalers` by (kind, project, name), one each (see :func:`canonical`)."""
        return self._cached("scalers_by_key",  # type: ignore[no-any-return]
                            lambda: canonical(self.scalers))


def _first_by_name(entries: list[Entry[Resource]], cls: type[R]) -> dict[str, Entry[R]]:
    found: dict[str, Entry[R]] = {}
    for e in entries:
        if isinstance(e.resource, cls):
            found.setdefault(e.resource.name, e)  # type: ignore[arg-type]
    return dict(sorted(found.items()))


def note_invalid(catalog: Catalog, documents: Iterable[Document]) -> None:
    """Record in ``catalog`` the documents of ``documents`` that are pincompute.io specs with
    a kind and a name but did not make it into the catalog (they failed validation)."""
    valid = {id(e.doc) for e in catalog.entries}
    for doc in documents:
        data = doc.data
        if id(doc) in valid or not isinstance(data, dict):
            continue
        kind = data.get("kind")
        if not isinstance(kind, str) or kind not in KINDS:  # a hostile kind may be a map
            continue
        meta = data.get("metadata")
        if isinstance(meta, dict) and isinstance(meta.get("name"), str):
            catalog.invalid.append(doc)


def canonical(entries: Iterable[Entry[R]]) -> dict[tuple[str, str, str], Entry[R]]:
    """One entry per (kind, project, name), sorted by key; of duplicates (which checks report)
    the first in file order, so the result does not depend on the order files were read."""
    out: dict[tuple[str, str, str], Entry[R]] = {}
    for e in sorted(entries, key=lambda e: (e.resource.key, e.doc.file, e.doc.index)):
        out.setdefault(e.resource.key, e)
    return out
