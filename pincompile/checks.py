"""Semantic checks across specs: references, duplicates, tenancy policy and pod consistency.

Every rule is a small function ``rule(specs) -> Iterable[Diagnostic]`` listed in ``RULES``.
Each diagnostic points at the offending field (``entry.at(...)``) and, for a reference that
does not resolve, suggests the closest existing name. Rules see only specs that passed the
schema, so they may rely on types; they report everything and stop at nothing.

Placement and quota problems (no eligible cluster, over quota) belong to
:mod:`pincompile.placement`, not here.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, cast

from pincompile.catalog import Catalog, Entry
from pincompile.diagnostics import Diagnostic, Location
from pincompile.injection import defaults_of, managed_sidecars, missing_requests
from pincompile.models import (
    Cluster,
    PinApp,
    PinPod,
    PinScaler,
    PinterestDaemon,
    PinterestJobSet,
    PinterestService,
    PinterestSideCar,
    PinterestTrainingJob,
    PodTemplate,
    Project,
    Resource,
    RuntimeProfile,
    Workload,
)
from pincompile.models.platform import POD_ENI_ADDON
from pincompile.models.types import parse_quantity
from pincompile.models.workloads import AppSpec
from pincompile.parse import dotted
from pincompile.repoconfig import DEFAULT as DEFAULT_CONFIG
from pincompile.repoconfig import RepoConfig

Path = tuple[str | int, ...]

#: Kinds a PinScaler may target.
SCALABLE_KINDS = (PinApp.KIND, PinterestService.KIND)
#: Where the ``config`` files of a pod are mounted (docs/spec.md: pod template ``config``).
CONFIG_MOUNT_PATH = "/etc/pincompute/config"
#: Namespaces no project may take.
RESERVED_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
#: Label keys the platform sets on every generated object (ownership, prune safety).
RESERVED_LABEL_PREFIXES = ("pincompute.io/", "app.kubernetes.io/managed-by")
#: Environment variables the platform sets (identity, shard index).
RESERVED_ENV_PREFIX = "PINCOMPUTE_"
#: Replica roles of which a training job may have at most one.
SINGLE_ROLES = {"pytorch": ("master",), "tensorflow": ("chief", "evaluator")}
_CONFIG_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")


def check(catalog: Catalog, config: RepoConfig = DEFAULT_CONFIG) -> list[Diagnostic]:
    """Every cross-document rule; returns all problems found, sorted by file and line.
    ``config``: the tree's ``pincompile.yaml`` (its folders bind owners)."""
    specs = Specs(catalog, config)
    found: set[Diagnostic] = set()
    for rule in RULES:
        found.update(rule(specs))
    return sorted(found)


class Specs:
    """The catalog's indexes, computed once per check (``Catalog`` computes them on every
    access, and rules look them up once per workload: 10,000 apps must stay linear)."""

    def __init__(self, catalog: Catalog, config: RepoConfig = DEFAULT_CONFIG):
        self.catalog = catalog
        self.config = config
        self.entries = catalog.entries
        self.projects = catalog.projects
        self.clusters = catalog.clusters
        self.sidecars = catalog.sidecars
        self.runtime = catalog.runtime
        self.workloads = catalog.workloads
        self.scalers = catalog.scalers
        self.invalid: dict[tuple[str, str, str], str] = {}
        """(kind, project, name) of a spec that failed validation → its ``file:line``."""
        for doc in catalog.invalid:
            meta = doc.data["metadata"]
            project = meta.get("project")
            key = (doc.data["kind"], project if isinstance(project, str) else "", meta["name"])
            loc = doc.locate(("metadata", "name"))
            self.invalid.setdefault(key, f"{loc.file}:{loc.line}")

    def failed(self, kinds: Iterable[str], name: str, project: str = "") -> str | None:
        """"<kind> '<name>' is invalid, see <file:line>" when a spec of one of ``kinds``
        named ``name`` failed validation (a reference to it is no new mistake)."""
        for kind in kinds:
            at = self.invalid.get((kind, project, name))
            if at is not None:
                return f"{kind} '{name}' is invalid, see {at}"
        return None

    def of_kind(self, kind: str) -> list[Entry[Any]]:
        return [e for e in self.entries if e.resource.kind == kind]

    def injected(self, pod: Pod) -> list[Entry[Any]]:
        """Managed sidecars injected into ``pod`` (the rule lives in pincompile.injection)."""
        return managed_sidecars(pod.kind, pod.template, cast(Catalog, self))


Rule = Callable[[Specs], Iterable[Diagnostic]]


# --- helpers --------------------------------------------------------------------------------

def did_you_mean(name: str, candidates: Iterable[str], what: str) -> str:
    """A hint for an unknown reference: the closest name, else the names that exist."""
    names = sorted(set(candidates))
    close = difflib.get_close_matches(name, names, 1, 0.6)
    if close:
        return f"did you mean '{close[0]}'?"
    if not names:
        return f"no {what} are defined"
    shown = ", ".join(names[:10]) + (", ..." if len(names) > 10 else "")
    return f"{what}: {shown}"


_FIX_FIRST = "fix the errors reported there; this reference then resolves"


