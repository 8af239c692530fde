"""Test helpers for expansion: small spec repos, hand-written plans, schema validation.

A *plan spec* says where each workload runs, so expansion tests do not depend on
placement's choices::

    PinApp/search/api: [{cluster: east-133, replicas: 3, minReplicas: 2, maxReplicas: 9}]
    quotas: {search/east-133: {reserved: {cpu: "10"}}}   # optional; default: an even split
    sidecarDaemons: {node-agent: [east-133]}             # optional; default: none
"""

from __future__ import annotations

import contextlib
import functools
import json
import re
from collections.abc import Iterable, Mapping
from decimal import Decimal
from pathlib import Path
from typing import Any

import jsonschema
import referencing
from kubernetes_validate import utils as kv

from pincompile.catalog import Catalog
from pincompile.diagnostics import Diagnostic, render_human
from pincompile.expand import expand_all
from pincompile.manifest import Manifest
from pincompile.models import TIERS
from pincompile.models.types import parse_quantity
from pincompile.parse import parse
from pincompile.placement import Decision, Plan, Shard
from pincompile.source.loader import LoadResult, load_tree
from tests.support.wait import wait_for

TESTS = Path(__file__).resolve().parent.parent
REPO = TESTS.parent
GOLDEN = TESTS / "pincompile" / "expand" / "golden"
PLATFORM = GOLDEN / "_platform"
"""The fleet every golden case and most expansion tests run against."""
SCHEMAS = TESTS / "pincompile" / "expand" / "schemas"
SERVICE_KINDS = ("PinApp", "PinterestService")


# --- specs and plans --------------------------------------------------------------------------

