"""Semantic checks across specs: references, duplicates, tenancy policy and pod consistency.

Every rule is a small function ``rule(specs) -> Iterable[Diagnostic]`` listed in ``RULES``.
Each diagnostic points at the offending field (``entry.at(...)``) and, for a reference that
does not resolve, suggests the closest existing name. Rules see only specs that passed the
schema, so they may rely on types; they report everything and stop at nothing.

Placement and quota problems (no eligible cluster, over quota) belong to
:mod:`pincompile.placement`, not here.
"""

from __future__ import annotations

from pincompile.catalog import Catalog
from pincompile.checks.folders import folder_owners
from pincompile.checks.identity import (
    cluster_contexts,
    cluster_pools,
    duplicate_names,
    one_runtime_profile,
    project_namespaces,
    reserved_labels,
)
from pincompile.checks.kinds import rollout_progress, training_roles
from pincompile.checks.pods import (
    config_keys,
    container_names,
    env_names,
    ingress_hosts,
    missing_resources,
    port_names,
    probe_ports,
    resource_limits,
    service_ports,
    volumes,
)
from pincompile.checks.policy import network_modes, project_policy
from pincompile.checks.references import (
    cluster_references,
    gpu_types,
    region_zone_references,
    scaler_targets,
    sidecar_references,
    workload_projects,
)
from pincompile.checks.security import (
    container_security,
    injected_security,
    profile_volumes,
    reserved_volumes,
)
from pincompile.checks.specs import Rule, Specs
from pincompile.diagnostics import Diagnostic
from pincompile.repoconfig import DEFAULT as DEFAULT_CONFIG
from pincompile.repoconfig import RepoConfig


def check(catalog: Catalog, config: RepoConfig = DEFAULT_CONFIG) -> list[Diagnostic]:
    """Every cross-document rule; returns all problems found, sorted by file and line.
    ``config``: the tree's ``pincompile.yaml`` (its folders bind owners)."""
    specs = Specs(catalog, config)
    found: set[Diagnostic] = set()
    for rule in RULES:
        found.update(rule(specs))
    return sorted(found)


RULES: tuple[Rule, ...] = (
    folder_owners, duplicate_names, one_runtime_profile, project_namespaces, cluster_contexts,
    reserved_labels, cluster_pools, workload_projects, scaler_targets, sidecar_references,
    cluster_references, region_zone_references, gpu_types, container_names, port_names,
    volumes, env_names, resource_limits, missing_resources, probe_ports, config_keys, service_ports,
    ingress_hosts, project_policy, network_modes, rollout_progress, training_roles,
    container_security, injected_security, profile_volumes, reserved_volumes,
)
