"""An in-memory Kubernetes API server with enough of server-side apply for planning, and
:class:`FakeAccess`, the :class:`~reconciler.clients.access.ClusterAccess` a pass reaches
it through. ``tests/reconciler/clients/test_access_contract.py`` runs the same tests
against it and against a real API server of the fleet.

It keeps, as the API server does: field ownership per manager (``managedFields``, see
:mod:`tests.support.kube_fields`), a dry-run answering the merged object without
persisting it (and without a resourceVersion for a create), a 409 when an apply's
``resourceVersion`` is not the object's (a missing object is created whatever it names),
a 422 when an immutable field changes
(:mod:`tests.support.kube_rules`), a 404 creating in a missing namespace, uid,
resourceVersion, generation and creationTimestamp, deletes with finalizers and
propagation, label and field selectors, and WATCH events. Controllers are callables run
after each write (:mod:`tests.support.kube_controllers`).
"""

from __future__ import annotations

import itertools
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from kubernetes.dynamic.exceptions import ResourceNotFoundError

from reconciler.clients.access import FIELD_MANAGER, Listed, WatchEvent, api_error
from reconciler.clients.connect import ClusterUnreachable
from reconciler.clients.read import Key
from reconciler.clients.stats import RequestStats
from reconciler.clock import iso_time
from reconciler.kinds import KindInfo
from reconciler.model import Obj
from tests.support import kube_fields, kube_rules, kube_selectors
from tests.support.kube_fields import clone
from tests.support.kube_rules import Kind

Admission = Callable[[str, Obj], None]
"""Called with ("CREATE"|"UPDATE", the object as it would be stored): raise to refuse."""
Controller = Callable[["FakeCluster", Obj], None]
"""Called after each write to the main resource, with the stored object."""


@dataclass
class Change:
    """One entry of the cluster's history: what a WATCH reports."""

    version: int
    kind: str
    old: Obj | None
    new: Obj | None


