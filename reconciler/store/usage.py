"""Apps' requests and usage per member cluster over time, and each cluster's allocatable
and idle capacity: written by the sampler (:mod:`reconciler.insight.sampler`), summed by
the database for cost (:func:`app_costs`, :func:`cluster_costs`) and forecasts
(:func:`series`).

A sample stands for the ``seconds`` from its time ``t`` on; a window ``[since, until)``
counts the part of each sample inside it, so a window that starts or ends between two
samples is charged for the seconds it holds, no more.

The samples, costs and points are plain values (:mod:`reconciler.store.records`), which
the cost and forecast documents are built from without importing SQLAlchemy.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlalchemy import Float, Integer, and_, case, cast, func, literal, select
from sqlalchemy.orm import Session

from reconciler.store.records import (
    GIB,
    AppCost,
    ClusterCost,
    ClusterSample,
    Point,
    Prices,
    UsageSample,
)
from reconciler.store.store import Store
from reconciler.store.tables import ClusterSampleRow, UsageSampleRow


def _prices(prices: Prices | None) -> dict[str, float | None]:
    cpu, memory, gpu = prices if prices is not None else (None, None, None)
    return {"price_cpu": cpu, "price_memory": memory, "price_gpu": gpu}


def add_usage(store: Store, apps: Iterable[UsageSample], clusters: Iterable[ClusterSample]
              ) -> int:
    """Record samples; one recorded already (another replica sampled the same time) is
    kept as it was. Returns the rows offered."""
    app_rows = [{"t": s.t, "seconds": s.seconds, "cluster": s.cluster, "kind": s.app[0],
                 "project": s.app[1], "name": s.app[2], "tier": s.tier, "pods": s.pods,
                 "cpu_request": s.requested[0], "memory_request": s.requested[1],
                 "gpu_request": s.requested[2], "cpu_charged": s.charged[0],
                 "memory_charged": s.charged[1],
                 "cpu_usage": s.used[0] if s.used else None,
                 "memory_usage": s.used[1] if s.used else None,
                 **_prices(s.prices), "currency": s.currency} for s in apps]
    cluster_rows = [{"t": s.t, "seconds": s.seconds, "cluster": s.cluster,
                     **dict(zip(("cpu_allocatable", "memory_allocatable", "gpu_allocatable",
                                 "cpu_request", "memory_request", "gpu_request",
                                 "cpu_charged", "memory_charged"),
                                (*s.allocatable, *s.requested, *s.charged), strict=True)),
                     "cpu_usage": s.used[0] if s.used else None,
                     "memory_usage": s.used[1] if s.used else None,
                     **_prices(s.prices), "currency": s.currency} for s in clusters]
    with Session(store.engine) as session, session.begin():
        for table, rows in ((UsageSampleRow, app_rows), (ClusterSampleRow, cluster_rows)):
            if rows:
                session.execute(store.insert(table).on_conflict_do_nothing(), rows)
    return len(app_rows) + len(cluster_rows)


def _sql(store: Store) -> tuple[Any, Any]:
    """The SQL functions GREATEST and LEAST of two values, in the store's dialect."""
    if store.engine.dialect.name == "postgresql":
        return func.greatest, func.least
    return func.max, func.min  # SQLite: max(a, b) and min(a, b) of two values


def _hours(store: Store, table: Any, since: float, until: float) -> Any:
    greatest, least = _sql(store)
    return (least(table.t + table.seconds, until) - greatest(table.t, since)) / 3600.0


def app_costs(store: Store, since: float, until: float, project: str | None = None
              ) -> list[AppCost]:
    """Each app's cost in ``[since, until)`` (epoch seconds): per sample, what its pods
    are charged (the larger of request and usage, pod by pod) times the hourly price,
    times the hours of it inside the window."""
    u = UsageSampleRow
    hours = _hours(store, u, since, until)
    priced = u.price_cpu.is_not(None)
    charged = (u.cpu_charged, u.memory_charged / GIB, u.gpu_request)
    costs = [func.sum(case((priced, hours * c * p), else_=0.0))
             for c, p in zip(charged, (u.price_cpu, u.price_memory, u.price_gpu), strict=True)]
    measured = u.cpu_usage.is_not(None)
    query = (select(u.kind, u.project, u.name, u.tier, func.max(u.currency), *costs,
                    func.sum(hours * u.cpu_request), func.sum(hours * u.memory_request),
                    func.sum(hours * u.gpu_request),
                    func.sum(case((measured, hours * u.cpu_request), else_=0.0)),
                    func.sum(case((measured, hours * u.memory_request), else_=0.0)),
                    func.sum(case((measured, hours * u.cpu_usage), else_=0.0)),
                    func.sum(case((measured, hours * u.memory_usage), else_=0.0)),
                    func.sum(case((priced, 0.0), else_=hours)))
             .where(u.t < until, u.t + u.seconds > since)
             .group_by(u.kind, u.project, u.name, u.tier)
             .order_by(u.project, u.tier, u.kind, u.name))
    if project is not None:
        query = query.where(u.project == project)
    with Session(store.engine) as session:
        rows = session.execute(query).all()
    out = []
    for kind, proj, name, tier, currency, *v in rows:
        by_resource = (float(v[0] or 0), float(v[1] or 0), float(v[2] or 0))
        out.append(AppCost((kind, proj, name), tier, currency or "", sum(by_resource),
                           by_resource, (float(v[3] or 0), float(v[4] or 0), float(v[5] or 0)),
                           (float(v[6] or 0), float(v[7] or 0)),
                           (float(v[8] or 0), float(v[9] or 0)), float(v[10] or 0)))
    return out


