"""A PassRunner that applies nothing and records every pass, for serve's tests.

In-process tests use :class:`FakeRunner` directly; subprocess tests pass
``--runner fake_runner:factory`` (with this folder on PYTHONPATH) and read the JSON lines
the runner appends to ``$SERVE_FAKE_RECORD``; ``$SERVE_FAKE_DELAY`` makes each pass slow.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from reconciler.clock import Clock
from reconciler.engine import Flight
from reconciler.model import ClusterReport, ObjectRef, PassReport
from reconciler.step_timings import Steps


class AtOnce:
    """A runner whose pass is done when it begins (:meth:`report`): nothing to wait for."""

    def report(self, result: Any) -> PassReport:
        raise NotImplementedError

    @contextlib.contextmanager
    def pass_of(self, result: Any) -> Iterator[Flight]:
        report = self.report(result)
        yield Flight(report, Steps(report.steps), 0.0, 0.0)

    def settle(self, flight: Flight, timeout: float, clock: Clock) -> None:
        """Nothing is waited for."""

    def close(self) -> None:
        pass


@dataclass
class FakeRunner(AtOnce):
    """Counts calls, records revisions and scope; reports every manifest of a new revision
    as updated (created the first time) and of a repeated one as unchanged."""

    scope: frozenset[str] | None = None
    delay: float = 0.0
    record: str | None = None
    calls: list[tuple[str, frozenset[str] | None]] = field(default_factory=list)
    closed: bool = False
    _applied: str | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def report(self, result: Any) -> PassReport:
        revision = result.manifests[0].obj["metadata"]["annotations"][
            "pincompute.io/revision"] if result.manifests else "none"
        started = time.time()
        if self.record:
            self._write({"event": "start", "revision": revision, "at": started})
        time.sleep(self.delay)
        clusters = sorted(result.catalog.clusters)
        if self.scope is not None:
            clusters = [c for c in clusters if c in self.scope]
        report = PassReport(revision=revision)
        per_cluster = Counter(m.cluster for m in result.manifests)
        for name in clusters:
            c = ClusterReport(name)
            refs = [ObjectRef(name, m.api_version, m.kind, m.namespace, m.name)
                    for m in result.manifests if m.cluster == name]
            if self._applied is None:
                c.created = refs
            elif self._applied != revision:
                c.updated = refs
            else:
                c.unchanged = per_cluster[name]
            report.clusters[name] = c
        with self._lock:
            self._applied = revision
            self.calls.append((revision, self.scope))
        if self.record:
            self._write({"event": "applied", "revision": revision, "at": time.time(),
                         "started": started, "clusters": clusters,
                         "identity": os.environ.get("SERVE_FAKE_IDENTITY", "")})
        return report

    def _write(self, data: dict[str, Any]) -> None:
        assert self.record is not None
        with open(self.record, "a", encoding="utf-8") as out:
            out.write(json.dumps(data) + "\n")

    def close(self) -> None:
        self.closed = True


class Recorder:
    """A runner factory remembering every runner it built."""

    def __init__(self, delay: float = 0.0, record: str | None = None) -> None:
        self.delay = delay
        self.record = record
        self.runners: list[FakeRunner] = []

    def __call__(self, scope: frozenset[str] | None, _clock: Clock | None = None) -> FakeRunner:
        runner = FakeRunner(scope=scope, delay=self.delay, record=self.record)
        self.runners.append(runner)
        return runner

    @property
    def applied(self) -> list[str]:
        return [rev for r in self.runners for rev, _ in r.calls]


def factory() -> Recorder:
    """For ``--runner fake_runner:factory``."""
    return Recorder(float(os.environ.get("SERVE_FAKE_DELAY", "0")),
                    os.environ.get("SERVE_FAKE_RECORD"))
