"""A pass narrowed to some apps (``apply KIND/PROJECT/NAME``, ``-p PROJECT``, ``-l
SELECTOR``): which of its changes it makes. Everything is still compiled and planned;
then only changes to the wanted apps' objects are kept, so a prune can only remove an
object of a wanted app, never another app's.

An object in a member cluster is an app's by its ownership labels (kind, project, app;
an app's spec labels are copied onto every object it generates), as ``plan`` shows it.
On the host, only the wanted apps' resources are written, and namespaces created; other
resources (clusters, projects, other apps) are left as they are."""

from __future__ import annotations

from typing import Protocol

from pincompile.contract import LABEL_APP, LABEL_KIND, LABEL_PROJECT
from reconciler.host import app_key
from reconciler.model import AppKey, Obj
from reconciler.plan.change import Action, Change
from reconciler.plan.cluster_plan import ClusterPlan, prune_limit
from reconciler.status.document import APP_KINDS


class Targets(Protocol):
    """Which apps are wanted (:class:`pincompile.selector.Targets`)."""

    @property
    def everything(self) -> bool: ...

    def matches(self, kind: str, project: str, name: str,
                labels: dict[str, str] | None = None) -> bool: ...


def _labels(obj: Obj | None) -> dict[str, str]:
    return dict(((obj or {}).get("metadata") or {}).get("labels") or {})


def touches(change: Change, wanted: Targets) -> bool:
    """Whether ``change`` is to an object of an app ``wanted`` names."""
    labels = _labels(change.desired or change.live)
    return wanted.matches(labels.get(LABEL_KIND, ""), labels.get(LABEL_PROJECT, ""),
                          labels.get(LABEL_APP, ""), labels)


def touches_host(change: Change, wanted: Targets) -> bool:
    """Whether a narrowed pass makes ``change`` on the host: a wanted app's resource, or a
    namespace created or updated (never pruned)."""
    obj = change.desired or change.live or {}
    if obj.get("kind") == "Namespace":
        return change.action is not Action.PRUNE
    return obj.get("kind") in APP_KINDS and wanted_app(app_key(obj), obj, wanted)


def wanted_app(key: AppKey, resource: Obj | None, wanted: Targets) -> bool:
    """Whether the app ``key`` (its resource on the host, for its labels) is wanted."""
    return wanted.matches(*key, _labels(resource))


def narrow(plan: ClusterPlan, keep: Targets, max_prune: str, *, host: bool = False
           ) -> None:
    """Drop the changes a pass narrowed to ``keep`` does not make. Prunes held because
    the whole cluster's were over ``max_prune`` are judged again on the narrowed set's
    own (the limit stays a share of the cluster's managed objects)."""
    test = touches_host if host else touches
    plan.changes = [c for c in plan.changes if test(c, keep)]
    if plan.blocked is None:
        return
    held = [c for c in plan.changes if c.action is Action.SKIPPED and c.reason == plan.blocked]
    if len(held) <= prune_limit(max_prune, len(plan.live)):
        for change in held:
            change.action, change.reason = Action.PRUNE, ""
        plan.blocked = None
