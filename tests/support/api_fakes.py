"""Stand-ins for the host behind the API's app, for tests that need no fleet: tokens and
grants as a table, app statuses as a mapping. The host's TokenReview and
SubjectAccessReview are exercised against a real API server in the e2e modules
(tests/reconciler/api/test_access_e2e.py, tests/reconciler/console/test_browser_e2e.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reconciler.api.access import AccessError, Caller

AppKey = tuple[str, str, str]


class TablePolicy:
    """Tokens (token -> user) and grants ((user, action, kind, project)) as tables."""

    def __init__(self, tokens: Mapping[str, str], grants: set[tuple[str, str, str, str]]):
        self.tokens, self.grants = tokens, grants

    def authenticate(self, token: str) -> Caller:
        if token not in self.tokens:
            raise AccessError(401, "the bearer token was not accepted by the host cluster")
        return Caller(self.tokens[token])

    def allowed(self, caller: Caller, action: str, kind: str, project: str) -> bool:
        return (caller.user, action, kind, project) in self.grants


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
