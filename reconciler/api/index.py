"""The apps as the API serves them: each app's documents rendered once per change of the
app cache and kept as JSON bytes, sorted, by project, so a read renders nothing: GET one
app picks its bytes, a list filters entries and joins theirs."""

from __future__ import annotations

import bisect
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from itertools import islice
from typing import Any, Protocol

import orjson
from pydantic import ValidationError

from pincompile.contract import Labels
from reconciler.api.models import APP_LIST_VERSION, AppDetail, AppSummary
from reconciler.model import AppKey

NO_LABELS: Labels = {}


class AppSource(Protocol):
    """Every app's last status and its resource's labels on the host, kept current by a
    watch (no request per call). A call returns the same mapping object until something
    changed, then a new one (what :class:`AppIndex` renders again on)."""

    def statuses(self) -> Mapping[AppKey, Mapping[str, Any]]: ...

    def labels(self) -> Mapping[AppKey, Labels]: ...


class AppEntry:
    """One app: what the filters look at, and its documents as JSON (rendered on first use,
    then kept while the app's status and labels stay the same objects)."""

    def __init__(self, key: AppKey, status: Mapping[str, Any], labels: Labels) -> None:
        self.key, self.status, self.labels = key, status, labels
        self.phase = status.get("phase")
        shares = status.get("clusters")
        self.clusters = frozenset(
            name for share in (shares if isinstance(shares, list) else [])
            if isinstance(share, Mapping) and isinstance(name := share.get("name"), str))

    def same(self, status: Mapping[str, Any], labels: Labels) -> bool:
        return ((self.status is status or self.status == status)
                and (self.labels is labels or self.labels == labels))

    @cached_property
    def detail(self) -> AppDetail:
        return app_detail(self.key, self.status)

    @cached_property
    def detail_json(self) -> bytes:
        return self.detail.model_dump_json().encode()

    @cached_property
    def summary_json(self) -> bytes:
        # an AppDetail is an AppSummary with more fields after its own: the same document
        return self.detail.model_dump_json(include=SUMMARY_FIELDS).encode()


SUMMARY_FIELDS = set(AppSummary.model_fields)
DETAIL_FIELDS = frozenset(AppDetail.model_fields)


SCALING_FIELDS = ("floor", "activeSchedule", "currentReplicas", "desiredReplicas",
                  "lastScaleTime", "clusterReplicas", "rebalance")
"""What a PinScaler's status adds (:attr:`AppDetail.scaling`)."""


def app_detail(key: AppKey, status: Mapping[str, Any]) -> AppDetail:
    """The API's document of one app: its status on the host without the noise (fields the
    model does not know); a status the model cannot read is phase Unknown, saying why.
    ``status`` may carry ``statusTime``, when the host's record was written."""
    kind, project, name = key
    scaling = {k: status[k] for k in SCALING_FIELDS if k in status}
    document = {**{k: v for k, v in status.items() if k in DETAIL_FIELDS},
                "kind": kind, "project": project, "name": name,
                "phase": status.get("phase", "Unknown"), "ready": status.get("ready", "0/0"),
                "scaling": scaling or None}
    try:
        return AppDetail.model_validate(document)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        return AppDetail(kind=kind, project=project, name=name, phase="Unknown", ready="0/0",
                         statusTime=str(status.get("statusTime") or ""),
                         message=f"the app's status on the host is not readable: {where}: "
                                 f"{first['msg']}")


@dataclass(frozen=True)
class Snapshot:
    """Every app at one moment, sorted by key, and each project's apps in the same order."""

    keys: list[AppKey] = field(default_factory=list)
    entries: list[AppEntry] = field(default_factory=list)
    by_key: dict[AppKey, AppEntry] = field(default_factory=dict)
    by_project: dict[str, tuple[list[AppKey], list[AppEntry]]] = field(default_factory=dict)

    def after(self, last: AppKey | None, project: str | None = None) -> Iterator[AppEntry]:
        """The apps (of ``project``) sorted by key, from the first one after ``last``."""
        keys, entries = (self.keys, self.entries) if project is None else \
            self.by_project.get(project, ([], []))
        start = 0 if last is None else bisect.bisect_right(keys, last)
        return islice(entries, start, None)


def build(statuses: Mapping[AppKey, Mapping[str, Any]], labels: Mapping[AppKey, Labels],
          previous: Mapping[AppKey, AppEntry]) -> Snapshot:
    """A snapshot of ``statuses``, reusing ``previous`` entries of apps that did not change
    (and the documents they rendered)."""
    snapshot = Snapshot(keys=sorted(statuses))
    for key in snapshot.keys:
        status, tags = statuses[key], labels.get(key, NO_LABELS)
        entry = previous.get(key)
        if entry is None or not entry.same(status, tags):
            entry = AppEntry(key, status, tags)
        snapshot.entries.append(entry)
        snapshot.by_key[key] = entry
        keys, entries = snapshot.by_project.setdefault(key[1], ([], []))
        keys.append(key)
        entries.append(entry)
    return snapshot


class AppIndex:
    """The latest :class:`Snapshot` of an :class:`AppSource`, built again only when the
    source hands out new mappings."""

    def __init__(self, source: AppSource) -> None:
        self.source = source
        self._lock = threading.Lock()
        self._seen: tuple[object, object] | None = None  # kept alive: identity means "same"
        self._snapshot = Snapshot()

    def snapshot(self) -> Snapshot:
        statuses, labels = self.source.statuses(), self.source.labels()
        with self._lock:
            if self._seen is None or self._seen[0] is not statuses \
                    or self._seen[1] is not labels:
                self._snapshot = build(statuses, labels, self._snapshot.by_key)
                self._seen = (statuses, labels)
            return self._snapshot


def list_json(items: list[AppEntry], next_token: str | None) -> bytes:
    """An ``AppList`` document of ``items``' summaries, without rendering any of them."""
    return b'{"apiVersion":"' + APP_LIST_VERSION.encode() + b'","kind":"AppList","items":[' \
        + b",".join(e.summary_json for e in items) + b'],"continue":' \
        + orjson.dumps(next_token) + b"}"
