"""The watch cache on an in-memory cluster: it follows objects created, changed and
deleted; keeps only what pincompile applied (not a controller's objects); and, when the
server has forgotten the version it watches from (410 Gone), lists again, as client-go's
reflector does. ``test_cache_e2e.py`` runs it against a real member cluster."""

from __future__ import annotations

from pincompile.manifest import MANAGED_BY, MANAGED_BY_VALUE
from reconciler.clients.cache import ClusterCache
from reconciler.kinds import KindInfo
from reconciler.model import Obj
from tests.support.kube_fake import FakeAccess, FakeCluster
from tests.support.serve import wait_for

CONFIG_MAP = KindInfo("v1", "ConfigMap")


def config_map(name: str, data: dict[str, str], **meta: object) -> Obj:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "default",
                         "labels": {MANAGED_BY: MANAGED_BY_VALUE}, **meta}, "data": data}


def test_the_cache_follows_changes_keeps_only_ours_and_relists_after_410() -> None:
    cluster = FakeCluster()
    access = FakeAccess("a", cluster)
    seen: list[str] = []
    cache = ClusterCache(access, lambda obj: seen.append(obj["metadata"]["name"]),
                         watched=[CONFIG_MAP])
    try:
        assert cache.snapshot(timeout=5) == {}
        access.apply(config_map("one", {"a": "1"}))
        access.apply(config_map("made", {}, ownerReferences=[
            {"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "u"}]))
        key = ("ConfigMap", "default", "one")
        wait_for(lambda: key in cache.snapshot(), 5, "the created ConfigMap")
        access.apply(config_map("one", {"a": "2"}))
        wait_for(lambda: cache.snapshot()[key]["data"] == {"a": "2"}, 5, "the change")
        assert ("ConfigMap", "default", "made") not in cache.snapshot()
        lists = access.stats.lists["configmaps"]
        cluster.end_watches()  # the cache watches again after a back-off (0.5 s) ...
        access.apply(config_map("two", {}))
        access.delete(config_map("one", {}))
        cluster.forget_history()  # ... from a version the server no longer has: 410
        wait_for(lambda: set(cache.snapshot()) == {("ConfigMap", "default", "two")}, 5,
                 "the relisted state")
        assert access.stats.lists["configmaps"] == lists + 1
        assert seen[:2] == ["one", "one"]
    finally:
        cache.close()
        access.close()
