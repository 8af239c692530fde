"""``serve --runner serve_profile_runner:factory``: the real reconciler (``watch=True``, as
``serve`` builds it) with the wall-clock span of every step of a pass appended to
``$SERVE_PROFILE`` as one JSON line per pass, with the number of server-side dry-runs the
plan sent and (``$SERVE_SAMPLE``: seconds between samples, default 0.01; 0: off) the
functions the pass's threads were in most often, sampled across all threads (cProfile sees
only the calling thread; the pass runs its clusters in threads). ``serve_latency.py`` uses
it to say where push-to-applied time goes; nothing else changes."""

from __future__ import annotations

import contextlib
import json
import os
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

from reconciler.clock import Clock
from reconciler.engine import Flight, Reconciler
from reconciler.plan import cluster_plan as sync

DRY_RUNS = Counter[str]()


def _counted_apply(inner: Callable[..., Any]) -> Callable[..., Any]:
    def apply(conn: Any, obj: Any, *args: Any, dry_run: bool = False, **kwargs: Any) -> Any:
        if dry_run:
            DRY_RUNS[str(obj.get("kind"))] += 1
        return inner(conn, obj, *args, dry_run=dry_run, **kwargs)
    return apply


sync.write.apply = _counted_apply(sync.write.apply)  # type: ignore[method-assign]


WAITING = frozenset({"[ssl.py:read]", "[ssl.py:recv_into]", "[socket.py:readinto]",
                     "[threading.py:wait]", "[selectors.py:select]", "[threading.py:join]"})
"""Innermost frames of a thread that waits (not counted)."""


class Sampler:
    """Counts, every ``period`` seconds, for every thread in reconciler or pincompile code
    that is not waiting, its innermost frame and its three innermost frames of ours."""

    def __init__(self, period: float) -> None:
        self.period, self.counts = period, Counter[str]()
        self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="sampler", daemon=True)

    def __enter__(self) -> Sampler:
        if self.period > 0:
            self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()

    def _run(self) -> None:
        me = threading.get_ident()
        while not self._stop.wait(self.period):
            self.samples += 1
            for ident, frame in sys._current_frames().items():
                if ident != me:
                    try:
                        self._count(frame)
                    except AttributeError:  # a frame torn down while walked (3.11)
                        continue

    def _count(self, frame: Any) -> None:
        inner = f"[{frame.f_code.co_filename.split('/')[-1]}:{frame.f_code.co_name}]"
        if inner in WAITING:
            return  # a thread blocked on I/O or a lock uses no CPU
        stack: list[str] = []
        while frame is not None and len(stack) < 3:
            name = frame.f_code.co_filename
            if "/reconciler/" in name or "/pincompile/" in name:
                stack.append(f"{name.split('/')[-1]}:{frame.f_code.co_name}")
            frame = frame.f_back
        if stack:
            self.counts[" < ".join([inner, *stack])] += 1

    def top(self, n: int = 25) -> list[tuple[str, float]]:
        return [(where, round(count * self.period, 2))
                for where, count in self.counts.most_common(n)]

STEPS = ("_host_sync", "_read", "_plan", "_apply", "check_health", "_publish")


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

    @contextlib.contextmanager
    def pass_of(self, result: Any) -> Iterator[Flight]:
        """The pass and the caller's health wait inside it, profiled."""
        self.spans = {}
        DRY_RUNS.clear()
        started = time.time()
        with (Sampler(float(os.environ.get("SERVE_SAMPLE", "0.01"))) as sampler,
              super().pass_of(result) as flight):
            yield flight
        path = os.environ.get("SERVE_PROFILE")
        if path:
            with open(path, "a", encoding="utf-8") as out:
                out.write(json.dumps({"revision": flight.report.revision,
                                      "run": [started, time.time()],
                                      "dry_runs": dict(DRY_RUNS), "sampled": sampler.top(),
                                      **self.spans}) + "\n")


def factory() -> Callable[[frozenset[str] | None, Clock], ProfiledReconciler]:
    kubeconfig = os.environ.get("KUBECONFIG")

    def build(clusters: frozenset[str] | None, clock: Clock) -> ProfiledReconciler:
        return ProfiledReconciler(kubeconfig, "host", clusters=clusters, watch=True,
                                  failover_clock=clock)

    return build