def cluster_costs(store: Store, since: float, until: float) -> list[ClusterCost]:
    """Each cluster's capacity and idle cost in ``[since, until)``."""
    c = ClusterSampleRow
    greatest, _ = _sql(store)
    hours = _hours(store, c, since, until)
    priced = c.price_cpu.is_not(None)

    def priced_sum(cpu: Any, memory: Any, gpu: Any) -> Any:
        return func.sum(case((priced, hours * (cpu * c.price_cpu + memory / GIB * c.price_memory
                                               + gpu * c.price_gpu)), else_=0.0))

    idle = (greatest(c.cpu_allocatable - c.cpu_charged, 0.0),
            greatest(c.memory_allocatable - c.memory_charged, 0.0),
            greatest(c.gpu_allocatable - c.gpu_request, 0.0))
    query = (select(c.cluster, func.max(c.currency),
                    priced_sum(c.cpu_allocatable, c.memory_allocatable, c.gpu_allocatable),
                    priced_sum(*idle), func.sum(case((priced, 0.0), else_=hours)))
             .where(c.t < until, c.t + c.seconds > since)
             .group_by(c.cluster).order_by(c.cluster))
    with Session(store.engine) as session:
        return [ClusterCost(cluster, currency or "", float(total or 0), float(idle or 0),
                            float(unpriced or 0))
                for cluster, currency, total, idle, unpriced in session.execute(query)]


def _bucket_start(store: Store, t: Any, bucket: float) -> Any:
    whole = (cast(func.floor(t / bucket), Float) if store.engine.dialect.name == "postgresql"
             else cast(t / bucket, Integer))  # SQLite: a positive value cast is its floor
    return whole * bucket


def series(store: Store, since: float, until: float, bucket: float, project: str | None = None
           ) -> list[Point]:
    """Per ``bucket`` seconds, project and tier: the cores and bytes requested and used,
    the time-weighted mean of the samples in it, summed over the apps and clusters (used:
    None when none was measured). Only buckets that end by ``until``."""
    u = UsageSampleRow
    start = _bucket_start(store, u.t, bucket)
    measured = u.cpu_usage.is_not(None)
    query = (select(start, u.project, u.tier, func.sum(u.seconds * u.cpu_request),
                    func.sum(u.seconds * u.memory_request),
                    func.sum(case((measured, u.seconds * u.cpu_usage), else_=None)),
                    func.sum(case((measured, u.seconds * u.memory_usage), else_=None)))
             .where(and_(u.t >= since, u.t < until))
             .group_by(start, u.project, u.tier).order_by(start))
    if project is not None:
        query = query.where(u.project == project)
    return _points(store, query, bucket, until)


def cluster_series(store: Store, since: float, until: float, bucket: float) -> list[Point]:
    """Per ``bucket`` seconds and cluster: the cores and bytes its pods request, and its
    nodes' allocatable (in place of used), time-weighted means."""
    c = ClusterSampleRow
    start = _bucket_start(store, c.t, bucket)
    query = (select(start, c.cluster, literal(""), func.sum(c.seconds * c.cpu_request),
                    func.sum(c.seconds * c.memory_request),
                    func.sum(c.seconds * c.cpu_allocatable),
                    func.sum(c.seconds * c.memory_allocatable))
             .where(and_(c.t >= since, c.t < until))
             .group_by(start, c.cluster).order_by(start))
    return _points(store, query, bucket, until)


def _points(store: Store, query: Any, bucket: float, until: float) -> list[Point]:
    with Session(store.engine) as session:
        rows = session.execute(query).all()
    return [(float(t), who, tier, float(cpu) / bucket, float(mem) / bucket,
             None if used_cpu is None else float(used_cpu) / bucket,
             None if used_mem is None else float(used_mem) / bucket)
            for t, who, tier, cpu, mem, used_cpu, used_mem in rows if float(t) + bucket <= until]


def projects_in(store: Store, since: float, until: float) -> list[str]:
    """The projects with samples in ``[since, until)``."""
    u = UsageSampleRow
    query = (select(u.project).where(u.t < until, u.t + u.seconds > since).distinct()
             .order_by(u.project))
    with Session(store.engine) as session:
        return list(session.scalars(query))


def clusters_in(store: Store, since: float, until: float, projects: Iterable[str]
                ) -> list[str]:
    """The clusters ``projects`` had pods in during ``[since, until)``."""
    u = UsageSampleRow
    query = (select(u.cluster).where(u.t < until, u.t + u.seconds > since,
                                     u.project.in_(list(projects)))
             .distinct().order_by(u.cluster))
    with Session(store.engine) as session:
        return list(session.scalars(query))


__all__ = ["AppCost", "ClusterCost", "ClusterSample", "UsageSample", "add_usage",
           "app_costs", "cluster_costs", "cluster_series", "clusters_in", "projects_in",
           "series"]
