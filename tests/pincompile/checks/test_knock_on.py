"""Knock-on errors: a spec that failed validation is still known by name to the rules that
refer to it, which point at it instead of reporting that no such spec exists."""

from __future__ import annotations

from tests.support.specs import compile_all, files, validate

FIXTURE = files()


def broken(name: str, old: str, new: str) -> dict[str, str | bytes]:
    text = FIXTURE[name]
    assert isinstance(text, str) and old in text
    return files({name: text.replace(old, new, 1)})


def messages(tree: dict[str, str | bytes], code: str) -> set[tuple[str, str, str | None]]:
    return {(d.location(), d.message, d.hint) for d in validate(tree) if d.code == code}


FIX = "fix the errors reported there; this reference then resolves"


def test_a_scaler_of_an_invalid_app_points_at_the_app() -> None:
    tree = broken("apps/shop/web.yaml", "  replicas: 4", "  replica: 4")
    assert [d.code for d in validate(tree)] == ["unknown-field", "unknown-target"]
    (_, message, hint), = messages(tree, "unknown-target")
    assert (message, hint) == ("PinApp 'web' is invalid, see apps/shop/web.yaml:4", FIX)


def test_a_workload_of_an_invalid_project_points_at_the_project() -> None:
    tree = broken("platform/projects/shop.yaml", "  owners:", "  owner:")
    found = messages(tree, "unknown-project")
    assert found and {(m, h) for _, m, h in found} == {
        ("Project 'shop' is invalid, see platform/projects/shop.yaml:4", FIX)}


def test_a_pod_listing_an_invalid_sidecar_points_at_the_sidecar() -> None:
    tree = broken("platform/sidecars/logging.yaml", "mode: sidecar", "mode: sidecarr")
    assert {(m, h) for _, m, h in messages(tree, "unknown-sidecar")} == {
        ("PinterestSideCar 'logging' is invalid, see platform/sidecars/logging.yaml:4", FIX)}


def test_a_placement_naming_an_invalid_cluster_points_at_the_cluster() -> None:
    tree = broken("platform/clusters/fleet.yaml", "  region:", "  regoin:")
    assert {(m, h) for _, m, h in messages(tree, "unknown-cluster")} == {
        ("Cluster 'east-a-01' is invalid, see platform/clusters/fleet.yaml:4", FIX)}


def test_the_whole_pipeline_says_so_too() -> None:
    tree = broken("apps/shop/web.yaml", "  replicas: 4", "  replica: 4")
    assert "PinApp 'web' is invalid, see apps/shop/web.yaml:4" in {
        d.message for d in compile_all(tree).diagnostics}


def test_an_unknown_name_still_gets_did_you_mean() -> None:
    tree = broken("apps/shop/web.yaml", "sidecars: [logging]", "sidecars: [loging]")
    assert {h for _, _, h in messages(tree, "unknown-sidecar")} == {"did you mean 'logging'?"}


def test_a_kind_written_as_a_map_is_an_error_not_a_crash() -> None:
    tree = broken("apps/shop/web.yaml", "kind: PinApp", "kind: {PinApp: 1}")
    assert "unknown-target" in {d.code for d in compile_all(tree).diagnostics}
