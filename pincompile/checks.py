"""Semantic checks across specs: references, duplicates, policy. (Being built.)"""

from __future__ import annotations

from pincompile.catalog import Catalog
from pincompile.diagnostics import Diagnostic


def check(catalog: Catalog) -> list[Diagnostic]:
    """Every cross-document rule; returns all problems found."""
    return []
