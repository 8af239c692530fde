"""serve's metrics of a pass: what was left unconverged, per cluster and reason."""

from __future__ import annotations

from reconciler.model import ClusterReport, Left, PassReport, Unconverged
from reconciler.serve.metrics import Metrics


def _pass(*items: tuple[str, Left]) -> PassReport:
    report = PassReport(revision="abc")
    for cluster in ("rt-a", "rt-b"):
        report.clusters[cluster] = ClusterReport(cluster, unconverged=[
            Unconverged(left, "Deployment/shop/web", "why") for c, left in items
            if c == cluster])
    return report


def _sample(metrics: Metrics, name: str, **labels: str) -> float | None:
    return metrics.registry.get_sample_value(name, labels)


def test_unconverged_objects_follow_the_last_pass_and_passes_are_counted() -> None:
    metrics = Metrics()
    stuck = _pass(("rt-a", Left.CONFLICT), ("rt-a", Left.CONFLICT), ("rt-b", Left.PRUNE_HELD))
    assert stuck.ok and not stuck.converged
    metrics.observe_pass(stuck, stage=None, drift=False)
    gauge = "pincompile_serve_unconverged_objects"
    assert _sample(metrics, gauge, cluster="rt-a", reason="conflict") == 2
    assert _sample(metrics, gauge, cluster="rt-b", reason="prune held") == 1
    assert _sample(metrics, "pincompile_serve_unconverged_passes_total") == 1
    assert _sample(metrics, "pincompile_serve_pass_duration_seconds_count",
                   outcome="unconverged") == 1
    metrics.observe_pass(_pass(), stage=None, drift=False)  # converged: the gauge clears
    assert _sample(metrics, gauge, cluster="rt-a", reason="conflict") == 0
    assert _sample(metrics, gauge, cluster="rt-b", reason="prune held") == 0
    assert _sample(metrics, "pincompile_serve_unconverged_passes_total") == 1
    assert _sample(metrics, "pincompile_serve_pass_duration_seconds_count", outcome="ok") == 1