def where(entry: Entry[Any]) -> str:
    """``file:line`` of a spec (its ``metadata.name``), for messages naming another place."""
    loc = entry.at("metadata", "name")
    return f"{loc.file}:{loc.line}"


def _used_by(user: tuple[str, Entry[Any] | None]) -> str:
    """Who already uses a name: (who, the spec to point at or None), as a message says it
    (the spec's ``file:line`` is found only here, when the name clashes)."""
    who, spec = user
    return f"{who} at {where(spec)}" if spec is not None else who


class _Later:
    """A location found only when a problem is reported there (finding one may load its
    file again with positions: see :class:`~pincompile.source.positioned.Positions`)."""

    def __init__(self, entry: Entry[Any], path: tuple[str | int, ...], *, key: bool = False
                 ) -> None:
        self.entry, self.path, self.key = entry, path, key

    def error(self, code: str, message: str, hint: str | None = None) -> Diagnostic:
        return self.entry.at(*self.path, key=self.key).error(code, message, hint)


def _in_project(resource: Resource) -> str:
    project = getattr(resource.metadata, "project", "")
    return f" in project '{project}'" if project else ""


@dataclass
class Pod:
    """One workload's pod template and where it sits in the document."""

    entry: Entry[Workload]
    template: PodTemplate
    path: Path
    """Path of the template's fields: ``("spec",)`` for PinPod, else ``("spec", "template")``."""

    @property
    def kind(self) -> str:
        return self.entry.resource.kind

    def at(self, *path: str | int, key: bool = False) -> Location:
        return self.entry.at(*self.path, *path, key=key)


def pods(specs: Specs) -> Iterator[Pod]:
    for entry in specs.workloads:
        w = entry.resource
        path: Path = ("spec",) if isinstance(w, PinPod) else ("spec", "template")
        yield Pod(entry, w.pod_template, path)


def _project_of(specs: Specs, entry: Entry[Any]) -> Project | None:
    project = specs.projects.get(getattr(entry.resource.metadata, "project", ""))
    return project.resource if project is not None else None


def _by_position(entries: Iterable[Entry[Any]]) -> list[Entry[Any]]:
    return sorted(entries, key=lambda e: (e.file, e.doc.line, e.doc.column))


# --- identity -------------------------------------------------------------------------------

def duplicate_names(specs: Specs) -> Iterator[Diagnostic]:
    """(kind, project, name) is unique; PinApp and PinterestService share names (both become
    a Deployment and a Service). A RuntimeProfile is checked by ``one_runtime_profile``."""
    first: dict[tuple[str, str, str], Entry[Any]] = {}
    for entry in _by_position(specs.entries):
        res = entry.resource
        if isinstance(res, RuntimeProfile):
            continue
        kind, project, name = res.key
        group = "app" if kind in SCALABLE_KINDS else kind
        other = first.setdefault((group, project, name), entry)
        if other is entry:
            continue
        if other.resource.kind == kind:
            message = f"{kind} '{name}'{_in_project(res)} is already defined at {where(other)}"
        else:
            message = (f"{kind} '{name}'{_in_project(res)} has the same name as "
                       f"{other.resource.kind} '{name}' at {where(other)}; both would "
                       "generate the same Deployment and Service")
        yield entry.at("metadata", "name").error(
            "duplicate-name", message, "rename one of them or delete the copy")


def one_runtime_profile(specs: Specs) -> Iterator[Diagnostic]:
    """At most one RuntimeProfile. None at all is allowed: pods then get nothing injected."""
    profiles = _by_position(specs.of_kind(RuntimeProfile.KIND))
    for extra in profiles[1:]:
        yield extra.at("metadata", "name").error(
            "duplicate-runtime-profile",
            f"more than one RuntimeProfile: '{extra.resource.name}' here and "
            f"'{profiles[0].resource.name}' at {where(profiles[0])}; a platform has exactly one",
            "merge them into one RuntimeProfile")


def project_namespaces(specs: Specs) -> Iterator[Diagnostic]:
    """Each project has its own namespace, and none of Kubernetes' own."""
    first: dict[str, Entry[Any]] = {}
    for entry in _by_position(specs.of_kind(Project.KIND)):
        project: Project = entry.resource  # type: ignore[assignment]
        ns = project.namespace
        loc = _Later(entry, ("spec", "namespace") if project.spec.namespace else (
            "metadata", "name"))
        if ns in RESERVED_NAMESPACES or ns.startswith("kube-"):
            yield loc.error("reserved-namespace",
                            f"namespace '{ns}' is reserved for Kubernetes; a project needs its "
                            "own namespace", "set spec.namespace to the project's own name")
            continue
        other = first.setdefault(ns, entry)
        if other is not entry and other.resource.name != project.name:
            yield loc.error("duplicate-namespace",
                            f"namespace '{ns}' is already used by project "
                            f"'{other.resource.name}' at {where(other)}",
                            "every project needs a namespace of its own")


