"""The JSON documents ``serve`` answers with."""

from __future__ import annotations

import threading
import time
from typing import Any

from reconciler.model import PassReport
from reconciler.serve.redact import redact, redact_data


def report_json(report: PassReport) -> dict[str, Any]:
    """A pass report as plain JSON data (objects named ``Kind/namespace/name``), without
    credentials (:func:`~reconciler.serve.redact.redact_data`)."""
    document: dict[str, Any] = redact_data({
        "revision": report.revision,
        "ok": report.ok,
        "converged": report.converged,
        "error": report.error,
        "seconds": round(report.seconds, 3),
        "writes": report.writes,
        "steps": dict(report.steps),
        "clusters": {
            name: {"created": [str(r) for r in c.created], "updated": [str(r) for r in c.updated],
                   "replaced": [str(r) for r in c.replaced], "pruned": [str(r) for r in c.pruned],
                   "unchanged": c.unchanged,
                   "conflicts": [str(u) for u in c.unconverged],
                   "unconverged": [u.to_json() for u in c.unconverged], "error": c.error,
                   "seconds": round(c.seconds, 3)}
            for name, c in sorted(report.clusters.items())},
    })
    return document


class AppStatusReader:
    """The app rows of ``pincompile status -o json``, read from the host cluster the same way
    (each app resource's stored status), at most once per ``ttl`` seconds."""

    def __init__(self, kubeconfig: str | None, context: str, ttl: float = 2.0) -> None:
        self.kubeconfig, self.context, self.ttl = kubeconfig, context, ttl
        self._conn: Any = None
        self._lock = threading.Lock()
        self._read_at = -ttl
        self._answer: tuple[list[dict[str, Any]] | None, str | None] = (None, None)

    def read(self) -> tuple[list[dict[str, Any]] | None, str | None]:
        """(rows, None), or (None, why the host could not be read)."""
        from kubernetes.dynamic.exceptions import DynamicApiError

        from reconciler.clients.connect import ClusterUnreachable, Connection
        from reconciler.host import read_rows

        with self._lock:
            if time.monotonic() - self._read_at < self.ttl:
                return self._answer
            try:
                if self._conn is None:
                    self._conn = Connection("host", self.context, self.kubeconfig)
                self._answer = (read_rows(self._conn), None)
            except (ClusterUnreachable, DynamicApiError, OSError) as exc:
                self._answer = (None, redact(f"host cluster unreachable: {exc}"))
            except Exception as exc:  # an unusable kubeconfig: say so in /status
                self._answer = (None, redact(f"cannot read the host cluster: {exc}"))
            self._read_at = time.monotonic()
            return self._answer

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
