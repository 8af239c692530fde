"""One audit record per pass, written as a JSON line and as a Kubernetes Event.

A record says which revision (commit author and subject), what triggered the pass, what it
did in each member cluster (created / changed / pruned / replaced counts), how long it took
and, when it failed, why.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from reconciler.clock import iso_time
from reconciler.model import PassReport
from reconciler.serve.redact import redact, redact_data

if TYPE_CHECKING:
    from reconciler.clients.access import ClusterAccess

log = logging.getLogger("pincompile.serve.audit")
EVENT_ANNOTATION = "pincompute.io/audit"
COMPONENT = "pincompile-serve"


@dataclass
class AuditRecord:
    """What one pass did, in the terms a reviewer asks about."""

    time: str
    revision: str
    author: str
    subject: str
    trigger: str
    outcome: str
    """``applied``, ``unconverged`` (applied, but something was left different from the
    specs: see ``clusters``), ``failed`` (some cluster failed), ``compile-failed``,
    ``fetch-failed`` or ``reconcile-failed`` (the reconciler itself broke)."""
    duration_seconds: float
    clusters: dict[str, dict[str, Any]] = field(default_factory=dict)
    error: str | None = None
    shards: list[int] = field(default_factory=list)

    def to_json(self) -> str:
        return json.dumps(redact_data(asdict(self)), sort_keys=True)

    def summary(self) -> str:
        """One line for an Event's message (without credentials)."""
        return redact(self._summary())

    def _summary(self) -> str:
        head = f"{self.outcome} {self.revision[:12]}"
        if self.subject:
            head += f" ({self.subject[:80]!r} by {self.author})"
        if self.error:
            return f"{head}: {self.error}"[:1000]
        parts = [f"{name}: +{c['created']} ~{c['changed']} -{c['pruned']} r{c['replaced']}"
                 + (f" error: {c['error']}" if c.get("error") else "")
                 + (f" unconverged: {len(c['unconverged'])}" if c.get("unconverged") else "")
                 for name, c in sorted(self.clusters.items())]
        return f"{head} in {self.duration_seconds:.1f}s; " + "; ".join(parts) if parts \
            else f"{head} in {self.duration_seconds:.1f}s; no member cluster in scope"


def record_for(report: PassReport, *, author: str, subject: str, trigger: str,
               stage: str | None, shards: list[int] | None = None) -> AuditRecord:
    """The audit record of a finished pass (``stage``: what failed before any apply)."""
    outcome = f"{stage}-failed" if stage else (
        "failed" if not report.ok else "applied" if report.converged else "unconverged")
    clusters = {name: {"created": len(c.created), "changed": len(c.updated),
                       "pruned": len(c.pruned), "replaced": len(c.replaced),
                       "unchanged": c.unchanged, "error": c.error,
                       "unconverged": [str(u) for u in c.unconverged]}
                for name, c in report.clusters.items()}
    return AuditRecord(
        time=dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        revision=report.revision, author=author, subject=subject, trigger=trigger,
        outcome=outcome, duration_seconds=round(report.seconds, 3), clusters=clusters,
        error=report.error, shards=shards or [])


class AuditSink(Protocol):
    def write(self, record: AuditRecord) -> None: ...


class JsonLinesAudit:
    """Appends one JSON object per line to a file (created if missing)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        path.parent.mkdir(parents=True, exist_ok=True)

    def write(self, record: AuditRecord) -> None:
        line = record.to_json() + "\n"
        with self._lock, self.path.open("a", encoding="utf-8") as out:
            out.write(line)


class EventAudit:
    """Creates a core/v1 Event in the host cluster about the serve Lease, per record."""

    def __init__(self, host: ClusterAccess, namespace: str, lease: str, identity: str) -> None:
        self.host = host
        self.namespace = namespace
        self.lease = lease
        self.identity = identity

    def write(self, record: AuditRecord) -> None:
        now = iso_time(time.time())
        reason = {"applied": "PassApplied", "unconverged": "PassUnconverged",
                  "failed": "PassFailed",
                  "compile-failed": "CompileFailed", "fetch-failed": "FetchFailed"
                  }.get(record.outcome, "ReconcileFailed")
        event = {
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"generateName": f"{self.lease}.", "namespace": self.namespace,
                         "annotations": {EVENT_ANNOTATION: record.to_json()}},
            "involvedObject": {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                               "name": self.lease, "namespace": self.namespace},
            "reason": reason, "message": record.summary(),
            "type": "Normal" if record.outcome == "applied" else "Warning",
            "source": {"component": COMPONENT, "host": self.identity},
            "reportingComponent": COMPONENT, "reportingInstance": self.identity,
            "firstTimestamp": now, "lastTimestamp": now, "count": 1}
        try:
            self.host.create(event)
        except Exception as exc:  # an audit Event must never stop reconciling
            log.warning("could not record the audit Event: %s", exc)
