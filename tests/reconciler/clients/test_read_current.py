"""Reading what a pass waits to see healthy: a GET each for a few objects, one LIST for
many of a kind, nothing at all from a watch cache."""

from __future__ import annotations

from pathlib import Path

from pincompile.compiler import compile_path
from reconciler.clients.read import GETS_PER_KIND, current, key_of
from reconciler.engine import Reconciler
from reconciler.model import Obj
from tests.support.fake_passes import SUNDAY, FakePass, fake_fleet, spec_repo
from tests.support.kube_fake import FakeAccess, FakeCluster

OURS = {"app.kubernetes.io/managed-by": "pincompile"}


def config_map(name: str) -> Obj:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "default", "labels": OURS}}


def test_many_objects_of_a_kind_are_read_by_one_list_a_few_by_a_get_each() -> None:
    cluster = FakeCluster("c")
    many = [config_map(f"cm-{i}") for i in range(GETS_PER_KIND + 4)]
    for obj in many[:-1]:  # the last one is not there
        cluster.apply(obj)
    access = FakeAccess("c", cluster)
    found = current(access, many)
    assert access.stats.by_verb == {"list": 1}
    assert [found[key_of(o)] is not None for o in many] == [True] * (len(many) - 1) + [False]
    few = FakeAccess("c", cluster)
    assert all(current(few, many[:3]).values())
    assert few.stats.by_verb == {"get": 3}
    cached = {key_of(o): o for o in many[:2]}
    none = FakeAccess("c", cluster)
    assert current(none, many[:3], cached) == {**cached, key_of(many[2]): None}
    assert not none.stats.by_verb


def test_a_long_running_reconciler_waits_for_health_on_its_watch_cache(
        tmp_path: Path) -> None:
    repo = spec_repo(tmp_path / "repo")
    fleet = fake_fleet(compile_path(repo))
    reconciler = Reconciler(None, watch=True, clock=lambda: SUNDAY, connect=fleet.connect)
    try:
        run = FakePass(fleet, repo, reconciler=reconciler, wait=True)
        assert run.report.converged and run.report.steps.get("wait") is not None
        gets = {n: c.stats.by_verb["get"] for n, c in reconciler.connections.items()}
    finally:
        reconciler.close()
    assert set(gets) == {"host", "rt-a", "rt-b", "rt-c"}
    assert not any(v for n, v in gets.items() if n != "host"), gets
