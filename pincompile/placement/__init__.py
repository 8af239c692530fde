"""Cluster-level scheduling: filters → scores → division. (Being built.)"""

from __future__ import annotations

from typing import Any

from pincompile.catalog import Catalog
from pincompile.diagnostics import Diagnostic


def plan(catalog: Catalog) -> tuple[Any, list[Diagnostic]]:
    return None, []
