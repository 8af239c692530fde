"""Expansion of every kind into native objects. (Being built.)"""

from __future__ import annotations

from typing import Any

from pincompile.catalog import Catalog
from pincompile.diagnostics import Diagnostic


def expand_all(catalog: Catalog, plan: Any, *, revision: str) -> tuple[list[Any], list[Diagnostic]]:
    return [], []
