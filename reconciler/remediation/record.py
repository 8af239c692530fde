"""Where remediation and rotation say what they decided and did: a Kubernetes Event on
the Node in its member cluster, an Event on the Cluster's resource on the host (circuit
breaker, rotation progress), an Event on each moved app's resource on the host (the
insight store's collector turns those into the app's timeline: ``moved off node X:
remediation``), a JSON line in serve's audit log and a log line. Recording never stops the
work: a failed write is logged and dropped."""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from reconciler.clients.access import ClusterAccess
from reconciler.clients.connect import Connection
from reconciler.clock import iso_time
from reconciler.errors import CLUSTER_ERRORS, explain
from reconciler.host import API_VERSION, record_event
from reconciler.status.document import app_of

log = logging.getLogger("pincompile.nodes")
COMPONENT = "pincompile-serve"
MOVED_REASON = "MovedOffNode"
"""The reason of the Event on an app's resource for each of its pods moved off a node."""


def _event(involved: Mapping[str, Any], namespace: str, reason: str, message: str,
           warning: bool) -> dict[str, Any]:
    stamp = iso_time(time.time())
    return {
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"generateName": f"{involved['name']}.", "namespace": namespace},
        "involvedObject": dict(involved), "reason": reason, "message": message[:1000],
        "type": "Warning" if warning else "Normal",
        "source": {"component": COMPONENT}, "reportingComponent": COMPONENT,
        "reportingInstance": COMPONENT, "firstTimestamp": stamp, "lastTimestamp": stamp,
        "count": 1,
    }


class Recorder:
    """Records for one ``serve`` process: ``host`` for Events on the host (None: none),
    ``audit_log`` for JSON lines (None: none)."""

    def __init__(self, host: Connection | None, audit_log: Path | None = None) -> None:
        self.host = host
        self.audit_log = audit_log
        self._lock = threading.Lock()

    def node(self, conn: Connection, cluster: str, node: str, reason: str, message: str, *,
             warning: bool = False, uid: str = "", **audit: Any) -> None:
        """An Event on ``node`` in its member cluster, an audit line and a log line."""
        involved = {"apiVersion": "v1", "kind": "Node", "name": node,
                    **({"uid": uid} if uid else {})}
        self._create(conn, _event(involved, "default", reason, message, warning))
        self.audit(cluster=cluster, node=node, reason=reason, message=message, **audit)
        (log.warning if warning else log.info)("%s: node %s: %s: %s", cluster, node, reason,
                                               message)

    def cluster(self, cluster: str, reason: str, message: str, *, warning: bool = False,
                **audit: Any) -> None:
        """An Event on the Cluster's resource on the host, an audit line and a log line."""
        if self.host is not None:
            involved = {"apiVersion": API_VERSION, "kind": "Cluster", "name": cluster}
            self._create(self.host, _event(involved, "default", reason, message, warning))
        self.audit(cluster=cluster, reason=reason, message=message, **audit)
        (log.warning if warning else log.info)("%s: %s: %s", cluster, reason, message)

    def moved(self, cluster: str, node: str, pod: Mapping[str, Any], why: str) -> None:
        """An Event on the app of ``pod`` (evicted from ``node``): the app's timeline."""
        app = app_of(dict(pod))
        if app is None or self.host is None:
            return
        meta = pod.get("metadata") or {}
        message = (f"moved off node {node}: {why} (pod {meta.get('namespace')}/"
                   f"{meta.get('name')} evicted in {cluster})")
        try:
            record_event(self.host, app, MOVED_REASON, message)
        except CLUSTER_ERRORS as exc:
            log.warning("could not record %s on %s: %s", MOVED_REASON, "/".join(app),
                        explain(exc))

    def audit(self, **record: Any) -> None:
        """One JSON line in the audit log (beside the passes' records)."""
        if self.audit_log is None:
            return
        line = json.dumps({"time": iso_time(time.time()), "kind": "nodes", **record},
                          sort_keys=True, default=str)
        with self._lock, self.audit_log.open("a", encoding="utf-8") as out:
            out.write(line + "\n")

    @staticmethod
    def _create(conn: ClusterAccess, body: dict[str, Any]) -> None:
        try:
            conn.create(body)
        except CLUSTER_ERRORS as exc:
            log.warning("could not record the Event %s in %s: %s", body["reason"], conn.name,
                        explain(exc))