def write_repo(root: Path, files: Mapping[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def load(*roots: Path) -> tuple[Catalog, LoadResult]:
    """Parse the specs under ``roots`` (e.g. the shared platform and a case's apps)."""
    loaded = LoadResult()
    for root in roots:
        loaded.extend(load_tree(root))
    catalog, problems = parse(loaded)
    assert not problems, render_human(problems, loaded.sources)
    return catalog, loaded


def load_apps(root: Path, files: Mapping[str, str], platform: Path = PLATFORM) -> Catalog:
    """The catalog of ``platform`` plus a repo at ``root`` holding ``files``."""
    return load(platform, write_repo(root, files))[0]


def make_plan(catalog: Catalog, spec: Mapping[str, Any]) -> Plan:
    """A :class:`Plan` from a plan spec (see the module docstring)."""
    plan = Plan()
    workloads = {e.resource.key: e.resource for e in catalog.workloads}
    for key_text, shards in spec.items():
        if key_text in ("quotas", "sidecarDaemons"):
            continue
        key = tuple(key_text.split("/"))
        w = workloads[key]  # type: ignore[index]
        clusters = catalog.clusters
        placed = [Shard(cluster=s["cluster"], region=clusters[s["cluster"]].resource.spec.region,
                        zone=clusters[s["cluster"]].resource.spec.zone, replicas=s["replicas"],
                        index_offset=s.get("indexOffset", 0), min_replicas=s.get("minReplicas"),
                        max_replicas=s.get("maxReplicas"), parallelism=s.get("parallelism"))
                  for s in shards]
        plan.decisions[w.key] = Decision(
            kind=w.kind, project=w.project, name=w.name,
            eligible=sorted(s.cluster for s in placed), filtered={}, scores={},
            shards=sorted(placed, key=lambda s: s.cluster), tier=w.spec.tier)
    for scaler in catalog.scalers:
        s = scaler.resource
        for kind in SERVICE_KINDS:
            if (kind, s.project, s.spec.target) in plan.decisions:
                plan.scaler_targets[s.key] = (kind, s.project, s.spec.target)
                break
    plan.quotas = _quotas(catalog, plan, spec.get("quotas"))
    plan.sidecar_daemons = {k: list(v) for k, v in (spec.get("sidecarDaemons") or {}).items()}
    return plan


def _quotas(catalog: Catalog, plan: Plan, given: Mapping[str, Any] | None
            ) -> dict[tuple[str, str, str], dict[str, Decimal]]:
    out: dict[tuple[str, str, str], dict[str, Decimal]] = {}
    if given is not None:
        for where, tiers in given.items():
            project, cluster = where.split("/")
            for tier, hard in tiers.items():
                out[(project, tier, cluster)] = {k: parse_quantity(v) for k, v in hard.items()}
        return out
    placed: dict[str, set[str]] = {}
    for d in plan.decisions.values():
        placed.setdefault(d.project, set()).update(s.cluster for s in d.shards)
    for project, clusters in placed.items():
        quota = catalog.projects[project].resource.spec.quota
        for tier in TIERS:
            limits = getattr(quota, tier) or {}
            for cluster in clusters:
                out[(project, tier, cluster)] = {
                    k: parse_quantity(v) / len(clusters) for k, v in limits.items()}
    return out


def expand(catalog: Catalog, plan_spec: Mapping[str, Any], revision: str = "test"
           ) -> tuple[list[Manifest], list[Diagnostic]]:
    return expand_all(catalog, make_plan(catalog, plan_spec), revision=revision)


def objects(manifests: Iterable[Manifest], kind: str, cluster: str | None = None
            ) -> list[dict[str, Any]]:
    return [m.obj for m in manifests if m.kind == kind and cluster in (None, m.cluster)]


def one(manifests: Iterable[Manifest], kind: str, cluster: str | None = None
        ) -> dict[str, Any]:
    found = objects(manifests, kind, cluster)
    assert len(found) == 1, f"{len(found)} {kind} objects"
    return found[0]


# --- schema validation ------------------------------------------------------------------------

def schema_version(kubernetes_version: str) -> str:
    """The kubernetes-validate schema set for a cluster's version: the newest one not newer
    than the cluster (the same minor when shipped), or the oldest for older clusters."""
    versions = sorted({tuple(int(p) for p in v.split(".")[:2]) for v in kv.all_versions()})
    wanted = tuple(int(p) for p in kubernetes_version.split(".")[:2])
    best = max((v for v in versions if v <= wanted), default=versions[0])
    return f"{best[0]}.{best[1]}.0"


@functools.cache
def _definitions(version: str) -> referencing.Resource[Any]:
    return referencing.Resource.from_contents(
        kv.schema_contents(f"kubernetes-json-schema/v{version}-local-strict/_definitions.json",
                           version))


@functools.cache
def _validator(version: str, api_version: str, kind: str) -> jsonschema.protocols.Validator:
    registry: referencing.Registry[Any] = _definitions(version) @ referencing.Registry()
    if api_version == "kubeflow.org/v1":
        common = json.loads((SCHEMAS / "kubeflow-common-v1.json").read_text())
        registry = referencing.Resource.from_contents(common) @ registry
        schema = json.loads((SCHEMAS / f"{kind.lower()}-kubeflow-v1.json").read_text())
    else:
        group = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api_version)
        schema = kv.schema_contents(
            f"kubernetes-json-schema/v{version}-local-strict/{kind.lower()}-{group}.json",
            version)
    registry = referencing.Resource.from_contents(schema) @ registry
    return jsonschema.Draft202012Validator(schema, registry=registry)


def validate(obj: Mapping[str, Any], kubernetes_version: str) -> list[str]:
    """Schema errors of one object (strict: unknown fields are errors), plus duplicate keys
    in lists that server-side apply merges by key (env, ports, containers, volumes)."""
    validator = _validator(schema_version(kubernetes_version), obj["apiVersion"], obj["kind"])
    errors = [f"{'.'.join(map(str, e.absolute_path))}: {e.message[:300]}"
              for e in validator.iter_errors(obj)]
    return errors + list(_duplicate_keys(obj))


def _duplicate_keys(node: Any, path: str = "") -> Iterable[str]:
    if isinstance(node, Mapping):
        if "containers" in node:
            names = [c["name"] for c in [*node["containers"], *node.get("initContainers", [])]]
            yield from _dupes(names, f"{path}.containers+initContainers")
        for key, field in (("volumes", "name"), ("env", "name"), ("volumeMounts", "mountPath"),
                           ("ports", "containerPort")):
            if isinstance(node.get(key), list):
                yield from _dupes([item.get(field) for item in node[key]], f"{path}.{key}")
        for k, v in node.items():
            yield from _duplicate_keys(v, f"{path}.{k}")
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _duplicate_keys(v, f"{path}[{i}]")


def _dupes(values: list[Any], where: str) -> Iterable[str]:
    seen: set[Any] = set()
    for v in values:
        if v is not None and v in seen:
            yield f"{where}: duplicate {v!r}"
        seen.add(v)


def siblings_left(out: Path, wait: float = 30.0) -> list[str]:
    """Names beside ``out`` that a compile left (a replaced output tree is deleted in the
    background: give it ``wait`` seconds)."""
    def left() -> list[str]:
        return sorted(p.name for p in out.parent.iterdir() if p.name.startswith(f".{out.name}."))

    with contextlib.suppress(AssertionError):
        wait_for(lambda: not left(), wait, f"what a compile left beside {out.name} to go",
                 interval=0.05)
    return left()
