"""Stand-ins for the host behind the API's app, for tests that need no fleet: tokens and
grants as a table, app statuses as a mapping, one Cluster resource a rotation request is
applied to. The host's TokenReview and
SubjectAccessReview are exercised against a real API server in the e2e modules
(tests/reconciler/api/test_access_e2e.py, tests/reconciler/console/test_browser_e2e.py)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pytest

from reconciler.api.access import AccessError, Caller
from reconciler.clients import read, write

AppKey = tuple[str, str, str]


class TablePolicy:
    """Tokens (token -> user), grants ((user, action, kind, project)) and the paths of
    serve's own each user may get ((user, path)) as tables."""

    def __init__(self, tokens: Mapping[str, str], grants: set[tuple[str, str, str, str]],
                 paths: set[tuple[str, str]] | None = None):
        self.tokens, self.grants, self.paths = tokens, grants, paths or set()

    def authenticate(self, token: str) -> Caller:
        if token not in self.tokens:
            raise AccessError(401, "the bearer token was not accepted by the host cluster")
        return Caller(self.tokens[token])

    def allowed(self, caller: Caller, action: str, kind: str, project: str) -> bool:
        return (caller.user, action, kind, project) in self.grants

    def may_get(self, caller: Caller, path: str) -> bool:
        return (caller.user, path) in self.paths

    def may(self, caller: Caller, verb: str, path: str) -> bool:
        """``get``: as :meth:`may_get`; another verb needs ``(user, "VERB path")``."""
        if verb == "get":
            return self.may_get(caller, path)
        return (caller.user, f"{verb.upper()} {path}") in self.paths


class Statuses:
    """The host's app statuses (and their resources' labels), fixed."""

    def __init__(self, statuses: Mapping[AppKey, Mapping[str, Any]],
                 labels: Mapping[AppKey, Mapping[str, str]] | None = None) -> None:
        self._statuses = statuses
        self._labels = labels or {}

    def statuses(self) -> Mapping[AppKey, Mapping[str, Any]]:
        return self._statuses

    def labels(self) -> Mapping[AppKey, Mapping[str, str]]:
        return self._labels


class FakeHost:
    """One Cluster resource, ``east``; a server-side apply's annotations per field manager.
    :meth:`install` puts it behind the host's reads and writes."""

    def __init__(self) -> None:
        self.cr: dict[str, Any] = {"apiVersion": "pincompute.io/v1", "kind": "Cluster",
                                   "metadata": {"name": "east", "annotations": {}},
                                   "spec": {}, "status": {}}
        self.owned: dict[str, set[str]] = {}

    def install(self, monkeypatch: pytest.MonkeyPatch) -> FakeHost:
        monkeypatch.setattr(read, "get", self.get)
        monkeypatch.setattr(write, "apply", self.apply)
        return self

    def get(self, _conn: Any, obj: Any) -> Any:
        return json.loads(json.dumps(self.cr)) if obj["metadata"]["name"] == "east" else None

    def apply(self, _conn: Any, obj: Any, *, manager: str, **_: Any) -> Any:
        annotations = self.cr["metadata"]["annotations"]
        wanted = obj["metadata"].get("annotations") or {}
        for key in self.owned.get(manager, set()) - set(wanted):
            annotations.pop(key, None)
        annotations.update(wanted)
        self.owned[manager] = set(wanted)
        return self.cr
