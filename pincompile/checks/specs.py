"""What every check shares: the indexed specs (:class:`Specs`), the platform's reserved
names, and the helpers that locate and word a problem."""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from pincompile.catalog import Catalog, Entry
from pincompile.diagnostics import Diagnostic, Location
from pincompile.injection import managed_sidecars
from pincompile.models import (
    PinApp,
    PinPod,
    PinterestService,
    PodTemplate,
    Project,
    Resource,
    Workload,
)
from pincompile.repoconfig import DEFAULT as DEFAULT_CONFIG
from pincompile.repoconfig import RepoConfig

Path = tuple[str | int, ...]

#: Kinds a PinScaler may target.
SCALABLE_KINDS = (PinApp.KIND, PinterestService.KIND)
#: Where the ``config`` files of a pod are mounted (docs/spec.md: pod template ``config``).
CONFIG_MOUNT_PATH = "/etc/pincompute/config"
#: Namespaces no project may take.
RESERVED_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
#: Label keys the platform sets on every generated object (ownership, prune safety).
RESERVED_LABEL_PREFIXES = ("pincompute.io/", "app.kubernetes.io/managed-by")
#: Environment variables the platform sets (identity, shard index).
RESERVED_ENV_PREFIX = "PINCOMPUTE_"
#: Replica roles of which a training job may have at most one.
SINGLE_ROLES = {"pytorch": ("master",), "tensorflow": ("chief", "evaluator")}
CONFIG_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")


class Specs:
    """What one check reads: the catalog's indexes (built and cached by the ``Catalog``),
    the repository's settings, and the specs that failed validation."""

    def __init__(self, catalog: Catalog, config: RepoConfig = DEFAULT_CONFIG):
        self.catalog = catalog
        self.config = config
        self.entries = catalog.entries
        self.projects = catalog.projects
        self.clusters = catalog.clusters
        self.sidecars = catalog.sidecars
        self.runtime = catalog.runtime
        self.workloads = catalog.workloads
        self.scalers = catalog.scalers
        self.invalid: dict[tuple[str, str, str], str] = {}
        """(kind, project, name) of a spec that failed validation → its ``file:line``."""
        for doc in catalog.invalid:
            meta = doc.data["metadata"]
            project = meta.get("project")
            key = (doc.data["kind"], project if isinstance(project, str) else "", meta["name"])
            loc = doc.locate(("metadata", "name"))
            self.invalid.setdefault(key, f"{loc.file}:{loc.line}")

    def failed(self, kinds: Iterable[str], name: str, project: str = "") -> str | None:
        """"<kind> '<name>' is invalid, see <file:line>" when a spec of one of ``kinds``
        named ``name`` failed validation (a reference to it is no new mistake)."""
        for kind in kinds:
            at = self.invalid.get((kind, project, name))
            if at is not None:
                return f"{kind} '{name}' is invalid, see {at}"
        return None

    def of_kind(self, kind: str) -> list[Entry[Any]]:
        return [e for e in self.entries if e.resource.kind == kind]

    def injected(self, pod: Pod) -> list[Entry[Any]]:
        """Managed sidecars injected into ``pod`` (the rule lives in pincompile.injection)."""
        return managed_sidecars(pod.kind, pod.template, self.sidecars)


Rule = Callable[[Specs], Iterable[Diagnostic]]





def did_you_mean(name: str, candidates: Iterable[str], what: str) -> str:
    """A hint for an unknown reference: the closest name, else the names that exist."""
    names = sorted(set(candidates))
    close = difflib.get_close_matches(name, names, 1, 0.6)
    if close:
        return f"did you mean '{close[0]}'?"
    if not names:
        return f"no {what} are defined"
    shown = ", ".join(names[:10]) + (", ..." if len(names) > 10 else "")
    return f"{what}: {shown}"


FIX_FIRST = "fix the errors reported there; this reference then resolves"


def where(entry: Entry[Any]) -> str:
    """``file:line`` of a spec (its ``metadata.name``), for messages naming another place."""
    loc = entry.at("metadata", "name")
    return f"{loc.file}:{loc.line}"


def used_by(user: tuple[str, Entry[Any] | None]) -> str:
    """Who already uses a name: (who, the spec to point at or None), as a message says it
    (the spec's ``file:line`` is found only here, when the name clashes)."""
    who, spec = user
    return f"{who} at {where(spec)}" if spec is not None else who


class LazyLocation:
    """A location found only when a problem is reported there (finding one may load its
    file again with positions: see :class:`~pincompile.source.positioned.Positions`)."""

    def __init__(self, entry: Entry[Any], path: tuple[str | int, ...], *, key: bool = False
                 ) -> None:
        self.entry, self.path, self.key = entry, path, key

    def error(self, code: str, message: str, hint: str | None = None) -> Diagnostic:
        return self.entry.at(*self.path, key=self.key).error(code, message, hint)


def in_project(resource: Resource) -> str:
    project = getattr(resource.metadata, "project", "")
    return f" in project '{project}'" if project else ""


@dataclass
class Pod:
    """One workload's pod template and where it sits in the document."""

    entry: Entry[Workload]
    template: PodTemplate
    path: Path
    """Path of the template's fields: ``("spec",)`` for PinPod, else ``("spec", "template")``."""

    @property
    def kind(self) -> str:
        return self.entry.resource.kind

    def at(self, *path: str | int, key: bool = False) -> Location:
        return self.entry.at(*self.path, *path, key=key)


def pods(specs: Specs) -> Iterator[Pod]:
    for entry in specs.workloads:
        w = entry.resource
        path: Path = ("spec",) if isinstance(w, PinPod) else ("spec", "template")
        yield Pod(entry, w.pod_template, path)


def project_of(specs: Specs, entry: Entry[Any]) -> Project | None:
    project = specs.projects.get(getattr(entry.resource.metadata, "project", ""))
    return project.resource if project is not None else None


def by_position(entries: Iterable[Entry[Any]]) -> list[Entry[Any]]:
    return sorted(entries, key=lambda e: (e.file, e.doc.line, e.doc.column))
