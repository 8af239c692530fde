"""What the console's pages show, as plain values built from the API's sources: the
overview grid (apps by member clusters, filtered, searched and paged on the server) and
one app's placement, rollout, events and history. No HTTP, no HTML here."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from reconciler.console.pods import Pods
from reconciler.model import AppKey
from reconciler.store import EventRecord, RevisionRecord

PAGE_SIZES = (50, 100, 200)
"""Rows per overview page a user may pick; the first is the default."""
SEARCH_MAX = 200
"""Characters of a search or filter value kept (a longer one is cut, never an error)."""


@dataclass(frozen=True)
class Filters:
    """The overview's query: exact project/kind/phase/cluster (empty: any) and a search
    over ``kind/project/name``. With a cluster, ``phase`` is that cluster's cell phase."""

    project: str = ""
    kind: str = ""
    phase: str = ""
    cluster: str = ""
    q: str = ""
    page: int = 1
    size: int = PAGE_SIZES[0]

    @classmethod
    def parse(cls, params: Mapping[str, str]) -> Filters:
        """From query parameters; anything odd (a page of "x", a size of a billion) falls back
        to the default instead of failing the page."""
        def text(name: str) -> str:
            return str(params.get(name, "")).strip()[:SEARCH_MAX]

        page = text("page")
        size = text("size")
        return cls(project=text("project"), kind=text("kind"), phase=text("phase"),
                   cluster=text("cluster"), q=text("q"),
                   page=max(1, min(int(page), 1_000_000)) if page.isdigit() else 1,
                   size=int(size) if size.isdigit() and int(size) in PAGE_SIZES
                   else PAGE_SIZES[0])

    def query(self, **changes: Any) -> dict[str, str]:
        """The non-default parameters (for links: next page, refresh), with ``changes``."""
        values = {"project": self.project, "kind": self.kind, "phase": self.phase,
                  "cluster": self.cluster, "q": self.q, "page": str(self.page),
                  "size": str(self.size)}
        values.update({k: str(v) for k, v in changes.items()})
        defaults = {"page": "1", "size": str(PAGE_SIZES[0])}
        return {k: v for k, v in values.items() if v and defaults.get(k) != v}


@dataclass(frozen=True)
class Cell:
    """One app in one member cluster."""

    phase: str
    ready: str
    message: str = ""


@dataclass(frozen=True)
class Row:
    kind: str
    project: str
    name: str
    phase: str
    ready: str
    message: str
    cells: dict[str, Cell]

    @property
    def path(self) -> str:
        return f"/apps/{self.kind}/{self.project}/{self.name}"


