"""``serve --runner serve_profile_runner:factory``: the real reconciler (``watch=True``, as
``serve`` builds it) with the wall-clock span of every step of a pass appended to
``$SERVE_PROFILE`` as one JSON line per pass. ``serve_latency.py`` uses it to say where
push-to-applied time goes; nothing else changes."""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable
from typing import Any

from reconciler.engine import Reconciler
from reconciler.model import PassReport

STEPS = ("_host_sync", "_read", "_plan", "_apply", "_wait_healthy", "_publish")


class ProfiledReconciler(Reconciler):
    """Records (first start, last end) of each step; steps run per member in threads."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.spans: dict[str, list[float]] = {}
        self.lock = threading.Lock()
        for step in STEPS:
            setattr(self, step, self._timed(step, getattr(self, step)))

    def _timed(self, step: str, inner: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.time()
            try:
                return inner(*args, **kwargs)
            finally:
                end = time.time()
                with self.lock:
                    span = self.spans.setdefault(step.strip("_"), [start, end])
                    span[0], span[1] = min(span[0], start), max(span[1], end)
        return timed

    def run(self, result: Any) -> PassReport:
        self.spans = {}
        started = time.time()
        report = super().run(result)
        path = os.environ.get("SERVE_PROFILE")
        if path:
            with open(path, "a", encoding="utf-8") as out:
                out.write(json.dumps({"revision": report.revision, "run": [started, time.time()],
                                      **self.spans}) + "\n")
        return report


def factory() -> Callable[[frozenset[str] | None], ProfiledReconciler]:
    kubeconfig = os.environ.get("KUBECONFIG")

    def build(clusters: frozenset[str] | None) -> ProfiledReconciler:
        return ProfiledReconciler(kubeconfig, "host", clusters=clusters, watch=True)

    return build