def cluster_contexts(specs: Specs) -> Iterator[Diagnostic]:
    """Two clusters may not share a kubeconfig context (one would be reconciled twice)."""
    first: dict[str, Entry[Any]] = {}
    for entry in _by_position(specs.of_kind(Cluster.KIND)):
        cluster: Cluster = entry.resource  # type: ignore[assignment]
        other = first.setdefault(cluster.context, entry)
        if other is entry or other.resource.name == cluster.name:
            continue
        loc = entry.at("spec", "context") if cluster.spec.context else (
            entry.at("metadata", "name"))
        yield loc.error("duplicate-context",
                        f"context '{cluster.context}' is already used by cluster "
                        f"'{other.resource.name}' at {where(other)}",
                        "each member cluster needs its own kubeconfig context")


def reserved_labels(specs: Specs) -> Iterator[Diagnostic]:
    """Workloads may not set the labels the platform uses for ownership and pruning."""
    for entry in specs.entries:
        if not isinstance(entry.resource, Workload | PinScaler):
            continue
        for key in entry.resource.metadata.labels:
            if key.startswith(RESERVED_LABEL_PREFIXES):
                yield entry.at("metadata", "labels", key, key=True).error(
                    "reserved-label",
                    f"label '{key}' is set by pincompile on every generated object",
                    "choose a label outside pincompute.io/ and app.kubernetes.io/managed-by")


def cluster_pools(specs: Specs) -> Iterator[Diagnostic]:
    """A cluster's reserved pool lies within its capacity and is only set where the reserved
    tier is offered; its buffer fits the capacity outside the reserved pool."""
    for name, entry in specs.clusters.items():
        spec = entry.resource.spec
        capacity = {k: _quantity(v) for k, v in spec.capacity.items()}
        reserved = {k: _quantity(v) for k, v in spec.reserved_capacity.items()}
        if reserved and "reserved" not in spec.tiers:
            yield entry.at("spec", "reservedCapacity").error(
                "invalid-pool", f"cluster '{name}' has a reservedCapacity but does not offer "
                "the reserved tier", "add reserved to spec.tiers or remove reservedCapacity")
        for res, amount in sorted(reserved.items()):
            if res in capacity and amount > capacity[res]:
                yield entry.at("spec", "reservedCapacity", res).error(
                    "invalid-pool",
                    f"reservedCapacity {res} ({spec.reserved_capacity[res]}) exceeds the "
                    f"cluster's capacity ({spec.capacity[res]})",
                    "the reserved pool is a part of spec.capacity")
        buffer = spec.buffer
        if buffer is None:
            continue
        for res, each in (("cpu", buffer.cpu), ("memory", buffer.memory)):
            total = _quantity(each) * buffer.replicas
            room = capacity.get(res)
            if room is not None and total > room - reserved.get(res, Decimal(0)):
                yield entry.at("spec", "buffer", res).error(
                    "invalid-pool",
                    f"the buffer holds {buffer.replicas} x {each} {res}, more than the "
                    "cluster's capacity outside the reserved pool",
                    "lower buffer.replicas or its size")


# --- folders ------------------------------------------------------------------------------

def _under(file: str, folder: str) -> list[str] | None:
    """The path of ``file`` below ``folder`` as its parts, or None when it is not below."""
    return file[len(folder) + 1:].split("/") if file.startswith(folder + "/") else None


def folder_owners(specs: Specs) -> Iterator[Diagnostic]:
    """Folders bind owners: ``<apps>/<project>/**`` holds only the workloads and PinScalers of
    that project; platform kinds live only under ``<platform>/``. A tree without
    ``pincompile.yaml`` and without a spec under either folder (a single file, a flat demo)
    has no folders to bind."""
    config = specs.config
    platform, apps = config.platform_folder, config.apps_folder
    if not config.present and not any(
            _under(e.file, platform) is not None or _under(e.file, apps) is not None
            for e in specs.entries):
        return
    for entry in specs.entries:
        res, file = entry.resource, entry.file
        if _under(file, platform) is not None:
            continue  # the platform's own folder may hold anything
        tenant = isinstance(res, Workload | PinScaler)
        below = _under(file, apps)
        if not tenant:
            where_ = (f"in {apps}/{below[0]}/ (the folder of project '{below[0]}')"
                      if below is not None and len(below) > 1 else f"in {file}")
            yield entry.at("kind").error(
                "wrong-folder",
                f"{res.kind} is a platform kind: it is declared under {platform}/, not "
                f"{where_}", f"move it to {platform}/ (the platform team's folder, reviewed "
                "by its owners)")
            continue
        project = getattr(res.metadata, "project", "")
        if project not in specs.projects:
            continue  # reported by workload_projects
        if below is None or len(below) < 2:
            yield entry.at("metadata", "project").error(
                "wrong-folder",
                f"{res.kind} '{res.name}' of project '{project}' lies outside its project's "
                f"folder {apps}/{project}/", f"move the file to {apps}/{project}/, where the "
                "project's owners review it")
        elif below[0] != project:
            yield entry.at("metadata", "project").error(
                "wrong-folder",
                f"{apps}/{below[0]}/ holds the specs of project '{below[0]}'; this "
                f"{res.kind} is in project '{project}'",
                f"set metadata.project: {below[0]}, or move the file to {apps}/{project}/ "
                "(its owners review it there)")