@dataclass
class Grid:
    """One page of the overview and what its filter menus offer."""

    filters: Filters
    clusters: list[str]
    rows: list[Row]
    total: int
    """Apps that match the filters (on every page)."""
    visible: int
    """Apps the caller may see at all."""
    options: dict[str, list[str]] = field(default_factory=dict)
    unhealthy: dict[str, int] = field(default_factory=dict)
    """Member cluster → how many of the matching apps are neither Healthy nor Completed
    there."""

    @property
    def pages(self) -> int:
        return max(1, -(-self.total // self.filters.size))


GOOD = frozenset({"Healthy", "Completed"})


def cell_of(entry: Mapping[str, Any]) -> Cell:
    return Cell(phase=str(entry.get("phase") or "Unknown"),
                ready=f"{int(entry.get('readyReplicas') or 0)}/{int(entry.get('replicas') or 0)}",
                message=str(entry.get("message") or ""))


def grid(statuses: Mapping[AppKey, Mapping[str, Any]], filters: Filters,
         may_list: Callable[[str, str], bool]) -> Grid:
    """The overview: apps the caller may list (``may_list(kind, project)``, asked once per
    kind and project), filtered, sorted by kind/project/name and cut to one page."""
    allowed: dict[tuple[str, str], bool] = {}
    visible: list[tuple[AppKey, Mapping[str, Any]]] = []
    for key, status in statuses.items():
        scope = (key[0], key[1])
        if scope not in allowed:
            allowed[scope] = may_list(*scope)
        if allowed[scope]:
            visible.append((key, status))
    clusters = sorted({str(c.get("name")) for _, s in visible for c in s.get("clusters") or []
                       if c.get("name")})
    matching = sorted((kv for kv in visible if _matches(kv[0], kv[1], filters)),
                      key=lambda kv: kv[0])
    shown = [filters.cluster] if filters.cluster else clusters
    start = (filters.page - 1) * filters.size
    rows = [_row(key, status) for key, status in matching[start:start + filters.size]]
    unhealthy = dict.fromkeys(shown, 0)
    for _, status in matching:
        for entry in status.get("clusters") or []:
            if entry.get("name") in unhealthy and entry.get("phase") not in GOOD:
                unhealthy[entry["name"]] += 1
    return Grid(filters=filters, clusters=shown, rows=rows, total=len(matching),
                visible=len(visible), options=_options(visible, clusters),
                unhealthy=unhealthy)


def _matches(key: AppKey, status: Mapping[str, Any], f: Filters) -> bool:
    kind, project, name = key
    if (f.project and project != f.project) or (f.kind and kind != f.kind):
        return False
    if f.q and f.q.lower() not in f"{kind}/{project}/{name}".lower():
        return False
    if f.cluster:
        entry = next((c for c in status.get("clusters") or [] if c.get("name") == f.cluster),
                     None)
        return entry is not None and (not f.phase or entry.get("phase") == f.phase)
    return not f.phase or status.get("phase", "Unknown") == f.phase


def _row(key: AppKey, status: Mapping[str, Any]) -> Row:
    kind, project, name = key
    return Row(kind=kind, project=project, name=name,
               phase=str(status.get("phase") or "Unknown"),
               ready=str(status.get("ready") or "0/0"), message=str(status.get("message") or ""),
               cells={str(c.get("name")): cell_of(c) for c in status.get("clusters") or []})


def _options(visible: Iterable[tuple[AppKey, Mapping[str, Any]]],
             clusters: list[str]) -> dict[str, list[str]]:
    projects, kinds, phases = set(), set(), set()
    for (kind, project, _), status in visible:
        projects.add(project)
        kinds.add(kind)
        phases.add(str(status.get("phase") or "Unknown"))
        phases.update(str(c.get("phase")) for c in status.get("clusters") or []
                      if c.get("phase"))
    return {"project": sorted(projects), "kind": sorted(kinds), "phase": sorted(phases),
            "cluster": clusters}


@dataclass(frozen=True)
class Share:
    """An app's part in one member cluster: its replicas and their share of the app's."""

    cluster: str
    cell: Cell
    replicas: int
    percent: int


@dataclass(frozen=True)
class Zone:
    name: str
    state: str
    """done, current (its gate waits for it to be healthy), halted, paused or pending."""
    note: str = ""
    """Why the current zone stands where it does: the gate's reason, who paused it."""


@dataclass
class AppPage:
    key: AppKey
    status: Mapping[str, Any]
    shares: list[Share]
    zones: list[Zone]
    events: list[EventRecord]
    history: list[RevisionRecord]
    pods: Pods = field(default_factory=Pods)

    @property
    def phase(self) -> str:
        return str(self.status.get("phase") or "Unknown")


def zones_of(rollout: Mapping[str, Any] | None) -> list[Zone]:
    """A zone-by-zone rollout as zones: those behind done, the one at the gate halted,
    paused or current (with the reason), those ahead pending."""
    rollout = rollout or {}
    names = [str(z) for z in rollout.get("zones") or []]
    at = int(rollout.get("zoneIndex") or 0)
    message = str(rollout.get("message") or "")
    if rollout.get("phase") == "Halted":
        gate, note = "halted", message
    elif rollout.get("pausedBy"):
        gate, note = "paused", f"paused by {rollout['pausedBy']}"
    else:
        gate, note = "current", message
    return [Zone(n, "done") if i < at else Zone(n, gate, note) if i == at
            else Zone(n, "pending") for i, n in enumerate(names)]


def app_page(key: AppKey, status: Mapping[str, Any], events: list[EventRecord],
             history: list[RevisionRecord]) -> AppPage:
    """One app: placement and shares per cluster, its rollout's zones, newest events
    first (the store keeps them oldest first), revisions newest first."""
    entries = [c for c in status.get("clusters") or [] if c.get("name")]
    total = sum(int(c.get("replicas") or 0) for c in entries)
    shares = [Share(cluster=str(c["name"]), cell=cell_of(c), replicas=int(c.get("replicas") or 0),
                    percent=round(100 * int(c.get("replicas") or 0) / total) if total else 0)
              for c in entries]
    return AppPage(key=key, status=status, shares=shares, zones=zones_of(status.get("rollout")),
                   events=list(reversed(events)), history=history)

