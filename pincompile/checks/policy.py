"""Tenancy policy rules: what a project's policy allows, and network modes."""

from __future__ import annotations

from collections.abc import Iterator

from pincompile.checks.specs import Specs, pods, project_of
from pincompile.diagnostics import Diagnostic
from pincompile.models import (
    PinApp,
    PinterestDaemon,
    PinterestService,
)
from pincompile.models.platform import POD_ENI_ADDON


def project_policy(specs: Specs) -> Iterator[Diagnostic]:
    """Host network, privileged containers, hostPath volumes and daemons only where the
    project's policy allows them."""
    for pod in pods(specs):
        project = project_of(specs, pod.entry)
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