# --- references -----------------------------------------------------------------------------

def workload_projects(specs: Specs) -> Iterator[Diagnostic]:
    """Every workload and PinScaler belongs to an existing Project."""
    projects = specs.projects
    for entry in specs.entries:
        res = entry.resource
        if not isinstance(res, Workload | PinScaler) or res.project in projects:
            continue
        failed = specs.failed([Project.KIND], res.project)
        if failed is not None:
            yield entry.at("metadata", "project").error("unknown-project", failed, _FIX_FIRST)
            continue
        yield entry.at("metadata", "project").error(
            "unknown-project", f"project '{res.project}' does not exist",
            did_you_mean(res.project, projects, "projects"))


def scaler_targets(specs: Specs) -> Iterator[Diagnostic]:
    """A PinScaler targets a PinApp or PinterestService of its own project, at most one
    PinScaler per target."""
    by_key = {(e.resource.project, e.resource.name): e for e in specs.workloads}
    scaled: dict[tuple[str, str], Entry[Any]] = {}
    for entry in _by_position(specs.scalers):
        scaler: PinScaler = entry.resource  # type: ignore[assignment]
        if scaler.project not in specs.projects:
            continue  # reported by workload_projects
        target = scaler.spec.target
        loc = _Later(entry, ("spec", "target"))
        found = by_key.get((scaler.project, target))
        failed = specs.failed(SCALABLE_KINDS, target, scaler.project)
        if found is None and failed is not None:
            yield loc.error("unknown-target", failed, _FIX_FIRST)
            continue
        if found is None:
            elsewhere = sorted(p for (p, n), e in by_key.items()
                               if n == target and e.resource.kind in SCALABLE_KINDS)
            hint = (f"'{target}' is in project '{elsewhere[0]}'; a PinScaler must be in the "
                    "project of its target") if elsewhere else did_you_mean(
                target, [n for (p, n), e in by_key.items()
                         if p == scaler.project and e.resource.kind in SCALABLE_KINDS],
                f"PinApps and PinterestServices in project '{scaler.project}'")
            yield loc.error("unknown-target",
                            f"target '{target}' is not a PinApp or PinterestService in project "
                            f"'{scaler.project}'", hint)
            continue
        if found.resource.kind not in SCALABLE_KINDS:
            yield loc.error("invalid-target",
                            f"target '{target}' is a {found.resource.kind}; a PinScaler scales "
                            "a PinApp or PinterestService")
            continue
        other = scaled.setdefault((scaler.project, target), entry)
        if other is not entry:
            yield loc.error("duplicate-scaler",
                            f"{found.resource.kind} '{target}' is already scaled by PinScaler "
                            f"'{other.resource.name}' at {where(other)}",
                            "a workload has at most one PinScaler; merge their metrics")
            continue
        app = found.resource.spec
        assert isinstance(app, AppSpec)  # a PinApp's or PinterestService's (checked above)
        low, high = scaler.spec.min_replicas, scaler.spec.max_replicas
        if "replicas" in app.model_fields_set and not low <= app.replicas <= high:
            yield found.at("spec", "replicas").error(
                "replicas-outside-scaler",
                f"replicas {app.replicas} is outside the bounds of PinScaler "
                f"'{scaler.name}' at {where(entry)} (minReplicas {low}, maxReplicas {high})",
                "the autoscaler owns the replica count: set replicas within the bounds "
                "or leave it out")


def sidecar_references(specs: Specs) -> Iterator[Diagnostic]:
    """``sidecars: [...]`` names managed sidecars that exist, run in pods (mode: sidecar) and
    apply to the workload's kind. Listing an ``inject: always`` sidecar is allowed."""
    sidecars = specs.sidecars
    for pod in pods(specs):
        seen: set[str] = set()
        for i, name in enumerate(pod.template.sidecars):
            loc = _Later(pod.entry, (*pod.path, "sidecars", i))
            if name in seen:
                yield loc.error("duplicate-sidecar", f"sidecar '{name}' is listed twice")
                continue
            seen.add(name)
            found = sidecars.get(name)
            failed = specs.failed([PinterestSideCar.KIND], name)
            if found is None and failed is not None:
                yield loc.error("unknown-sidecar", failed, _FIX_FIRST)
                continue
            if found is None:
                yield loc.error("unknown-sidecar", f"sidecar '{name}' does not exist",
                                did_you_mean(name, [n for n, e in sidecars.items()
                                                    if e.resource.spec.mode == "sidecar"],
                                             "sidecars"))
                continue
            spec = found.resource.spec
            if spec.mode != "sidecar":
                yield loc.error("invalid-sidecar",
                                f"sidecar '{name}' has mode: {spec.mode} (one per node, defined "
                                f"at {where(found)}); only mode: sidecar can be added to a pod",
                                "daemon sidecars run on every node without being listed")
            elif pod.kind not in spec.applies_to:
                yield loc.error("invalid-sidecar",
                                f"sidecar '{name}' does not apply to {pod.kind} (appliesTo: "
                                f"{', '.join(spec.applies_to)})")


