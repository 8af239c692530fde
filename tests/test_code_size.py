"""Product code stays readable in pieces: no function over 80 lines, no module over 500,
and every module imports (mypy, with ignore_missing_imports, would not see a broken import
of our own modules)."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("pincompile", "reconciler")
MAX_FUNCTION_LINES = 80
MAX_MODULE_LINES = 500


def product_modules() -> list[Path]:
    return sorted(p for package in PACKAGES for p in (REPO / package).rglob("*.py"))


def test_no_function_is_over_80_lines() -> None:
    long: dict[str, int] = {}
    for path in product_modules():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                assert node.end_lineno is not None
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    long[f"{path.relative_to(REPO)}:{node.lineno} {node.name}"] = lines
    assert long == {}


def test_no_module_is_over_500_lines() -> None:
    sizes = {str(p.relative_to(REPO)): len(p.read_text().splitlines())
             for p in product_modules()}
    assert len(sizes) > 100  # the walk found the product
    assert {p: n for p, n in sizes.items()
            if n > MAX_MODULE_LINES} == {}


@pytest.mark.parametrize("name", [
    ".".join(p.relative_to(REPO).with_suffix("").parts).removesuffix(".__init__")
    for p in product_modules()
    if p.name != "__main__.py" and "migrations" not in p.parts])  # alembic runs those
def test_every_product_module_imports(name: str) -> None:
    importlib.import_module(name)
