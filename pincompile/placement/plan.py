"""Placement orchestration: for every workload, filters → scores → division; then quota.

Placement is a function of one workload, its project, its PinScaler and the fleet: no
workload's placement depends on another's, nor on file order. Capacity is therefore
checked per workload against each cluster's whole capacity (not what others leave free);
the sum of everything placed in a cluster is then checked on its own
(``cluster-over-capacity``), which reports an overfull cluster without letting one app
push another around.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import replace
from decimal import Decimal
from typing import TypeVar

from pincompile.catalog import Catalog, Entry
from pincompile.diagnostics import Diagnostic, Location
from pincompile.models import (
    TIERS,
    Cluster,
    PinApp,
    PinScaler,
    PinterestCronJob,
    PinterestDaemon,
    PinterestJobSet,
    PinterestService,
    PinterestSideCar,
    Project,
    Resource,
    Workload,
)
from pincompile.models.types import format_quantity
from pincompile.placement import quota as quota_mod
from pincompile.placement.context import (
    SERVICE_KINDS,
    Context,
    cluster_capacity,
    jobset_parallel,
    pods_fit,
    pods_together,
    pool_capacity,
    rollout_surge,
    whole,
    workload_requests,
)
from pincompile.placement.divide import Slot, divide, offsets, webster
from pincompile.placement.filters import run_filters
from pincompile.placement.model import Decision, Key, Plan, Shard
from pincompile.placement.pools import COUNTED, pool_uses
from pincompile.placement.scores import by_total, static_scores, zone_order, zone_round_robin
from pincompile.placement.sums import Placed, Sums

R = TypeVar("R", bound=Resource)

#: Hints for a workload that no cluster accepts, by the filter that removed most clusters.
_NO_CLUSTER_HINTS = {
    "schedulable": "every cluster that would match is cordoned; wait for it or widen "
                   "spec.placement",
    "project-placement": "the project's spec.placement limits where its workloads may run",
    "region": "widen spec.placement.regions",
    "zone": "widen spec.placement.zones",
    "cluster": "name clusters that exist and accept the workload in spec.placement.clusters",
    "cluster-labels": "relax spec.placement.clusterLabels",
    "tier": "choose a tier that a matching cluster offers (spec.tier)",
    "arch": "choose an arch that a matching cluster has, or drop the pod's arch",
    "gpu-type": "choose a gpuType that a matching cluster offers",
    "addons": "training jobs need a cluster with the kubeflow-training addon; network: "
              "dedicated-eni needs one with the pod-eni addon",
    "failover": "every cluster that would match is lost (unreachable or cordoned); the "
                "workload runs again when one comes back",
    "capacity": "lower the pod's requests or the pods that must run together, or use a "
                "cluster with more capacity",
}


def plan(catalog: Catalog, base: Sums | None = None,
         reuse_scalers: Mapping[Key, Key] | None = None, *,
         lost: Mapping[str, str] | None = None, only: Collection[Key] | None = None
         ) -> tuple[Plan, list[Diagnostic]]:
    """Place every valid workload; report what cannot be placed or exceeds a quota.

    ``base``: the sums of workloads placed before and not in ``catalog`` (with
    ``reuse_scalers``, the scaler targets resolved for them), as an incremental compile
    keeps them; quota, capacity and sidecar daemons then count both. Diagnostics of those
    steps name only workloads in ``catalog`` (an incremental compile never shows them: it
    compiles everything instead). ``Plan.placed`` holds the new workloads' :class:`Placed`.

    ``lost``: member clusters the caller has found unavailable (cluster → why); nothing is
    placed there, as if they were cordoned (the reconciler's failover passes them in).

    ``only``: place just these workloads (the others count for nothing in the plan's sums
    and checks), as the zone-loss simulation re-places only what a loss moves.
    """
    return _Planner(catalog, lost, only).run(base or Sums(), reuse_scalers or {})


class _Planner:
    def __init__(self, catalog: Catalog, lost: Mapping[str, str] | None = None,
                 only: Collection[Key] | None = None) -> None:
        self.catalog = catalog
        self.lost = dict(lost or {})
        self.only = None if only is None else set(only)
        self.clusters: Mapping[str, Entry[Cluster]] = catalog.clusters
        self.projects: Mapping[str, Entry[Project]] = catalog.projects
        self.capacities = {n: cluster_capacity(e.resource) for n, e in self.clusters.items()}
        self.pools = {tier: {n: pool_capacity(e.resource, tier)
                             for n, e in self.clusters.items()} for tier in TIERS}
        self.diagnostics: list[Diagnostic] = []
        self.result = Plan()
        self.scalers: dict[Key, Entry[PinScaler]] = {}

    # --- the whole fleet -------------------------------------------------------------------
    def run(self, base: Sums, reuse_scalers: Mapping[Key, Key]
            ) -> tuple[Plan, list[Diagnostic]]:
        workloads = self.catalog.workloads_by_key
        keys = set(workloads)
        for scaler_entry in self.catalog.scalers_by_key.values():
            scaler = scaler_entry.resource
            for kind in SERVICE_KINDS:
                target = (kind, scaler.project, scaler.spec.target)
                if target in keys:
                    if target not in self.scalers:  # a second scaler: checks report it
                        self.scalers[target] = scaler_entry
                        self.result.scaler_targets[scaler.key] = target
                    break
        by_key: dict[Key, Placed] = {}
        for key, entry in workloads.items():
            if self.only is not None and key not in self.only:
                continue
            project = self.projects.get(entry.resource.project)
            if project is None:
                continue  # unknown project: the reference checks report it
            by_key[key] = self._place(entry, project)
        self.result.scaler_targets.update(reuse_scalers)
        self.result.scaler_targets = dict(sorted(self.result.scaler_targets.items()))
        placed = [by_key[k] for k in sorted(by_key)]
        self.result.decisions = {p.decision.key: p.decision for p in placed}
        self.result.placed = {p.decision.key: p for p in placed}
        sums = Sums()
        sums.merge(base)
        for p in placed:
            sums.add(p)
        self._quotas(placed, sums)
        self._capacity(placed, sums)
        self._sidecar_daemons(sums)
        return self.result, sorted(set(self.diagnostics))

    def _names_unknown(self, entry: Entry[Workload], project: Entry[Project]) -> bool:
        """Whether a placement (the workload's or its project's) or the pod's gpuType names
        a cluster, region, zone or GPU type no cluster has: the reference checks report
        that, precisely, so it does not get a second, vaguer error here."""
        fleet = [c.resource.spec for c in self.clusters.values()]
        known = {"clusters": set(self.clusters), "regions": {c.region for c in fleet},
                 "zones": {c.zone for c in fleet}}
        for placement in (entry.resource.spec.placement, project.resource.spec.placement):
            for what, names in known.items():
                listed = getattr(placement, what)
                if isinstance(listed, list) and any(n not in names for n in listed):
                    return True
        gpu = entry.resource.pod_template.gpu_type
        return gpu is not None and all(gpu not in c.gpu_types for c in fleet)

    # --- one workload ----------------------------------------------------------------------
    def _place(self, entry: Entry[Workload], project: Entry[Project]) -> Placed:
        w = entry.resource
        requests = workload_requests(entry, self.catalog)
        pools = self.pools[w.spec.tier]
        ctx = Context(self.catalog, project, requests, pods_together(w), pools)
        eligible, filtered = run_filters(entry, self.clusters, ctx)
        for name in [c for c in eligible if c in self.lost]:
            eligible.remove(name)
            filtered[name] = f"failover: {self.lost[name]}"
        fits = {c: pods_fit(pools[c], requests) for c in eligible}
        scores = static_scores("/".join(w.key), fits)
        decision = Decision(
            kind=w.kind, project=w.project, name=w.name, eligible=eligible, filtered=filtered,
            scores=scores, shards=[], order=by_total(scores), tier=w.spec.tier,
            pod_requests=dict(sorted(requests.items())))
        placed = Placed(entry, decision, {}, quota_mod.pod_vector(w, requests),
                         sidecars=tuple(w.pod_template.sidecars))
        if not eligible:
            if not self._names_unknown(entry, project):
                self.diagnostics.append(self._no_cluster(entry, filtered))
            return placed
        slots = {c: self._slot(c, fits[c]) for c in eligible}
        if isinstance(w, PinApp | PinterestService):
            self._service(entry, placed, slots)
        elif isinstance(w, PinterestJobSet):
            self._jobset(entry, placed, slots)
        elif isinstance(w, PinterestDaemon):
            decision.shards = [self._shard(c, 0) for c in eligible]
            placed.pods = {c: 1 for c in eligible}
        else:  # PinPod, PinterestCronJob, PinterestTrainingJob: exactly one cluster
            best = decision.order[0]
            decision.shards = [self._shard(best, 1)]
            placed.pods = {best: pods_together(w)}
            if isinstance(w, PinterestCronJob) and w.spec.concurrency_policy != "Forbid":
                placed.surge = {best: 1}  # the next run starts before the last is gone
        return placed

    def _slot(self, cluster: str, fit: Decimal | None) -> Slot:
        zone = self.clusters[cluster].resource.spec.zone
        if fit is None:
            return Slot(cluster, zone, 1, None)
        return Slot(cluster, zone, fit if fit > 0 else Decimal(0), whole(fit))

    def _shard(self, cluster: str, replicas: int, **extra: int | None) -> Shard:
        spec = self.clusters[cluster].resource.spec
        return Shard(cluster=cluster, region=spec.region, zone=spec.zone, replicas=replicas,
                     **extra)  # type: ignore[arg-type]

    def _service(self, entry: Entry[Workload], placed: Placed, slots: dict[str, Slot]
                 ) -> None:
        w = entry.resource
        assert isinstance(w, PinApp | PinterestService)
        decision = placed.decision
        spread = w.spec.placement.spread
        if spread in ("zone", "cluster"):
            zones = {c: s.zone for c, s in slots.items()}
            decision.order = zone_round_robin(decision.scores, zones)
        ordered = [slots[c] for c in decision.order]
        limit = w.spec.placement.max_clusters or len(ordered)
        wkey = "/".join(w.key)
        replicas = w.spec.replicas
        scaler = self.scalers.get(w.key)
        if scaler is not None:
            low, high = scaler.resource.spec.min_replicas, scaler.resource.spec.max_replicas
            chosen = ordered[:min(limit, high)]
            order_z = zone_order(wkey, [s.zone for s in chosen])
            floor = 0 if spread == "none" else 1
            maxima = divide(high, chosen, spread, order_z, floor)
            used = [replace(s, cap=maxima[s.name]) for s in chosen if maxima[s.name] > 0]
            minima = divide(low, used, spread, order_z, 1)
            start = divide(replicas, used, spread, order_z, 1)
            counts = {s.name: min(max(start[s.name], minima[s.name]), maxima[s.name])
                      for s in used}
            decision.shards = [
                self._shard(s.name, counts[s.name], min_replicas=minima[s.name],
                            max_replicas=maxima[s.name])
                for s in sorted(used, key=lambda s: s.name)]
            placed.pods = {s.name: maxima[s.name] for s in used}
            placed.surge = {s.name: rollout_surge(w.spec.rollout.max_surge, maxima[s.name])
                            for s in used}
            if sum(maxima.values()) < high:
                self.diagnostics.append(self._short(
                    entry, scaler.at("spec", "maxReplicas"), high, chosen, limit, ordered,
                    "maxReplicas"))
        else:
            wanted = max(replicas, 1)
            if spread != "none":
                limit = min(limit, wanted)
            chosen = ordered[:limit]
            order_z = zone_order(wkey, [s.zone for s in chosen])
            counts = divide(replicas, chosen, spread, order_z, 0)
            used = [s for s in chosen if counts[s.name] > 0]
            if not used:  # replicas: 0 — keep the app's objects in its first cluster
                used = chosen[:1]
            decision.shards = [self._shard(s.name, counts[s.name])
                               for s in sorted(used, key=lambda s: s.name)]
            placed.pods = {s.name: counts[s.name] for s in used}
            placed.surge = {s.name: rollout_surge(w.spec.rollout.max_surge, counts[s.name])
                            for s in used}
            if sum(counts.values()) < replicas:
                self.diagnostics.append(self._short(
                    entry, entry.at("spec", "replicas"), replicas, chosen, limit, ordered,
                    "replicas"))
        if len(ordered) > len(decision.shards) and w.spec.placement.max_clusters:
            decision.notes.append(
                f"maxClusters {w.spec.placement.max_clusters}: {len(decision.shards)} of "
                f"{len(ordered)} eligible clusters used")
        if spread == "zone":  # with a scaler, the HPA maxima are what is spread
            by_zone: dict[str, int] = {}
            for s in decision.shards:
                n = s.replicas if s.max_replicas is None else s.max_replicas
                by_zone[s.zone] = by_zone.get(s.zone, 0) + n
            if by_zone and max(by_zone.values()) - min(by_zone.values()) > 1:
                what = "replica" if scaler is None else "maxReplicas"
                decision.notes.append(
                    f"zones differ by more than one {what} because a zone is full: "
                    + ", ".join(f"{z}={n}" for z, n in sorted(by_zone.items())))

    def _jobset(self, entry: Entry[Workload], placed: Placed, slots: dict[str, Slot]
                ) -> None:
        w = entry.resource
        assert isinstance(w, PinterestJobSet)
        decision = placed.decision
        completions = w.spec.completions
        parallel = jobset_parallel(w)
        if not w.spec.placement.divide:
            best = decision.order[0]
            decision.shards = [self._shard(best, completions, parallelism=parallel)]
            placed.pods = {best: parallel}
            return
        chosen = [slots[c] for c in decision.order][:min(completions, parallel)]
        comps = webster(completions, [s.weight for s in chosen], None, [1] * len(chosen))
        caps = [c if s.cap is None else min(c, s.cap) for s, c in zip(chosen, comps, strict=True)]
        pars = webster(parallel, comps, caps, [1] * len(chosen))
        by_name = sorted(zip(chosen, comps, pars, strict=True), key=lambda t: t[0].name)
        starts = offsets([(s.name, c) for s, c, _ in by_name])
        decision.shards = [self._shard(s.name, c, index_offset=starts[s.name], parallelism=p)
                           for s, c, p in by_name]
        placed.pods = {s.name: p for s, _, p in by_name}
        if sum(pars) < parallel:
            self.diagnostics.append(self._short(
                entry, entry.at("spec", "parallelism"), parallel, chosen, len(chosen),
                chosen, "parallelism"))

    # --- errors ----------------------------------------------------------------------------
    def _no_cluster(self, entry: Entry[Workload], filtered: Mapping[str, str]) -> Diagnostic:
        w = entry.resource
        spec = entry.doc.data.get("spec") if isinstance(entry.doc.data, dict) else None
        where = (entry.at("spec", "placement") if isinstance(spec, dict) and "placement" in spec
                 else entry.at("metadata", "name"))
        what = f"{w.kind} '{w.name}' (project {w.project})"
        if not filtered:
            return where.error("no-eligible-cluster",
                               f"no eligible cluster for {what}: the fleet has no clusters",
                               "add Cluster specs (platform/clusters/*.yaml)")
        listing = "; ".join(f"{c}: {reason}" for c, reason in sorted(filtered.items()))
        counts: dict[str, int] = {}
        for reason in filtered.values():
            name = reason.split(":", 1)[0]
            counts[name] = counts.get(name, 0) + 1
        top = sorted(counts, key=lambda n: (-counts[n], n))[0]
        return where.error("no-eligible-cluster",
                           f"no eligible cluster for {what}; {listing}",
                           _NO_CLUSTER_HINTS.get(top))

    def _short(self, entry: Entry[Workload], where: Location, need: int, chosen: list[Slot],
               limit: int, ordered: list[Slot], field_name: str) -> Diagnostic:
        w = entry.resource
        held = ", ".join(f"{s.name} {s.cap if s.cap is not None else 'unlimited'}"
                         for s in chosen)
        total = sum(s.cap or 0 for s in chosen)
        hint = ("raise placement.maxClusters or widen placement"
                if limit < len(ordered) else
                "lower the pod's requests or the count, or widen placement")
        return where.error(
            "insufficient-capacity",
            f"{w.kind} '{w.name}' needs {field_name} {need}, but the capacity of its "
            f"clusters holds only {total} of its pods ({held})", hint)

    # --- after every workload --------------------------------------------------------------
    def _quotas(self, placed: list[Placed], sums: Sums) -> None:
        usage: dict[tuple[str, str], quota_mod.Usage] = {}
        for p in placed:  # per workload: for messages (top consumers, surge pods)
            u = usage.setdefault((p.decision.project, p.decision.tier), quota_mod.Usage())
            for cluster, pods in sorted(p.pods.items()):
                u.add(p.entry, cluster, p.vector, pods, p.surge.get(cluster, 0))
        for key, per_cluster in sums.usage.items():  # the sums themselves
            u = usage.setdefault(key, quota_mod.Usage())
            u.per_cluster = per_cluster
            u.surge = sums.surge.get(key, {})
        where = sums.where
        for project in sorted(where):
            entry = self.projects[project]
            for tier in TIERS:
                u = usage.get((project, tier), quota_mod.Usage())
                self.diagnostics.extend(quota_mod.check(entry, tier, u))
                for cluster, hard in quota_mod.size(entry.resource, tier, u,
                                                    where[project]).items():
                    self.result.quotas[(project, tier, cluster)] = hard

    def _capacity(self, placed: list[Placed], sums: Sums) -> None:
        """Sum what reserved and ondemand workloads place in each cluster (surge included)
        and check it against the cluster's pools. Preemptible workloads are summed for
        ``clusterRequests`` but never checked: they use what is spare and are preempted."""
        totals, by_tier = sums.totals, sums.by_tier
        consumers: dict[str, list[tuple[Placed, int]]] = {}
        for p in placed:
            for cluster, pods in p.pods.items():
                if p.decision.tier != "preemptible":
                    consumers.setdefault(cluster, []).append(
                        (p, pods + p.surge.get(cluster, 0)))
        self.result.cluster_requests = {c: dict(sorted(v.items()))
                                        for c, v in sorted(totals.items())}
        for cluster in sorted(totals):
            tiers = {t: by_tier.get((cluster, t), {}) for t in COUNTED}
            for use in pool_uses(self.clusters[cluster].resource, tiers):
                self._over(cluster, use.resource, use.need, use.have, use.field, use.pool,
                           consumers, set(use.tiers))

    def _over(self, cluster: str, res: str, need: Decimal, have: Decimal,
              at: tuple[str, ...], pool: str, consumers: dict[str, list[tuple[Placed, int]]],
              tiers: set[str]) -> None:
        if need <= have:
            return
        ranked = sorted((t for t in consumers.get(cluster, []) if t[0].decision.tier in tiers),
                        key=lambda t: (-t[0].vector.get(res, Decimal(0)) * t[1],
                                       t[0].decision.key))
        top = []
        for p, pods in ranked[:quota_mod.TOP_CONSUMERS]:
            loc = p.entry.at("metadata", "name")
            amount = p.vector.get(res, Decimal(0)) * pods
            top.append(f"{p.decision.kind} {p.decision.project}/{p.decision.name} "
                       f"{format_quantity(amount, res)} ({loc.file}:{loc.line})")
        self.diagnostics.append(self.clusters[cluster].at(*at).error(
            "cluster-over-capacity",
            f"cluster '{cluster}' is over its {pool} for {res} by "
            f"{format_quantity(need - have, res)}: {' and '.join(sorted(tiers))} workloads "
            f"placed here request {format_quantity(need, res)} (HPA maximum for scaled apps, "
            f"rollout surge included), the {pool} is {format_quantity(have, res)}; largest "
            f"{res} consumers: {', '.join(top)}",
            "add capacity, or narrow the placement of the largest workloads to other "
            "clusters"))

    def _sidecar_daemons(self, sums: Sums) -> None:
        schedulable = sorted(n for n, e in self.clusters.items()
                             if e.resource.spec.schedulable and n not in self.lost)
        for name, entry in self.catalog.sidecars.items():
            sc: PinterestSideCar = entry.resource
            if sc.spec.mode != "daemon":
                continue
            if sc.spec.inject == "always":
                self.result.sidecar_daemons[name] = schedulable
                continue
            wanted: set[str] = set()
            for kind in sc.spec.applies_to:
                wanted.update(sums.sidecars.get((kind, name), ()))
            self.result.sidecar_daemons[name] = sorted(wanted)