def _placements(specs: Specs) -> Iterator[tuple[Entry[Any], Any]]:
    """(entry, placement) of every workload and project."""
    for entry in specs.entries:
        res = entry.resource
        if isinstance(res, Workload | Project):
            yield entry, res.spec.placement


def cluster_references(specs: Specs) -> Iterator[Diagnostic]:
    """Clusters named in any placement exist."""
    clusters = specs.clusters
    for entry, placement in _placements(specs):
        if not isinstance(placement.clusters, list):
            continue  # PinterestDaemon's `clusters: all`
        for i, name in enumerate(placement.clusters):
            if name in clusters:
                continue
            failed = specs.failed([Cluster.KIND], name)
            if failed is not None:
                yield entry.at("spec", "placement", "clusters", i).error(
                    "unknown-cluster", failed, _FIX_FIRST)
                continue
            hint = did_you_mean(name, clusters, "clusters")
            if name == "all":
                hint = "only a PinterestDaemon accepts 'clusters: all' (written without a list)"
            yield entry.at("spec", "placement", "clusters", i).error(
                "unknown-cluster", f"cluster '{name}' does not exist", hint)


def region_zone_references(specs: Specs) -> Iterator[Diagnostic]:
    """Regions and zones named in any placement have at least one cluster."""
    regions = {c.resource.spec.region for c in specs.clusters.values()}
    zones = {c.resource.spec.zone for c in specs.clusters.values()}
    for entry, placement in _placements(specs):
        for field, known, what in (("regions", regions, "region"), ("zones", zones, "zone")):
            for i, name in enumerate(getattr(placement, field)):
                if name not in known:
                    yield entry.at("spec", "placement", field, i).error(
                        f"unknown-{what}", f"no cluster is in {what} '{name}'",
                        did_you_mean(name, known, f"{what}s with clusters"))


def gpu_types(specs: Specs) -> Iterator[Diagnostic]:
    """A pod's ``gpuType`` is offered by at least one cluster."""
    offered = {t for c in specs.clusters.values() for t in c.resource.spec.gpu_types}
    for pod in pods(specs):
        gpu = pod.template.gpu_type
        if gpu is not None and gpu not in offered:
            yield pod.at("gpuType").error(
                "unknown-gpu-type", f"no cluster offers GPU type '{gpu}'",
                did_you_mean(gpu, offered, "GPU types offered"))


# --- pods -----------------------------------------------------------------------------------

def container_names(specs: Specs) -> Iterator[Diagnostic]:
    """Container names are unique within a pod, including the runtime profile's init
    containers and the managed sidecars injected into it."""
    runtime = specs.runtime
    for pod in pods(specs):
        taken: dict[str, tuple[str, Entry[Any] | None]] = {}  # name → (user, its spec)
        if runtime is not None:
            for init in runtime.resource.spec.init_containers:
                taken[init.name] = ("the RuntimeProfile's init container", runtime)
        for sc in specs.injected(pod):
            name = sc.resource.spec.container.name or sc.resource.name
            taken.setdefault(name, (f"managed sidecar '{sc.resource.name}'", sc))
        for i, c in enumerate(pod.template.containers):
            if c.name in taken:
                yield pod.at("containers", i, "name").error(
                    "duplicate-container",
                    f"container name '{c.name}' is already used by {_used_by(taken[c.name])}",
                    "container names must be unique within a pod")
            else:
                taken[c.name] = (dotted((*pod.path, "containers", i)), None)


def port_names(specs: Specs) -> Iterator[Diagnostic]:
    """Port names and port numbers are unique within a pod (containers share its network),
    including the ports of injected managed sidecars."""
    for pod in pods(specs):
        names: dict[str, str] = {}
        numbers: dict[tuple[int, str], str] = {}
        for sc in specs.injected(pod):
            owner = f"managed sidecar '{sc.resource.name}'"
            for p in sc.resource.spec.container.ports:
                names.setdefault(p.name, owner)
                numbers.setdefault((p.container_port, p.protocol), owner)
        for i, c in enumerate(pod.template.containers):
            owner = f"container '{c.name}'"
            for j, p in enumerate(c.ports):
                if p.name in names:
                    yield pod.at("containers", i, "ports", j, "name").error(
                        "duplicate-port-name",
                        f"port name '{p.name}' is already used by {names[p.name]}",
                        "port names must be unique within a pod")
                else:
                    names[p.name] = owner
                number = (p.container_port, p.protocol)
                if number in numbers:
                    yield pod.at("containers", i, "ports", j, "containerPort").error(
                        "duplicate-port",
                        f"port {p.container_port}/{p.protocol} is already used by "
                        f"{numbers[number]}", "containers of a pod share one network")
                else:
                    numbers[number] = owner


