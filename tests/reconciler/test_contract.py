"""The reconciler uses the compiler only through ``pincompile.contract`` (and the names of
labels and annotations both sides write, ``pincompile.manifest``); only the command line
(``reconciler/commands/``), one program with ``pincompile``'s own commands, shares their
plumbing (exit codes, diagnostics, tables)."""

from __future__ import annotations

import ast
from pathlib import Path

import reconciler

ROOT = Path(reconciler.__file__).parent
ALLOWED = {"pincompile.contract", "pincompile.manifest"}


def pincompile_imports(path: Path) -> set[str]:
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        out |= {n for n in names if n == "pincompile" or n.startswith("pincompile.")}
    return out


def test_the_reconciler_imports_from_pincompile_only_its_contract() -> None:
    files = [p for p in sorted(ROOT.rglob("*.py")) if p.relative_to(ROOT).parts[0] != "commands"]
    assert len(files) >= 120
    found = {str(p.relative_to(ROOT)): pincompile_imports(p) for p in files}
    assert {f: i for f, i in found.items() if i - ALLOWED} == {}
    assert sum(1 for i in found.values() if "pincompile.contract" in i) >= 10  # real imports


def test_the_contract_answers_what_the_pass_asks() -> None:
    from pincompile import contract
    from pincompile.pipeline import Result

    assert contract.Result is Result
    assert {"place_without", "pods_held", "ANNOTATION_SCALE_SCHEDULES"} <= set(contract.__all__)


def test_the_placement_without_a_lost_cluster_keeps_the_revision_and_skips_it() -> None:
    from pincompile import contract
    from pincompile.compiler import compile_path
    from pincompile.contract import place_without, pods_held

    fixture = Path(__file__).parent / "fixtures" / "failover"
    result = compile_path(fixture, revision="abc123")
    assert result.ok and result.revision == "abc123"
    def deployed(manifests: list[contract.Manifest]) -> set[str]:
        return {m.cluster for m in manifests if m.obj["kind"] == "Deployment"}

    assert deployed(result.manifests) == {"fo-a", "fo-b", "fo-c"}
    placed = place_without(result, {"fo-c": "unreachable"})
    assert deployed(placed.manifests) == {"fo-a", "fo-b"}
    assert {m.obj["metadata"]["annotations"]["pincompute.io/revision"]
            for m in placed.manifests if m.obj["metadata"].get("annotations")} == {"abc123"}
    # fo-a's 16 cpu hold 160 of api's pods (100m each); an unknown scaler nothing
    assert pods_held(result, ("PinScaler", "shop", "api"), "fo-a") == 160
    assert pods_held(result, ("PinScaler", "shop", "none"), "fo-a") is None
