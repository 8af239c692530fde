"""A pass narrowed to some apps keeps only their changes, and prunes only their objects."""

from __future__ import annotations

from pincompile.manifest import LABEL_APP, LABEL_KIND, LABEL_PROJECT
from pincompile.selector import Targets
from reconciler.model import Obj
from reconciler.plan.change import Action, Change
from reconciler.plan.cluster_plan import ClusterPlan
from reconciler.plan.narrow import narrow


def obj(kind: str, project: str, app: str | None, **labels: str) -> Obj:
    owned = {LABEL_PROJECT: project, **({LABEL_KIND: "PinApp", LABEL_APP: app} if app else {})}
    return {"apiVersion": "v1", "kind": kind,
            "metadata": {"name": app or project, "namespace": project,
                         "labels": {**owned, **labels}}}


def change(action: Action, o: Obj) -> Change:
    key = (o["kind"], o["metadata"]["namespace"], o["metadata"]["name"])
    return Change(action, key, desired=None if action is Action.PRUNE else o,
                  live=o if action is Action.PRUNE else None)


def test_only_the_wanted_apps_changes_are_kept_and_another_apps_prune_never() -> None:
    web, gone, other = obj("Deployment", "shop", "web"), obj("Deployment", "shop", "gone"), \
        obj("Deployment", "ads", "banner", team="ads")
    plan = ClusterPlan("east", changes=[change(Action.UPDATE, web), change(Action.PRUNE, gone),
                                        change(Action.PRUNE, other)])
    narrow(plan, Targets([("PinApp", "shop", "web")], None, None), "20%")
    assert [c.key[2] for c in plan.changes] == ["web"]

    plan = ClusterPlan("east", changes=[change(Action.PRUNE, gone), change(Action.PRUNE, other)])
    narrow(plan, Targets([], "shop", None), "20%")
    assert [(c.action, c.key[2]) for c in plan.changes] == [(Action.PRUNE, "gone")]

    plan = ClusterPlan("east", changes=[change(Action.PRUNE, gone), change(Action.PRUNE, other)])
    narrow(plan, Targets([], None, "team=ads"), "20%")
    assert [c.key[2] for c in plan.changes] == ["banner"]


def test_prunes_held_for_the_whole_cluster_are_judged_again_on_the_narrowed_set() -> None:
    live = {("Deployment", "x", str(i)): obj("Deployment", "x", str(i)) for i in range(10)}
    blocked = "9 of 10 managed objects would be pruned, over --max-prune 20% (2); nothing pruned"
    held = [Change(Action.SKIPPED, ("Deployment", p, a), live=obj("Deployment", p, a),
                   reason=blocked) for p, a in [("shop", "gone")] + [("ads", str(i))
                                                                     for i in range(8)]]
    plan = ClusterPlan("east", changes=list(held), live=live, blocked=blocked)
    narrow(plan, Targets([], "shop", None), "20%")
    assert plan.blocked is None
    assert [(c.action, c.key[2]) for c in plan.changes] == [(Action.PRUNE, "gone")]

    plan = ClusterPlan("east", changes=list(held), live=live, blocked=blocked)
    narrow(plan, Targets([], "ads", None), "20%")  # 8 of 10 is still over 20%
    assert plan.blocked == blocked and {c.action for c in plan.changes} == {Action.SKIPPED}