def volumes(specs: Specs) -> Iterator[Diagnostic]:
    """Volume names and mount paths are unique within a pod, including the runtime profile's
    volumes and mounts, injected sidecars' volumes and the config files' mount."""
    runtime = specs.runtime
    for pod in pods(specs):
        names: dict[str, tuple[str, Entry[Any] | None]] = {}  # name → (user, its spec)
        mounts: dict[str, str] = {}
        if runtime is not None:
            for v in runtime.resource.spec.volumes:
                names[v.name] = ("the RuntimeProfile", runtime)
            for m in runtime.resource.spec.volume_mounts:
                mounts[m.mount_path] = f"the RuntimeProfile's mount '{m.name}'"
        for sc in specs.injected(pod):
            for v in sc.resource.spec.volumes:
                names.setdefault(v.name, (f"managed sidecar '{sc.resource.name}'", None))
        w = pod.entry.resource
        if pod.template.config or (isinstance(w, PinterestJobSet) and w.spec.config_templates):
            mounts[CONFIG_MOUNT_PATH] = "the config files"
        items: list[tuple[Path, str, str]] = [
            ((*pod.path, "volumes", i), v.name, v.mount_path)
            for i, v in enumerate(pod.template.volumes)]
        if isinstance(w, PinterestJobSet):
            items += [(("spec", "volumeClaimTemplates", i), v.name, v.mount_path)
                      for i, v in enumerate(w.spec.volume_claim_templates)]
        for full, name, mount in items:
            if name in names:
                yield pod.entry.at(*full, "name").error(
                    "duplicate-volume",
                    f"volume name '{name}' is already used by {_used_by(names[name])}",
                    "volume names must be unique within a pod")
            else:
                names[name] = (dotted(full), None)
            mount = mount.rstrip("/") or "/"
            if mount in mounts:
                yield pod.entry.at(*full, "mountPath").error(
                    "duplicate-mount-path",
                    f"mountPath '{mount}' is already used by {mounts[mount]}",
                    "mount each volume at a path of its own")
            else:
                mounts[mount] = dotted(full)


def env_names(specs: Specs) -> Iterator[Diagnostic]:
    """Env names are unique within a container and do not take the platform's
    ``PINCOMPUTE_*`` identity variables."""
    for pod in pods(specs):
        for i, c in enumerate(pod.template.containers):
            seen: set[str] = set()
            for j, env in enumerate(c.env):
                loc = _Later(pod.entry, (*pod.path, "containers", i, "env", j, "name"))
                if env.name.startswith(RESERVED_ENV_PREFIX):
                    yield loc.error("reserved-env",
                                    f"env '{env.name}' is set by the platform "
                                    f"({RESERVED_ENV_PREFIX}* variables identify the workload)",
                                    "choose another name")
                elif env.name in seen:
                    yield loc.error("duplicate-env",
                                    f"env '{env.name}' is already set in container '{c.name}'")
                seen.add(env.name)


def resource_limits(specs: Specs) -> Iterator[Diagnostic]:
    """Limits are not below requests (Kubernetes refuses such a pod)."""
    for pod in pods(specs):
        for i, c in enumerate(pod.template.containers):
            res = c.resources
            if res.limits is None:
                continue
            for field in ("cpu", "memory"):
                request, limit = getattr(res, field), getattr(res.limits, field)
                if request is None or limit is None:
                    continue
                if _quantity(limit) < _quantity(request):
                    yield pod.at("containers", i, "resources", "limits", field).error(
                        "invalid-limits",
                        f"limits.{field} ({limit}) is below the {field} request ({request})",
                        f"raise limits.{field} to at least {request}")


_MISSING_HINT = ("set resources: {{cpu: ..., memory: ...}} here, or give the RuntimeProfile "
                 "spec.defaultResources (every project namespace has a ResourceQuota, which "
                 "refuses pods without {what} requests)")


def missing_resources(specs: Specs) -> Iterator[Diagnostic]:
    """Every container of a workload pod has cpu and memory requests, its own or the
    RuntimeProfile's ``defaultResources`` (the namespace's ResourceQuota refuses a pod
    without them). Managed sidecars and the profile's init containers are reported once, where
    they are defined."""
    defaults = defaults_of(specs.catalog)
    for pod in pods(specs):
        for i, c in enumerate(pod.template.containers):
            missing = missing_requests(c.resources, defaults)
            if missing:
                field = ("containers", i, "resources") if "resources" in c.model_fields_set \
                    else ("containers", i, "name")
                what = " and ".join(missing)
                yield pod.at(*field).error(
                    "missing-resources",
                    f"container '{c.name}' has no {what} request and no default applies",
                    _MISSING_HINT.format(what=what))
    for name, sc in specs.sidecars.items():
        if sc.resource.spec.mode != "sidecar":
            continue  # daemon sidecars run in the platform's own namespace, without quota
        missing = missing_requests(sc.resource.spec.container.resources, defaults)
        if missing:
            what = " and ".join(missing)
            yield sc.at("spec", "container").error(
                "missing-resources",
                f"managed sidecar '{name}' has no {what} request and no default applies; every "
                "pod it is injected into would be refused", _MISSING_HINT.format(what=what))
    runtime = specs.runtime
    if runtime is not None:
        for i, init in enumerate(runtime.resource.spec.init_containers):
            missing = missing_requests(init.resources, defaults)
            if missing:
                what = " and ".join(missing)
                yield runtime.at("spec", "initContainers", i, "name").error(
                    "missing-resources",
                    f"init container '{init.name}' has no {what} request and no default "
                    "applies; every workload pod would be refused",
                    _MISSING_HINT.format(what=what))


