"""The watch cache against a real member cluster: it follows what pincompile manages as the
objects are created, changed and deleted (its events are parsed, never wrapped in the
dynamic client's ResourceInstance); a kind that discovery names but the cluster does not
serve (discovery is cached on disk per API server address, and a local fleet's ports are
reused by the next fleet) is an empty kind, not a cache that never syncs (which failed
every pass in that cluster after a minute's wait)."""

from __future__ import annotations

import pytest
from kubernetes.dynamic.resource import Resource

from pincompile.manifest import MANAGED_BY, MANAGED_BY_VALUE
from reconciler.clients.cache import ClusterCache
from reconciler.clients.connect import Connection
from reconciler.fleet import fleet as fleet_mod
from reconciler.fleet.clusters import ClusterSpec
from reconciler.kinds import KindInfo
from tests.support.serve import wait_for

pytestmark = pytest.mark.e2e

GADGET = KindInfo("gadgets.example.invalid/v1", "Gadget")
"""A kind no cluster of the fleet serves."""
CONFIG_MAP = KindInfo("v1", "ConfigMap")
KEY = ("ConfigMap", "default", "cache-e2e")


def test_the_cache_follows_created_changed_and_deleted_objects(
        fleet: fleet_mod.FleetState, fleet_specs: dict[str, ClusterSpec]) -> None:
    spec = next(iter(fleet_specs.values()))
    conn = Connection(spec.name, spec.context, str(fleet.kubeconfig))
    seen: list[str] = []
    cache = ClusterCache(conn, lambda obj: seen.append(obj["metadata"]["name"]),
                         watched=[CONFIG_MAP])
    api = conn.resource("v1", "ConfigMap")
    body = {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": KEY[2], "namespace": KEY[1],
                         "labels": {MANAGED_BY: MANAGED_BY_VALUE}}, "data": {"a": "1"}}
    try:
        assert KEY not in cache.snapshot(timeout=30.0)
        api.create(body=body, namespace=KEY[1])
        wait_for(lambda: KEY in cache.snapshot(), timeout=30, what="the created ConfigMap")
        assert isinstance(cache.snapshot()[KEY], dict)
        api.patch(body={"data": {"a": "2"}}, name=KEY[2], namespace=KEY[1],
                  content_type="application/merge-patch+json")
        wait_for(lambda: cache.snapshot()[KEY]["data"] == {"a": "2"}, timeout=30,
                 what="the changed ConfigMap")
        api.delete(name=KEY[2], namespace=KEY[1])
        wait_for(lambda: KEY not in cache.snapshot(), timeout=30, what="the deletion")
        assert seen.count(KEY[2]) >= 3
    finally:
        cache.close()
        conn.close()


def test_a_kind_that_stale_discovery_names_is_empty_not_unsynced(
        fleet: fleet_mod.FleetState, fleet_specs: dict[str, ClusterSpec]) -> None:
    spec = next(iter(fleet_specs.values()))
    conn = Connection(spec.name, spec.context, str(fleet.kubeconfig))
    # what a discovery cache written by another API server at this address says
    conn._resources[(GADGET.api_version, GADGET.kind)] = Resource(
        prefix="apis", group="gadgets.example.invalid", api_version="v1", kind="Gadget",
        name="gadgets", namespaced=True, verbs=["list", "watch"], client=conn.dynamic)
    cache = ClusterCache(conn, watched=[GADGET])
    try:
        assert cache.snapshot(timeout=20.0) == {}
        assert cache.watches[0].error == "Gadget is not served (yet)"
    finally:
        cache.close()
        conn.close()