class FakeCluster:
    """One cluster's API server, in memory (thread-safe)."""

    def __init__(self, name: str = "cluster", *, kubeflow: bool = False,
                 clock: Callable[[], float] = time.time) -> None:
        self.name, self.clock = name, clock
        self.lock = threading.Condition(threading.RLock())
        self.objects: dict[Key, Obj] = {}
        self.version = 0
        self.history: list[Change] = []
        self.forgotten = 0
        """Changes up to this version are no longer watchable (410 Gone)."""
        self.watch_epoch = 0
        """Bumped to end the open watches."""
        self.kinds = kube_rules.builtin_kinds(kubeflow=kubeflow)
        self.admission: list[Admission] = []
        self.reviewers: dict[str, Callable[[Obj], Obj]] = {
            "TokenReview": lambda _review: {"authenticated": False},
            "SubjectAccessReview": lambda _review: {"allowed": False}}
        """The status a create of a review kind is answered with (nothing is stored)."""
        self.evicting: list[Callable[[Obj], None]] = []
        """Called with the Pod an eviction asks for: raise to refuse it (a
        PodDisruptionBudget's 429)."""
        self.controllers: list[Controller] = []
        self.down: str | None = None
        """While set, every request fails as a cluster that does not answer."""
        self._addresses = itertools.count(10)
        for namespace in ("default", "kube-system"):
            self.create({"apiVersion": "v1", "kind": "Namespace",
                         "metadata": {"name": namespace}}, manager="kube-apiserver")

    # --- kinds ----------------------------------------------------------------------------

    def kind(self, api_version: str, kind: str) -> Kind:
        found = self.kinds.get((api_version, kind))
        if found is None:
            raise ResourceNotFoundError(f"No matches found for {{'api_version': "
                                        f"'{api_version}', 'kind': '{kind}'}}")
        return found

    def reachable(self) -> None:
        if self.down is not None:
            raise ClusterUnreachable(self.down)

    # --- reads ----------------------------------------------------------------------------

    def get(self, ref: Obj) -> Obj | None:
        kind = self.kind(ref["apiVersion"], ref["kind"])
        with self.lock:
            found = self.objects.get(self._key(kind, ref))
            return clone(found) if found is not None else None

    def list(self, info: KindInfo, *, namespace: str | None = None,
             label_selector: str | None = None, field_selector: str | None = None,
             limit: int | None = None, lean: bool = False) -> Listed:
        kind = self.kind(info.api_version, info.kind)
        match = self._matcher(namespace, label_selector, field_selector)
        with self.lock:
            items = [clone(o) for k, o in sorted(self.objects.items())
                     if k[0] == kind.kind and o["apiVersion"] == kind.api_version and match(o)]
            version = str(self.version)
        items = items[:limit] if limit else items
        if lean:
            for item in items:
                item["metadata"].pop("managedFields", None)
        return {"items": items, "resourceVersion": version}

    @staticmethod
    def _matcher(namespace: str | None, label_selector: str | None,
                 field_selector: str | None) -> Callable[[Obj], bool]:
        by_labels = kube_selectors.labels(label_selector)
        by_fields = kube_selectors.fields(field_selector)
        return lambda obj: (not namespace or obj["metadata"].get("namespace") == namespace) \
            and by_labels(obj) and by_fields(obj)

    # --- writes ---------------------------------------------------------------------------

    def apply(self, obj: Obj, *, manager: str = FIELD_MANAGER, dry_run: bool = False,
              subresource: str | None = None) -> Obj:
        """Server-side apply with forced conflicts (as every apply of a pass)."""
        kind = self.kind(obj["apiVersion"], obj["kind"])
        with self.lock:
            key = self._key(kind, obj)
            live = self.objects.get(key)
            precondition = (obj.get("metadata") or {}).get("resourceVersion")
            # the API server checks it against an object it holds: an apply of a missing
            # object creates it, whatever resourceVersion it names
            if precondition and live is not None \
                    and live["metadata"]["resourceVersion"] != precondition:
                raise self._modified(kind, key)
            if live is None:
                if subresource:
                    raise self._not_found(kind, key)
                self._namespace_exists(kind, key)
            base = live if live is not None else self._identity(kind, obj)
            new = kube_fields.applied(base, obj, manager, subresource=subresource or "",
                                      stamp=self._stamp())
            return self._write(kind, key, live, new, dry_run=dry_run,
                               subresource=subresource)

    def create(self, obj: Obj, *, manager: str | None = None, subresource: str | None = None,
               of: KindInfo | None = None) -> Obj:
        """A create (an ``Update`` in managedFields); an ``eviction`` of a Pod deletes it
        (the ``evicting`` admissions may refuse it first)."""
        if subresource:
            return self._create_subresource(obj, subresource, of)
        kind = self.kind(obj["apiVersion"], obj["kind"])
        if kind.kind in self.reviewers:
            return {**clone(obj), "status": self.reviewers[kind.kind](clone(obj))}
        with self.lock:
            meta = obj.get("metadata") or {}
            if not meta.get("name") and meta.get("generateName"):
                obj = {**obj, "metadata": {**meta, "name": meta["generateName"]
                                           + uuid.uuid4().hex[:5]}}
            key = self._key(kind, obj)
            if key in self.objects:
                raise api_error(409, f'{kind.plural} "{key[2]}" already exists',
                                "AlreadyExists")
            self._namespace_exists(kind, key)
            new = {**self._identity(kind, obj), **{k: clone(v) for k, v in obj.items()
                                                  if k != "metadata"}}
            new["metadata"].update({k: clone(v) for k, v in meta.items()
                                    if k not in kube_fields.SERVER_METADATA})
            new = kube_fields.updated(self._identity(kind, obj), new,
                                      manager or "kubectl-create", subresource="",
                                      stamp=self._stamp())
            return self._write(kind, key, None, new, dry_run=False)

    def _create_subresource(self, obj: Obj, subresource: str, of: KindInfo | None) -> Obj:
        if subresource != "eviction" or of is None or of.kind != "Pod":
            raise api_error(404, f"the server could not find the requested resource "
                                 f"({subresource})", "NotFound")
        kind = self.kind(of.api_version, of.kind)
        ref = {"apiVersion": of.api_version, "kind": of.kind, "metadata": obj["metadata"]}
        with self.lock:
            pod = self.get(ref)
            if pod is None:
                raise self._not_found(kind, self._key(kind, ref))
            for refuse in self.evicting:
                refuse(pod)
            self.delete(ref)
        return {"kind": "Status", "apiVersion": "v1", "status": "Success"}

    def patch(self, ref: Obj, patch: Obj, *, manager: str = FIELD_MANAGER,
              subresource: str | None = None) -> Obj:
        """A JSON merge patch by ``manager`` (``None`` removes a key): what ``kubectl
        edit``, ``kubectl scale`` or a controller writing status does; its
        ``metadata.resourceVersion`` is a precondition."""
        kind = self.kind(ref["apiVersion"], ref["kind"])
        with self.lock:
            key = self._key(kind, ref)
            live = self.objects.get(key)
            if live is None:
                raise self._not_found(kind, key)
            precondition = (patch.get("metadata") or {}).get("resourceVersion")
            if precondition and live["metadata"]["resourceVersion"] != precondition:
                raise self._modified(kind, key)
            if subresource == "status":
                patch = {"status": patch.get("status")}
            elif kind.status:
                patch = {k: v for k, v in patch.items() if k != "status"}
            new = kube_rules.merge_patch(live, patch)
            new = kube_fields.updated(live, new, manager, subresource=subresource or "",
                                      stamp=self._stamp())
            return self._write(kind, key, live, new, dry_run=False, subresource=subresource)

    def delete(self, ref: Obj, *, propagation: str = "Background") -> bool:
        kind = self.kind(ref["apiVersion"], ref["kind"])
        with self.lock:
            key = self._key(kind, ref)
            live = self.objects.get(key)
            if live is None:
                return False
            if propagation != "Orphan":
                self._delete_dependents(live["metadata"]["uid"])
            if kind.kind == "Namespace":
                for inner in [k for k in self.objects if k[1] == key[2]]:
                    self._remove(inner)
            if live["metadata"].get("finalizers"):
                marked = clone(live)
                marked["metadata"].setdefault("deletionTimestamp", self._stamp())
                self._store(key, live, marked)
            else:
                self._remove(key)
            return True

    def put(self, obj: Obj) -> Obj:
        """Store ``obj`` as it is given, its metadata (creationTimestamp, managedFields)
        included: an object as earlier writes and controllers left it. The object stored."""
        kind = self.kind(obj["apiVersion"], obj["kind"])
        with self.lock:
            key = self._key(kind, obj)
            new = clone(obj)
            new["metadata"].setdefault("uid", str(uuid.uuid4()))
            return clone(self._store(key, self.objects.get(key), new))

    def forget_history(self) -> None:
        """Changes made so far can no longer be watched (a compacted etcd: 410 Gone for a
        watch started from an older version)."""
        with self.lock:
            self.history.clear()
            self.forgotten = self.version

    def end_watches(self) -> None:
        """End every open watch (as an API server restarting does)."""
        with self.lock:
            self.watch_epoch += 1
            self.lock.notify_all()

    # --- inside -----------------------------------------------------------------------------

    def _key(self, kind: Kind, ref: Obj) -> Key:
        meta = ref["metadata"]
        namespace = str(meta.get("namespace") or "") if kind.namespaced else ""
        if kind.namespaced and not namespace:
            raise api_error(400, "the namespace of the object must be set", "BadRequest")
        return (kind.kind, namespace, str(meta.get("name") or ""))

    def _identity(self, kind: Kind, obj: Obj) -> Obj:
        meta: dict[str, Any] = {"name": obj["metadata"]["name"]}
        if kind.namespaced:
            meta["namespace"] = obj["metadata"]["namespace"]
        return {"apiVersion": kind.api_version, "kind": kind.kind, "metadata": meta}

    def _stamp(self) -> str:
        return iso_time(self.clock())

    def _not_found(self, kind: Kind, key: Key) -> Exception:
        return api_error(404, f'{kind.plural}{kind.dot_group} "{key[2]}" not found',
                         "NotFound")

    def _modified(self, kind: Kind, key: Key) -> Exception:
        return api_error(409, f'Operation cannot be fulfilled on {kind.plural}{kind.dot_group} '
                              f'"{key[2]}": the object has been modified; please apply your '
                              "changes to the latest version and try again", "Conflict")

    def _namespace_exists(self, kind: Kind, key: Key) -> None:
        namespace = self.objects.get(("Namespace", "", key[1]))
        if kind.namespaced and (namespace is None
                                or namespace["metadata"].get("deletionTimestamp")):
            raise api_error(404, f'namespaces "{key[1]}" not found', "NotFound")

    def _write(self, kind: Kind, key: Key, live: Obj | None, new: Obj, *, dry_run: bool,
               subresource: str | None = None) -> Obj:
        """Check, stamp and (unless ``dry_run``) store ``new``; the object as stored. The
        controllers follow a write of the main resource."""
        meta = new["metadata"]
        if live is None:
            meta.update(uid=str(uuid.uuid4()), creationTimestamp=self._stamp())
            if kind.generation:
                meta["generation"] = 1
            kube_rules.allocate(kind, new, self._addresses)
        else:
            kube_rules.refuse_immutable(kind, live, new)
            if kind.generation and kube_rules.generation_moves(kind, live, new):
                meta["generation"] = int(live["metadata"].get("generation", 1)) + 1
        for admit in self.admission:
            admit("CREATE" if live is None else "UPDATE", new)
        if dry_run:
            if live is None:
                meta.pop("resourceVersion", None)
            return clone(new)
        if live is not None and _without_version(live) == _without_version(new):
            return clone(live)  # nothing changed: nothing written
        if live is not None and meta.get("deletionTimestamp") and not meta.get("finalizers"):
            self._remove(key)
            return clone(new)
        stored = clone(self._store(key, live, new))
        if kind.kind == "CustomResourceDefinition":
            self._serve(stored)
        if not subresource:
            for controller in self.controllers:
                controller(self, clone(stored))
        return stored

    def _serve(self, crd: Obj) -> None:
        """What the API server does with a CRD: serve its kinds, say it is established."""
        for kind in kube_rules.kinds_of(crd):
            self.kinds[(kind.api_version, kind.kind)] = kind
        self.patch(crd, {"status": {"conditions": [
            {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts"},
            {"type": "Established", "status": "True", "reason": "InitialNamesAccepted"}],
            "acceptedNames": crd["spec"]["names"]}},
            manager="kube-apiserver", subresource="status")

    def _store(self, key: Key, old: Obj | None, new: Obj) -> Obj:
        self.version += 1
        new["metadata"]["resourceVersion"] = str(self.version)
        self.objects[key] = new
        self.history.append(Change(self.version, key[0], old, clone(new)))
        self.lock.notify_all()
        return new

    def _remove(self, key: Key) -> None:
        old = self.objects.pop(key, None)
        if old is None:
            return
        self.version += 1
        old["metadata"]["resourceVersion"] = str(self.version)
        self.history.append(Change(self.version, key[0], old, None))
        self.lock.notify_all()

    def _delete_dependents(self, uid: str) -> None:
        for key, obj in list(self.objects.items()):
            owners = (obj["metadata"].get("ownerReferences") or [])
            if any(o.get("uid") == uid for o in owners):
                self._delete_dependents(obj["metadata"]["uid"])
                self._remove(key)


def _without_version(obj: Obj) -> Obj:
    return {**obj, "metadata": {k: v for k, v in obj["metadata"].items()
                                if k != "resourceVersion"}}


@dataclass
class FakeAccess:
    """A pass's :class:`~reconciler.clients.access.ClusterAccess` to a
    :class:`FakeCluster`, counting its requests as the real hook does."""

    name: str
    cluster: FakeCluster
    stats: RequestStats = field(default_factory=RequestStats)
    closed: threading.Event = field(default_factory=threading.Event)

    def _count(self, verb: str, api_version: str, kind: str) -> Kind:
        found = self.cluster.kind(api_version, kind)
        self.cluster.reachable()
        self.stats.record(verb, found.plural)
        return found

    def serves(self, api_version: str, kind: str) -> bool:
        self.cluster.reachable()
        return (api_version, kind) in self.cluster.kinds

    def list(self, kind: KindInfo, *, namespace: str | None = None,
             label_selector: str | None = None, field_selector: str | None = None,
             limit: int | None = None, lean: bool = False) -> Listed:
        self._count("list", kind.api_version, kind.kind)
        return self.cluster.list(kind, namespace=namespace, label_selector=label_selector,
                                 field_selector=field_selector, limit=limit, lean=lean)

    def get(self, ref: Obj) -> Obj | None:
        self._count("get", ref["apiVersion"], ref["kind"])
        return self.cluster.get(ref)

    def apply(self, obj: Obj, *, manager: str = FIELD_MANAGER, dry_run: bool = False,
              subresource: str | None = None) -> Obj:
        self._count("dry-run" if dry_run else "patch", obj["apiVersion"], obj["kind"])
        return self.cluster.apply(obj, manager=manager, dry_run=dry_run,
                                  subresource=subresource)

    def patch(self, ref: Obj, patch: Obj, *, manager: str = FIELD_MANAGER,
              subresource: str | None = None) -> Obj:
        self._count("patch", ref["apiVersion"], ref["kind"])
        return self.cluster.patch(ref, patch, manager=manager, subresource=subresource)

    def create(self, obj: Obj, *, subresource: str | None = None,
               of: KindInfo | None = None) -> Obj:
        named = of if subresource and of is not None else KindInfo(obj["apiVersion"],
                                                                   obj["kind"])
        self._count("create", named.api_version, named.kind)
        return self.cluster.create(obj, subresource=subresource, of=of)

    def delete(self, ref: Obj, *, propagation: str = "Background") -> bool:
        self._count("delete", ref["apiVersion"], ref["kind"])
        return self.cluster.delete(ref, propagation=propagation)

    def watch(self, kind: KindInfo, *, resource_version: str, timeout_seconds: int,
              namespace: str | None = None, label_selector: str | None = None,
              field_selector: str | None = None) -> Iterator[WatchEvent]:
        self._count("watch", kind.api_version, kind.kind)
        match = self.cluster._matcher(namespace, label_selector, field_selector)
        return _events(self.cluster, kind.kind, int(resource_version or 0), match,
                       time.monotonic() + timeout_seconds, self.closed)

    def rediscover(self) -> None:
        self.cluster.reachable()

    def close(self) -> None:
        self.closed.set()
        with self.cluster.lock:
            self.cluster.lock.notify_all()


def _events(cluster: FakeCluster, kind: str, after: int, match: Callable[[Obj], bool],
            deadline: float, closed: threading.Event) -> Iterator[WatchEvent]:
    """The changes to ``kind`` after version ``after`` as a watch sends them: an object
    that starts or stops matching the selector is ADDED or DELETED."""
    if after < cluster.forgotten:
        yield {"type": "ERROR", "object": {"kind": "Status", "code": 410,
                                           "message": "too old resource version"}}
        return
    epoch = cluster.watch_epoch
    while not closed.is_set() and time.monotonic() < deadline and cluster.down is None \
            and cluster.watch_epoch == epoch:
        with cluster.lock:
            fresh = [c for c in cluster.history if c.version > after and c.kind == kind]
            if not fresh:
                cluster.lock.wait(min(0.2, max(0.0, deadline - time.monotonic())))
                continue
        for change in fresh:
            after = change.version
            was = change.old is not None and match(change.old)
            now = change.new is not None and match(change.new)
            if now:
                yield {"type": "MODIFIED" if was else "ADDED",
                       "object": clone(change.new) if change.new else {}}
            elif was and change.old is not None:
                yield {"type": "DELETED", "object": clone(change.old)}
            else:  # not watched: as the server's bookmarks say, the watch is past it
                yield {"type": "BOOKMARK", "object": {
                    "kind": kind, "metadata": {"resourceVersion": str(change.version)}}}


@dataclass
class FakeFleet:
    """In-memory clusters by kubeconfig context, and the ``connect`` factory a
    :class:`~reconciler.engine.Reconciler` reaches them through."""

    clusters: dict[str, FakeCluster]
    accesses: list[FakeAccess] = field(default_factory=list)

    def connect(self, name: str, context: str) -> FakeAccess:
        access = FakeAccess(name, self.clusters[context])
        self.accesses.append(access)
        return access
