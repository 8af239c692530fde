"""The watch cache against a real member cluster: a kind that discovery names but the
cluster does not serve (discovery is cached on disk per API server address, and a local
fleet's ports are reused by the next fleet) is an empty kind, not a cache that never syncs
(which failed every pass in that cluster after a minute's wait)."""

from __future__ import annotations

import pytest
from kubernetes.dynamic.resource import Resource

from reconciler.cache import ClusterCache
from reconciler.clients.connect import Connection
from reconciler.fleet import fleet as fleet_mod
from reconciler.fleet.clusters import ClusterSpec
from reconciler.kinds import KindInfo

pytestmark = pytest.mark.e2e

GADGET = KindInfo("gadgets.example.invalid/v1", "Gadget")
"""A kind no cluster of the fleet serves."""


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
