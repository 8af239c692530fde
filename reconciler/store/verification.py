"""The canary's probes and the SLIs' per-minute samples in the insight store: written by
``serve`` (each replica its own samples), read by ``pincompile slo``, ``/api/v1/slos``
and the console, dropped after the store's retention like everything else."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from reconciler.store.records import MESSAGE_LIMIT
from reconciler.store.store import READ_LIMIT, Store, aware
from reconciler.store.tables import CanaryProbeRow, SLISampleRow

Labels = tuple[tuple[str, str], ...]
SAMPLES_READ_LIMIT = 200_000
"""Rows one SLO read may return (30 days of minutes for a few label sets)."""


@dataclass(frozen=True)
class ProbeRecord:
    """One canary probe, as kept."""

    cluster: str
    tier: str
    started: datetime
    ok: bool
    stage: str
    message: str = ""
    launch_seconds: float | None = None
    seconds: float = 0.0
    requests: int = 0


@dataclass
class SLISample:
    """One SLI's events of one minute with the same labels, from one replica."""

    sli: str
    labels: Labels
    at: datetime
    total: int
    errors: int
    """Events bad whatever the threshold (5xx answers, launches that never got Ready)."""
    buckets: tuple[int, ...] = ()
    """Events within each of the SLI's histogram buckets (cumulative, as Prometheus
    counts them)."""

    def good(self, threshold: float | None, bounds: Sequence[float]) -> int:
        """Events good under ``threshold`` (None: every event not bad outright)."""
        if threshold is None:
            return self.total - self.errors
        if not self.buckets:
            return 0
        return self.buckets[list(bounds).index(threshold)]

    def label(self, name: str) -> str | None:
        return dict(self.labels).get(name)


def add_probe(store: Store, record: ProbeRecord) -> None:
    row = {**record.__dict__, "message": record.message[:MESSAGE_LIMIT]}
    with Session(store.engine) as session, session.begin():
        session.execute(store.insert(CanaryProbeRow).values(**row))


def probes(store: Store, *, since: datetime, cluster: str | None = None,
           limit: int = READ_LIMIT) -> list[ProbeRecord]:
    """Probes started at or after ``since`` (of one cluster, or all), oldest first; the
    newest ``limit`` of them."""
    query = select(CanaryProbeRow).where(CanaryProbeRow.started >= since)
    if cluster is not None:
        query = query.where(CanaryProbeRow.cluster == cluster)
    query = query.order_by(CanaryProbeRow.started.desc(), CanaryProbeRow.id.desc()) \
        .limit(max(1, min(limit, READ_LIMIT)))
    with Session(store.engine) as session:
        rows = [ProbeRecord(r.cluster, r.tier, aware(r.started), r.ok, r.stage, r.message,
                            r.launch_seconds, r.seconds, r.requests)
                for r in session.scalars(query)]
    return rows[::-1]


def add_samples(store: Store, samples: Iterable[SLISample], source: str) -> int:
    """Record one replica's samples; a (sli, labels, minute) it recorded already is
    replaced (a minute is handed over once it ended, or when serve stops)."""
    rows = [{"sli": s.sli, "labels": _labels_text(s.labels), "source": source[:253],
             "at": s.at, "total": s.total, "errors": s.errors,
             "buckets": ",".join(map(str, s.buckets))} for s in samples]
    if not rows:
        return 0
    insert = store.insert(SLISampleRow)
    statement = insert.on_conflict_do_update(
        index_elements=["sli", "labels", "source", "at"],
        set_={"total": insert.excluded.total, "errors": insert.excluded.errors,
              "buckets": insert.excluded.buckets})
    with Session(store.engine) as session, session.begin():
        session.execute(statement, rows)
    return len(rows)


def samples(store: Store, sli: str, *, since: datetime) -> list[SLISample]:
    """The SLI's samples of every replica from ``since`` on, oldest first."""
    query = (select(SLISampleRow).where(SLISampleRow.sli == sli, SLISampleRow.at >= since)
             .order_by(SLISampleRow.at).limit(SAMPLES_READ_LIMIT))
    with Session(store.engine) as session:
        return [SLISample(r.sli, _labels(r.labels), aware(r.at), r.total, r.errors,
                          tuple(int(n) for n in r.buckets.split(",") if n))
                for r in session.scalars(query)]


def _labels_text(labels: Labels) -> str:
    return ",".join(f"{k}={v}" for k, v in labels)[:512]


def _labels(text: str) -> Labels:
    return tuple((k, v) for k, _, v in (p.partition("=") for p in text.split(",") if p))
