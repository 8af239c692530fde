"""Every pass keeps where an app runs and why in its status (``status.placement``), so
`describe` shows it without the spec tree: the clusters chosen with zone and replicas,
the eligible ones in order, why each other cluster was left out; a PinScaler's is its
target's."""

from __future__ import annotations

from pathlib import Path

from pincompile.contract import compile_path, crds, placements

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def test_the_placement_and_why_of_every_app_and_scaler() -> None:
    found = placements(compile_path(EXAMPLES))
    app = found[("PinApp", "search", "search-api")]
    assert [(c["name"], c["zone"], c["replicas"]) for c in app["clusters"]] == [
        ("use1a-general-01", "us-east-1a", 3), ("use1a-general-02", "us-east-1a", 3),
        ("use1b-general-01", "us-east-1b", 6)]
    assert app["filtered"]["use1c-gpu-01"] == \
        "zone: zone us-east-1c is not in placement.zones [us-east-1a, us-east-1b]"
    assert found[("PinScaler", "search", "search-api")] == app
    schema = crds.kind_info("PinApp").status["properties"]["placement"]["properties"]
    assert set(schema) == set(app)  # the host keeps every part (a structural schema)


def test_an_app_every_cluster_accepts_has_no_filtered_map() -> None:
    """The host's API server turns an applied empty map into null, which the schema
    refuses: the whole status write would fail (it did, for every app of such a fleet)."""
    failover = Path(__file__).resolve().parents[1] / "fixtures" / "failover"
    app = placements(compile_path(failover))[("PinApp", "shop", "api")]
    assert len(app["clusters"]) == 3 and "filtered" not in app
