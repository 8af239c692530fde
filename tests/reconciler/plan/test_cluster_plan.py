"""Prune limits of a sync."""

from __future__ import annotations

import pytest

from reconciler.plan.cluster_plan import prune_limit


@pytest.mark.parametrize(("limit", "managed", "want"),
                         [("20%", 100, 20), ("20%", 4, 0), ("5", 100, 5), ("100%", 7, 7)])
def test_prune_limit(limit: str, managed: int, want: int) -> None:
    assert prune_limit(limit, managed) == want