def _quantity(value: str) -> Decimal:
    try:
        return parse_quantity(value)
    except (ValueError, ArithmeticError):
        return Decimal(0)


def probe_ports(specs: Specs) -> Iterator[Diagnostic]:
    """A probe's named port is a port of its container."""
    for pod in pods(specs):
        for i, c in enumerate(pod.template.containers):
            if c.probes is None:
                continue
            own = [p.name for p in c.ports]
            for kind in ("readiness", "liveness", "startup"):
                probe = getattr(c.probes, kind)
                if probe is None or not isinstance(probe.port, str) or probe.port in own:
                    continue
                yield pod.at("containers", i, "probes", kind, "port").error(
                    "unknown-port",
                    f"{kind} probe port '{probe.port}' is not a port of container '{c.name}'",
                    did_you_mean(probe.port, own, f"ports of '{c.name}'"))


def config_keys(specs: Specs) -> Iterator[Diagnostic]:
    """``config`` (and a JobSet's ``configTemplates``) keys are valid ConfigMap keys (file
    names) and do not collide."""
    for pod in pods(specs):
        w = pod.entry.resource
        tables: list[tuple[Path, dict[str, str]]] = [((*pod.path, "config"), pod.template.config)]
        if isinstance(w, PinterestJobSet):
            tables.append((("spec", "configTemplates"), w.spec.config_templates))
        seen: set[str] = set()
        for path, table in tables:
            for key in table:
                loc = _Later(pod.entry, (*path, key), key=True)
                if (not _CONFIG_KEY.match(key) or len(key) > 253 or key in (".", "..")
                        or key.startswith("..")):
                    yield loc.error("invalid-config-key",
                                    f"config key '{key}' is not a valid file name: letters, "
                                    "digits, '-', '_' and '.', at most 253 characters",
                                    "files are mounted flat in /etc/pincompute/config")
                elif key in seen:
                    yield loc.error("duplicate-config-key",
                                    f"config key '{key}' is also in config; both would be the "
                                    "same file")
                seen.add(key)


def service_ports(specs: Specs) -> Iterator[Diagnostic]:
    """Service ports are unique; a named ``targetPort`` is a port of the pod; the ingress
    routes to a service port."""
    for entry in specs.workloads:
        w = entry.resource
        if not isinstance(w, PinApp | PinterestService) or w.spec.service is None:
            continue
        pod_ports = [p.name for c in w.spec.template.containers for p in c.ports]
        for sc in managed_sidecars(w.kind, w.spec.template, cast(Catalog, specs)):
            pod_ports += [p.name for p in sc.resource.spec.container.ports]
        names: dict[str, int] = {}
        numbers: dict[tuple[int, str], int] = {}
        service = w.spec.service
        for i, p in enumerate(service.ports):
            base = ("spec", "service", "ports", i)
            if p.name in names:
                yield entry.at(*base, "name").error(
                    "duplicate-service-port",
                    f"service port name '{p.name}' is already used by ports[{names[p.name]}]")
            names.setdefault(p.name, i)
            if (p.port, p.protocol) in numbers:
                yield entry.at(*base, "port").error(
                    "duplicate-service-port",
                    f"service port {p.port}/{p.protocol} is already used by "
                    f"ports[{numbers[(p.port, p.protocol)]}]")
            numbers.setdefault((p.port, p.protocol), i)
            if isinstance(p.target_port, str) and p.target_port not in pod_ports:
                yield entry.at(*base, "targetPort").error(
                    "unknown-port",
                    f"targetPort '{p.target_port}' is not a port name of any container",
                    did_you_mean(p.target_port, pod_ports, "container ports"))
        ingress = service.ingress
        if ingress is not None and ingress.port is not None:
            known = ingress.port in names if isinstance(ingress.port, str) else (
                ingress.port in {port for port, _ in numbers})
            if not known:
                yield entry.at("spec", "service", "ingress", "port").error(
                    "unknown-port", f"ingress port '{ingress.port}' is not a service port",
                    did_you_mean(str(ingress.port), [str(n) for n in names], "service ports"))


def ingress_hosts(specs: Specs) -> Iterator[Diagnostic]:
    """Two services may not claim the same ingress host and path."""
    first: dict[tuple[str, str], Entry[Any]] = {}
    for entry in _by_position(specs.workloads):
        w = entry.resource
        if not isinstance(w, PinApp | PinterestService) or w.spec.service is None:
            continue
        ingress = w.spec.service.ingress
        if ingress is None:
            continue
        other = first.setdefault((ingress.host.lower(), ingress.path), entry)
        if other is not entry:
            yield entry.at("spec", "service", "ingress", "host").error(
                "duplicate-ingress",
                f"ingress host '{ingress.host}' path '{ingress.path}' is already routed to "
                f"{other.resource.kind} '{other.resource.name}' at {where(other)}")


# --- policy ---------------------------------------------------------------------------------

