"""What the reconciler's commands print of apps and pods, through one printer: the app
document (:class:`~reconciler.api.models.AppDetail`, the API's) whether it comes from the
API (``get apps``) or from the host's rows (``status``, ``apply``), as a table that fits
the terminal, names (``KIND/PROJECT/NAME``) or a list document (``apiVersion``, ``kind``,
``items``, as kubectl prints one); and an app's pods."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from pincompile.commands.common import columns as aligned
from pincompile.commands.common import table_width
from reconciler.api.index import SUMMARY_FIELDS, app_detail
from reconciler.api.models import APP_LIST_VERSION, AppDetail, AppSummary, PodList, PodSummary

__all__ = ["age", "app_docs", "apps_table", "columns", "pods_text", "render_apps",
           "render_clusters", "render_list", "table_width"]


def age(stamp: str | None, now: float | None = None) -> str:
    """How long ago an RFC 3339 instant was, as kubectl's AGE column says it (``45s``,
    ``3m12s``, ``17m``, ``5h40m``, ``2d3h``); ``-`` when unknown."""
    if not stamp:
        return "-"
    try:
        then = datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return "-"
    seconds = max(0, int((now if now is not None else time.time()) - then))
    minutes, hours, days = seconds // 60, seconds // 3600, seconds // 86400
    if seconds < 120:
        return f"{seconds}s"
    if seconds < 600:
        return f"{minutes}m{seconds % 60}s" if seconds % 60 else f"{minutes}m"
    if hours < 3:
        return f"{minutes}m"
    if hours < 8:
        return f"{hours}h{minutes % 60}m" if minutes % 60 else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if days < 8:
        return f"{days}d{hours % 24}h" if hours % 24 else f"{days}d"
    return f"{days}d"


def columns(table: list[list[Any]], width: int | None = None, *,
            truncate: Sequence[str] = (), drop: Sequence[str] = (),
            keep: Sequence[str] = ()) -> str:
    """The reconciler's tables: aligned columns fit to ``width`` (see
    :func:`pincompile.commands.common.columns`); ``keep``: the names, never cut. Columns
    named that the table does not have are no matter."""
    header = set(table[0]) if table else set()
    return "\n".join(aligned(table, gap="   ", width=width,
                             truncate=[c for c in truncate if c in header],
                             drop=[c for c in drop if c in header],
                             keep=[c for c in keep if c in header]))


def render_list(kind: str, items: list[Any], fmt: str, **more: Any) -> str:
    """A list document as kubectl prints one: ``apiVersion``, ``kind``, ``items`` (and
    ``more``), as json or yaml."""
    document = {"apiVersion": APP_LIST_VERSION, "kind": kind, "items": items, **more}
    if fmt == "json":
        return json.dumps(document, indent=2)
    from pincompile.emit.output import to_yaml

    return to_yaml(document).rstrip()


# -- apps -------------------------------------------------------------------------------------
def app_docs(rows: Iterable[Mapping[str, Any]]
             ) -> tuple[list[AppDetail], dict[str, dict[str, Any]]]:
    """The app documents of the host's rows (``{kind, project, name, statusTime,
    status}``, as :func:`reconciler.host.read_rows` gives them), and the failover state of
    each member cluster row among them."""
    docs, lost = [], {}
    for row in rows:
        status = dict(row.get("status") or {})
        if row["kind"] == "Cluster":
            lost[str(row["name"])] = dict(status.get("failover") or {})
            continue
        if row.get("statusTime"):
            status["statusTime"] = row["statusTime"]
        docs.append(app_detail((row["kind"], row["project"], row["name"]), status))
    return docs, lost


def render_apps(docs: Sequence[AppSummary], fmt: str, width: int | None = None,
                lost: Mapping[str, Mapping[str, Any]] | None = None) -> str:
    """Apps as ``-o`` asks: an ``AppList`` document (json, yaml; with the member clusters
    not simply reachable as ``clusters``), their names, or a table fit to ``width``."""
    if fmt == "name":
        return "\n".join(f"{d.kind}/{d.project}/{d.name}" for d in docs)
    if fmt in ("json", "yaml"):
        clusters = [{"name": n, "failover": s} for n, s in sorted((lost or {}).items())]
        return render_list("AppList", [d.model_dump(mode="json", include=SUMMARY_FIELDS)
                                       for d in docs], fmt,
                           **({"clusters": clusters} if clusters else {}))
    return apps_table(docs, width, render_clusters(lost or {}, width))


def apps_table(docs: Sequence[AppSummary], width: int | None = None,
               clusters_text: str = "") -> str:
    """kubectl-like columns: APP PHASE READY CLUSTERS ROLLOUT FAILOVER REVISION APPLIED AGE
    MESSAGE; then ``clusters_text`` (the member clusters not simply reachable). With a
    ``width`` (see :func:`pincompile.commands.common.table_width`) long cells are cut and
    the least needed columns left out until each line fits it; the APP column is never
    cut."""
    table = [["APP", "PHASE", "READY", "CLUSTERS", "ROLLOUT", "FAILOVER", "REVISION",
              "APPLIED", "AGE", "MESSAGE"]]
    for doc in docs:
        shares = " ".join(f"{c.name}={c.readyReplicas}/{c.replicas}"
                          if c.phase != "Unknown" else f"{c.name}=?" for c in doc.clusters)
        table.append([f"{doc.kind}/{doc.project}/{doc.name}", doc.phase, doc.ready,
                      shares or "-", rollout_cell(doc.rollout or {}),
                      failover_cell(doc.failover or {}),
                      doc.lastAppliedRevision[:12] or "-", doc.lastAppliedTime or "-",
                      age(doc.statusTime), doc.message])
    text = columns(table, width, truncate=("MESSAGE", "CLUSTERS"),
                   drop=("APPLIED", "REVISION", "ROLLOUT", "FAILOVER", "AGE", "CLUSTERS"),
                   keep=("APP",))
    return f"{text}\n\n{clusters_text}" if clusters_text else text


def rollout_cell(rollout: Mapping[str, Any]) -> str:
    """``Complete``, ``Progressing use1b``, ``Halted use1b`` or ``-``."""
    if not rollout:
        return "-"
    phase = str(rollout.get("phase", ""))
    return (phase if phase == "Complete" else f"{phase} {rollout.get('zone', '')}").strip() \
        or "-"


def failover_cell(move: Mapping[str, Any]) -> str:
    """``FailedOver``, ``FailingBack 2/4`` (replicas back), ``Stranded`` or ``-``."""
    if not move:
        return "-"
    back = move.get("failback") or {}
    return f"{move.get('phase', '')} {back['back']}/{back['of']}" if back else \
        str(move.get("phase", "-"))


def render_clusters(states: Mapping[str, Mapping[str, Any]], width: int | None = None) -> str:
    """CLUSTER FAILOVER SINCE REASON for member clusters that are not simply reachable
    ('' when there are none), fit to ``width``."""
    table = [["CLUSTER", "FAILOVER", "SINCE", "REASON"]]
    for name, state in sorted(states.items()):
        phase = str(state.get("phase", "-"))
        if phase == "Returning":
            phase += f" (step {state.get('failbackSteps', 0)})"
        table.append([name, phase, str(state.get("since", "-")),
                      str(state.get("reason", ""))])
    return columns(table, width, drop=("SINCE",), keep=("CLUSTER",)) if len(table) > 1 else ""


# -- pods -------------------------------------------------------------------------------------
def pods_text(pods: Sequence[tuple[AppSummary, PodList]], fmt: str,
              width: int | None = None) -> str:
    """The pods of each app as ``-o`` asks: ``CLUSTER/NAMESPACE/POD`` names, a ``PodList``
    document per app (json, yaml) or one table (an APP column when there are several apps;
    CONTAINERS, each with its state and image, with ``wide``); then the clusters whose pods
    could not be read."""
    if fmt == "name":
        return "\n".join(f"{p.cluster}/{p.namespace}/{p.name}" for _, found in pods
                         for p in found.items)
    if fmt in ("json", "yaml"):
        return render_list("PodList", [
            {"app": f"{a.kind}/{a.project}/{a.name}", **p.model_dump(mode="json")}
            for a, found in pods for p in found.items], fmt, unreadable=[
            {"app": f"{a.kind}/{a.project}/{a.name}", **u.model_dump()}
            for a, found in pods for u in found.unreadable])
    several = len(pods) > 1
    wide = fmt == "wide"
    rows = [(app, pod) for app, found in pods for pod in found.items]
    ended = wide or any(_last_ended(pod) for _, pod in rows)
    table: list[list[Any]] = [[*(["APP"] if several else []), "CLUSTER", "POD", "READY",
                               "STATUS", "RESTARTS", "AGE", "NODE",
                               *(["CONTAINERS"] if wide else []),
                               *(["LAST-TERMINATION"] if ended else [])]]
    for app, pod in rows:
        table.append([*([f"{app.kind}/{app.project}/{app.name}"] if several else []),
                      pod.cluster, pod.name, pod.ready, pod_status(pod), pod.restarts,
                      age(pod.created), pod.node or "-",
                      *([container_states(pod)] if wide else []),
                      *([_last_ended(pod) or "-"] if ended else [])])
    problems = [f"{a.kind}/{a.project}/{a.name}: {p.cluster}: {p.message}"
                for a, found in pods for p in found.unreadable]
    text = columns(table, width, truncate=("LAST-TERMINATION", "NODE"),
                   drop=("LAST-TERMINATION", "NODE", "RESTARTS", "CLUSTER"),
                   keep=("APP", "POD")) if rows else ""
    return "\n".join([text, *(f"unreadable: {line}" for line in problems)]).strip("\n")


def pod_status(pod: PodSummary) -> str:
    """The pod's STATUS as kubectl words it: ``Init:1/2`` while an init container runs,
    a container's waiting reason (``CrashLoopBackOff``), else the phase."""
    init = [c for c in pod.containers if c.type == "init"]
    done = [c for c in init if c.state == "Terminated" and c.reason == "Completed"]
    if pod.phase == "Pending" and init and len(done) < len(init):
        waiting = next((c.reason for c in init if c.state == "Waiting" and c.reason), "")
        return f"Init:{waiting}" if waiting else f"Init:{len(done)}/{len(init)}"
    for container in pod.containers:
        if container.type != "init" and container.state == "Waiting" and container.reason:
            return container.reason
    return pod.phase


def container_states(pod: PodSummary) -> str:
    """Every container with what it is, its state and image: ``main=Running[api:1]
    traffic(sidecar)=Running[...] config-sync(init)=Terminated(Completed)[...]``."""
    return " ".join(f"{c.name}{'' if c.type == 'container' else f'({c.type})'}={c.state}"
                    + (f"({c.reason})" if c.reason else "") + f"[{c.image}]"
                    for c in pod.containers)


def _last_ended(pod: PodSummary) -> str:
    return ", ".join(f"{c.name}: {c.lastTerminationReason}"
                     + (f" (exit {c.lastTerminationExitCode})"
                        if c.lastTerminationExitCode is not None else "")
                     for c in pod.containers if c.lastTerminationReason)
