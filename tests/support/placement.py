"""Small fleets and apps as YAML text, and a one-call ``place()`` for placement tests."""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

from pincompile.catalog import Catalog
from pincompile.diagnostics import Diagnostic
from pincompile.parse import parse
from pincompile.placement import Plan, plan
from pincompile.source.loader import LoadResult, load_text

API = "pincompute.io/v1"


def doc(kind: str, name: str, spec: dict[str, Any], project: str | None = None) -> str:
    """One spec document as YAML text (JSON is YAML)."""
    meta: dict[str, Any] = {"name": name}
    if project is not None:
        meta["project"] = project
    return json.dumps({"apiVersion": API, "kind": kind, "metadata": meta, "spec": spec})


def cluster(name: str, *, region: str = "r1", zone: str = "r1a", cpu: str | None = "64",
            memory: str | None = "256Gi", gpus: str | None = None, **spec: Any) -> str:
    capacity = {k: v for k, v in (("cpu", cpu), ("memory", memory), ("nvidia.com/gpu", gpus))
                if v is not None}
    return doc("Cluster", name, {"region": region, "zone": zone, "capacity": capacity, **spec})


BIG_QUOTA = {t: {"cpu": "100000", "memory": "100000Gi", "nvidia.com/gpu": "1000"}
             for t in ("reserved", "ondemand", "preemptible")}


def project(name: str = "team", *, quota: dict[str, Any] | None = None, **spec: Any) -> str:
    return doc("Project", name, {"quota": BIG_QUOTA if quota is None else quota, **spec})


def template(cpu: str | None = "1", memory: str | None = "1Gi", gpu: int | None = None,
             **extra: Any) -> dict[str, Any]:
    resources = {k: v for k, v in (("cpu", cpu), ("memory", memory), ("gpu", gpu))
                 if v is not None}
    return {"containers": [{"name": "main", "image": "registry.internal/x:1.0",
                            "resources": resources}], **extra}


def app(name: str, *, replicas: int = 3, project: str = "team", kind: str = "PinApp",
        placement: dict[str, Any] | None = None, tier: str = "ondemand",
        pod: dict[str, Any] | None = None, **spec: Any) -> str:
    # Division and capacity tests leave the rollout surge out (test_placement_surge.py
    # covers it): every pod is replaced one at a time, without an extra one.
    body: dict[str, Any] = {"replicas": replicas, "tier": tier, "template": pod or template(),
                            "rollout": {"maxSurge": 0, "maxUnavailable": 1}, **spec}
    if placement is not None:
        body["placement"] = placement
    return doc(kind, name, body, project)


def scaler(name: str, target: str, low: int, high: int, project: str = "team") -> str:
    return doc("PinScaler", name, {"target": target, "minReplicas": low, "maxReplicas": high},
               project)


@lru_cache(maxsize=4096)
def _load_one(name: str, text: str) -> LoadResult:
    return load_text(name, text)  # never mutated: load() copies what it needs


def load(*docs: str, files: dict[str, str] | None = None) -> LoadResult:
    """Each positional document becomes its own file ``doc<i>.yaml``; ``files`` adds more."""
    loaded = LoadResult()
    for i, text in enumerate(docs):
        loaded.extend(_load_one(f"doc{i}.yaml", text))
    for name, text in (files or {}).items():
        loaded.extend(_load_one(name, text))
    assert not loaded.diagnostics, loaded.diagnostics
    return loaded


def catalog(*docs: str, files: dict[str, str] | None = None) -> Catalog:
    cat, problems = parse(load(*docs, files=files))
    assert not problems, problems
    return cat


def place(*docs: str, files: dict[str, str] | None = None) -> tuple[Plan, list[Diagnostic]]:
    return plan(catalog(*docs, files=files))


def shards(p: Plan, kind: str, name: str, project: str = "team") -> dict[str, int]:
    d = p.decision((kind, project, name))
    assert d is not None, f"no decision for {kind}/{project}/{name}"
    return {s.cluster: s.replicas for s in d.shards}