def project_policy(specs: Specs) -> Iterator[Diagnostic]:
    """Host network, privileged containers, hostPath volumes and daemons only where the
    project's policy allows them."""
    for pod in pods(specs):
        project = _project_of(specs, pod.entry)
        if project is None:
            continue  # reported by workload_projects
        policy, name = project.spec.policy, project.name
        hint = "the platform team decides this in the Project's spec.policy"
        if pod.template.network == "host" and not policy.allow_host_network:
            yield pod.at("network").error(
                "policy-host-network",
                f"network: host is not allowed in project '{name}' (policy.allowHostNetwork "
                "is false)", hint)
        for i, c in enumerate(pod.template.containers):
            if c.privileged and not policy.allow_privileged:
                yield pod.at("containers", i, "privileged").error(
                    "policy-privileged",
                    f"privileged containers are not allowed in project '{name}' "
                    "(policy.allowPrivileged is false)", hint)
        for i, v in enumerate(pod.template.volumes):
            if v.type == "hostPath" and not policy.allow_host_path:
                yield pod.at("volumes", i, "type").error(
                    "policy-host-path",
                    f"hostPath volumes are not allowed in project '{name}' "
                    "(policy.allowHostPath is false)", hint)
        if isinstance(pod.entry.resource, PinterestDaemon) and not policy.allow_daemons:
            yield pod.entry.at("kind").error(
                "policy-daemons",
                f"PinterestDaemon is not allowed in project '{name}' (policy.allowDaemons is "
                "false)", hint)


def network_modes(specs: Specs) -> Iterator[Diagnostic]:
    """``network: bridge`` accepts no inbound traffic, so it has no container ports, Service
    or Ingress; ``network: dedicated-eni`` needs a cluster whose addons offer pod ENIs."""
    eni_clusters = [n for n, c in specs.clusters.items()
                    if POD_ENI_ADDON in c.resource.spec.addons]
    hint = "set network: routable for pods that receive traffic"
    for pod in pods(specs):
        network = pod.template.network
        if network == "dedicated-eni" and not eni_clusters:
            yield pod.at("network").error(
                "network-unavailable",
                f"network: dedicated-eni needs a cluster with the '{POD_ENI_ADDON}' addon; no "
                "cluster has it", "use network: routable, or ask the platform team to add "
                f"'{POD_ENI_ADDON}' to a Cluster's spec.addons")
        if network != "bridge":
            continue
        for i, c in enumerate(pod.template.containers):
            if c.ports:
                yield pod.at("containers", i, "ports").error(
                    "bridge-inbound",
                    f"container '{c.name}' declares ports, but network: bridge accepts no "
                    "inbound traffic (its pods get a NetworkPolicy that denies all ingress)",
                    f"{hint}; containers of one pod reach each other on localhost without "
                    "declared ports")
        w = pod.entry.resource
        if isinstance(w, PinApp | PinterestService) and w.spec.service is not None:
            yield pod.entry.at("spec", "service").error(
                "bridge-inbound",
                f"{w.kind} '{w.name}' has a service, but its pods use network: bridge, which "
                "accepts no inbound traffic", hint)
            if w.spec.service.ingress is not None:
                yield pod.entry.at("spec", "service", "ingress").error(
                    "bridge-inbound",
                    f"{w.kind} '{w.name}' has an ingress, but its pods use network: bridge, "
                    "which accepts no inbound traffic", hint)


# --- kind-specific --------------------------------------------------------------------------

def _is_zero(value: int | str) -> bool:
    return value == 0 or (isinstance(value, str) and value.rstrip("%") in ("0", "00", "000"))


def rollout_progress(specs: Specs) -> Iterator[Diagnostic]:
    """A rollout may add or remove at least one pod at a time."""
    for entry in specs.workloads:
        w = entry.resource
        if not isinstance(w, PinApp | PinterestService):
            continue
        r = w.spec.rollout
        if _is_zero(r.max_surge) and _is_zero(r.max_unavailable):
            yield entry.at("spec", "rollout", "maxUnavailable").error(
                "invalid-rollout",
                "rollout.maxSurge and rollout.maxUnavailable are both 0: no pod could ever be "
                "replaced", "allow a surge (e.g. maxSurge: 1 or 25%) or some unavailability")


def training_roles(specs: Specs) -> Iterator[Diagnostic]:
    """A PyTorch job has at most one master; a TensorFlow job at most one chief and one
    evaluator (the role names themselves are checked by the schema)."""
    for entry in specs.workloads:
        w = entry.resource
        if not isinstance(w, PinterestTrainingJob):
            continue
        for role in SINGLE_ROLES.get(w.spec.framework, ()):
            count = w.spec.replicas.get(role, 0)
            if count > 1:
                yield entry.at("spec", "replicas", role).error(
                    "invalid-replicas",
                    f"a {w.spec.framework} job has at most one {role}; got {count}",
                    f"set replicas.{role}: 1 and add workers instead")


RULES: tuple[Rule, ...] = (
    folder_owners, duplicate_names, one_runtime_profile, project_namespaces, cluster_contexts,
    reserved_labels, cluster_pools, workload_projects, scaler_targets, sidecar_references,
    cluster_references, region_zone_references, gpu_types, container_names, port_names,
    volumes, env_names, resource_limits, missing_resources, probe_ports, config_keys, service_ports,
    ingress_hosts, project_policy, network_modes, rollout_progress, training_roles,
)
