"""The one interface every request of a pass goes through: :class:`ClusterAccess`.

A pass, and every other part of the reconciler, reads a cluster (LIST, GET, WATCH) and
writes to it (server-side apply and its dry-run, merge patch, create, delete) only through
these verbs, as gitops-engine's resource operations and kopf's clients-by-verb do, so that
it can run against an in-memory cluster (``tests/support/kube_fake.py``) as well as
against a real one (:class:`reconciler.clients.connect.Connection`). A contract suite
(``tests/reconciler/clients/test_access_contract.py``) holds the two to each other. Pod
logs and exec (:mod:`reconciler.api.logs`, :mod:`reconciler.api.exec`) are the one
exception: they are streams, not objects.

Failures are the ``kubernetes`` client's: :class:`~kubernetes.dynamic.exceptions.DynamicApiError`
and its subclasses by status (``NotFoundError`` 404, ``ConflictError`` 409, 422 ...), with the
API server's ``Status`` as JSON body; ``ResourceNotFoundError`` for a kind the cluster does
not serve; :class:`~reconciler.clients.connect.ClusterUnreachable` when it does not answer.
:func:`api_error` makes such an error from a status and a message.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Protocol, TypedDict

from kubernetes.client.exceptions import ApiException
from kubernetes.dynamic.exceptions import DynamicApiError, api_exception

from reconciler.clients.stats import RequestStats
from reconciler.kinds import KindInfo
from reconciler.model import Obj

FIELD_MANAGER = "pincompile"
"""The field manager of every write a pass makes (unless it names another)."""


class WatchEvent(TypedDict):
    """One event of a WATCH: ``ADDED``, ``MODIFIED``, ``DELETED``, ``BOOKMARK`` (the
    object then carries only a resourceVersion) or ``ERROR`` (the object is a ``Status``:
    code 410 when the resourceVersion is too old)."""

    type: str
    object: Obj


class Listed(TypedDict):
    """A LIST's answer: its objects (each with ``apiVersion`` and ``kind``) and the list's
    resourceVersion (where a watch continues from)."""

    items: list[Obj]
    resourceVersion: str


class ClusterAccess(Protocol):
    """Every verb a pass uses on one cluster. An object is named by an ``Obj`` carrying
    its ``apiVersion``, ``kind`` and ``metadata.name`` (and ``namespace``)."""

    name: str
    """The cluster's name (as the specs name it; ``host`` for the host)."""

    stats: RequestStats
    """Requests made, by verb and resource."""

    def serves(self, api_version: str, kind: str) -> bool:
        """Whether the cluster serves this kind (kubeflow kinds only where installed)."""

    def list(self, kind: KindInfo, *, namespace: str | None = None,
             label_selector: str | None = None, field_selector: str | None = None,
             limit: int | None = None, lean: bool = False) -> Listed:
        """One LIST of ``kind`` in every namespace (``namespace``: in that one); ``limit``:
        the first that many objects; ``lean``: without ``metadata.managedFields``
        (:mod:`reconciler.clients.lean`)."""

    def get(self, ref: Obj) -> Obj | None:
        """The live object ``ref`` names (with its managedFields; a cluster-scoped one
        names no namespace), or None."""

    def apply(self, obj: Obj, *, manager: str = FIELD_MANAGER, dry_run: bool = False,
              subresource: str | None = None) -> Obj:
        """Server-side apply of ``obj`` by ``manager``, forcing ownership of the fields it
        sets; ``obj``'s ``metadata.resourceVersion``, when set, is a precondition (409
        when the object is at another). ``dry_run``: the object as it would be, nothing
        persisted. ``subresource``: ``status`` (only the status is written)."""

    def patch(self, ref: Obj, patch: Obj, *, manager: str = FIELD_MANAGER,
              subresource: str | None = None) -> Obj:
        """A JSON merge patch (``None`` removes a key) of the object ``ref`` names, by
        ``manager``; the object after (404 when there is none). A
        ``metadata.resourceVersion`` in ``patch`` is a precondition: 409 when the object is
        at another (a compare-and-swap)."""

    def create(self, obj: Obj, *, subresource: str | None = None,
               of: KindInfo | None = None) -> Obj:
        """Create ``obj`` (an Event, a Lease, a review); the object as created. With
        ``subresource``, a POST of ``obj`` (an Eviction) to that subresource of the
        object of kind ``of`` it names by its ``metadata`` (a Pod's ``eviction``)."""

    def delete(self, ref: Obj, *, propagation: str = "Background") -> bool:
        """Delete the object ``ref`` names; False when it was already gone."""

    def watch(self, kind: KindInfo, *, resource_version: str, timeout_seconds: int,
              namespace: str | None = None, label_selector: str | None = None,
              field_selector: str | None = None) -> Iterator[WatchEvent]:
        """The changes to ``kind`` (in ``namespace``, or in all) after
        ``resource_version``, for at most ``timeout_seconds`` (with bookmarks). Closing
        the iterator ends the request."""

    def rediscover(self) -> None:
        """Forget which kinds the cluster serves (a CRD was installed since)."""

    def close(self) -> None:
        """Let go of the connection (and end its watches)."""


def api_error(status: int, message: str, reason: str = "") -> DynamicApiError:
    """The error the client raises for an API server's answer ``status`` with ``message``
    (a ``Status`` body, as the server sends it): ``NotFoundError`` for 404, and so on."""
    failure = ApiException(status=status, reason=reason)
    failure.body = json.dumps({"kind": "Status", "apiVersion": "v1", "metadata": {},
                               "status": "Failure", "message": message, "reason": reason,
                               "code": status})
    failure.headers = {"Content-Type": "application/json"}
    error: DynamicApiError = api_exception(failure)
    return error


def ref_of(obj: Obj) -> tuple[str, str, str, str | None]:
    """(apiVersion, kind, name, namespace) of the object ``obj`` names."""
    meta = obj["metadata"]
    return str(obj["apiVersion"]), str(obj["kind"]), str(meta["name"]), meta.get("namespace")
