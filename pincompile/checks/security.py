"""Security rules: what a pod asks for beyond the platform's secure defaults is allowed by its
project's policy, so nothing ``validate`` accepts is refused by the Pod Security level its
namespace enforces (:mod:`pincompile.podsecurity`).

Privileged containers, host network and hostPath volumes of a workload's own are the
``policy-*`` rules of :mod:`pincompile.checks.policy`.
"""

from __future__ import annotations

from collections.abc import Iterator

from pincompile.checks.specs import Specs, pods, project_of
from pincompile.diagnostics import Diagnostic
from pincompile.podsecurity import RESTRICTED_VOLUMES, TMP_VOLUME, container_needs, sidecar_needs

HINT = "the platform team decides this in the Project's spec.policy"
#: A need's policy field → the error code of a container asking for it unallowed.
CODES = {"allowCapabilities": "policy-capability", "allowRunAsRoot": "policy-run-as-root",
         "allowPrivileged": "policy-privileged", "allowHostPath": "policy-host-path"}


def container_security(specs: Specs) -> Iterator[Diagnostic]:
    """A workload's container adds only capabilities its project allows, and runs as root
    only where the project allows root."""
    for pod in pods(specs):
        project = project_of(specs, pod.entry)
        if project is None:
            continue  # reported by workload_projects
        for i, c in enumerate(pod.template.containers):
            for need in container_needs(c, (*pod.path, "containers", i)):
                if not need.allowed_by(project.spec.policy):
                    yield pod.entry.at(*need.path).error(
                        CODES[need.flag],
                        f"{need.what} is not allowed in project '{project.name}' "
                        f"(policy.{need.flag} {_not_allowed(need.flag)})", HINT)


def injected_security(specs: Specs) -> Iterator[Diagnostic]:
    """A managed sidecar or a RuntimeProfile init container goes only into pods whose
    project allows what it asks for: an opt-in sidecar's error is where the workload lists
    it, an always-injected one's (and an init container's) where it asks, once per project."""
    runtime = specs.runtime
    inits = [] if runtime is None else [
        need for i, c in enumerate(runtime.resource.spec.init_containers)
        for need in container_needs(c, ("spec", "initContainers", i))]
    for pod in pods(specs):
        project = project_of(specs, pod.entry)
        if project is None:
            continue
        policy, name = project.spec.policy, project.name
        for sc in specs.injected(pod):
            for need in sidecar_needs(sc.resource.spec):
                if need.allowed_by(policy):
                    continue
                sidecar = sc.resource.name
                why = (f"{need.what}, which project '{name}' does not allow "
                       f"(policy.{need.flag} {_not_allowed(need.flag)})")
                if sidecar in pod.template.sidecars:
                    yield pod.at("sidecars", pod.template.sidecars.index(sidecar)).error(
                        CODES[need.flag], f"managed sidecar '{sidecar}' needs {why}",
                        f"{HINT}, or leave the sidecar out")
                else:
                    yield sc.at(*need.path).error(
                        CODES[need.flag], f"managed sidecar '{sidecar}' is injected into "
                        f"pods of project '{name}' and needs {why}", HINT)
        for need in inits:
            if runtime is not None and not need.allowed_by(policy):
                yield runtime.at(*need.path).error(
                    CODES[need.flag], f"the RuntimeProfile's init container goes into every "
                    f"pod of project '{name}' and needs {need.what}, which the project does "
                    f"not allow (policy.{need.flag} {_not_allowed(need.flag)})", HINT)


def _not_allowed(flag: str) -> str:
    return "does not list it" if flag == "allowCapabilities" else "is false"


def profile_volumes(specs: Specs) -> Iterator[Diagnostic]:
    """The RuntimeProfile's volumes go into every pod of every project, so they are of the
    kinds Pod Security ``restricted`` admits."""
    runtime = specs.runtime
    if runtime is None:
        return
    for i, v in enumerate(runtime.resource.spec.volumes):
        source = next(iter(v.model_extra or {}), "")
        if source not in RESTRICTED_VOLUMES:
            yield runtime.at("spec", "volumes", i, source).error(
                "pod-security-volume",
                f"volume '{v.name}' ({source}) goes into every workload pod, and Pod Security "
                "restricted, which project namespaces enforce by default, refuses it",
                f"use one of: {', '.join(sorted(RESTRICTED_VOLUMES))}")


def reserved_volumes(specs: Specs) -> Iterator[Diagnostic]:
    """A workload's volume does not take the name of the platform's writable /tmp."""
    for pod in pods(specs):
        for i, v in enumerate(pod.template.volumes):
            if v.name == TMP_VOLUME:
                yield pod.at("volumes", i, "name").error(
                    "duplicate-volume",
                    f"volume name '{TMP_VOLUME}' is the platform's: the writable /tmp of a "
                    "container with a read-only root filesystem", "choose another name")
