"""The JSON documents ``serve`` answers with."""

from __future__ import annotations

from typing import Any

from reconciler.model import PassReport


def report_json(report: PassReport) -> dict[str, Any]:
    """A pass report as plain JSON data (objects named ``Kind/namespace/name``)."""
    return {
        "revision": report.revision,
        "ok": report.ok,
        "error": report.error,
        "seconds": round(report.seconds, 3),
        "writes": report.writes,
        "clusters": {
            name: {"created": [str(r) for r in c.created], "updated": [str(r) for r in c.updated],
                   "replaced": [str(r) for r in c.replaced], "pruned": [str(r) for r in c.pruned],
                   "unchanged": c.unchanged, "conflicts": list(c.conflicts), "error": c.error,
                   "seconds": round(c.seconds, 3)}
            for name, c in sorted(report.clusters.items())},
    }
