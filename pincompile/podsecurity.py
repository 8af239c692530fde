"""The Pod Security Standards level a namespace enforces, from what its pods may do.

Shared by expansion (the namespaces' ``pod-security.kubernetes.io`` labels), the checks
(what a pod may ask for) and ``diff``'s review (a level lowered), so all three agree.
Levels follow the Kubernetes Pod Security Standards: ``restricted`` allows adding only
``NET_BIND_SERVICE`` and requires non-root, no privilege escalation, every capability
dropped and a seccomp profile; ``baseline`` allows root, privilege escalation and the
container runtime's default capabilities; anything else (host namespaces, hostPath,
privileged containers, other capabilities, seccomp ``Unconfined``) needs ``privileged``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from pincompile.catalog import Entry
from pincompile.models.platform import PinterestSideCar, ProjectPolicy, RuntimeProfile, SideCarSpec
from pincompile.models.security import ContainerSecurity, SecurityDefaults

Level = Literal["restricted", "baseline", "privileged"]
LEVELS: tuple[Level, ...] = ("restricted", "baseline", "privileged")
#: Capabilities ``restricted`` lets a container add.
RESTRICTED_CAPABILITIES = frozenset({"NET_BIND_SERVICE"})
#: Capabilities ``baseline`` lets a container add (the container runtime's default set).
BASELINE_CAPABILITIES = frozenset({
    "AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD",
    "NET_BIND_SERVICE", "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT"})
#: Volume sources ``restricted`` allows (a RuntimeProfile's volumes must be of these).
RESTRICTED_VOLUMES = frozenset({
    "configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim",
    "projected", "secret"})
DEFAULTS = SecurityDefaults()
#: The writable emptyDir a container with a read-only root filesystem gets, and its path.
TMP_VOLUME = "pincompute-tmp"
TMP_MOUNT = "/tmp"


def highest(levels: Iterable[Level]) -> Level:
    """The least restrictive of ``levels`` (``restricted`` when there are none)."""
    return max(levels, key=LEVELS.index, default="restricted")


def capability_level(capability: str) -> Level:
    """The lowest level that lets a container add ``capability``."""
    if capability in RESTRICTED_CAPABILITIES:
        return "restricted"
    return "baseline" if capability in BASELINE_CAPABILITIES else "privileged"


def security_defaults(profile: RuntimeProfile | None) -> SecurityDefaults:
    """The security defaults of the platform (the secure ones without a profile)."""
    return profile.spec.security if profile is not None else DEFAULTS


def defaults_level(defaults: SecurityDefaults) -> Level:
    """The level every namespace needs for the profile's defaults alone."""
    if defaults.seccomp_profile == "Unconfined":
        return "privileged"
    if (not defaults.run_as_non_root or defaults.allow_privilege_escalation
            or not defaults.drop_all_capabilities):
        return "baseline"
    return "restricted"


def policy_level(policy: ProjectPolicy) -> Level:
    """The level a project's policy earns: what its pods may be allowed to do."""
    if policy.allow_host_network or policy.allow_privileged or policy.allow_host_path:
        return "privileged"
    return highest([*(capability_level(c) for c in policy.allow_capabilities),
                    "baseline" if policy.allow_run_as_root else "restricted"])


def namespace_level(policy: ProjectPolicy | None, profile: RuntimeProfile | None) -> Level:
    """The level a project namespace enforces (``policy`` None: a namespace of the platform
    whose pods get the profile's defaults and ask for nothing more)."""
    own: Level = policy_level(policy) if policy is not None else "restricted"
    return highest([own, defaults_level(security_defaults(profile))])


@dataclass(frozen=True)
class Need:
    """Something a container or pod asks for that a project's policy must allow."""

    what: str
    """As a message names it: ``capability NET_ADMIN``, ``root``."""
    flag: str
    """The policy field that allows it: ``allowCapabilities``, ``allowRunAsRoot``."""
    path: tuple[str | int, ...]
    """Where it is asked for, from the top of its document."""
    level: Level
    """The lowest Pod Security level that admits it."""
    capability: str | None = None
    """The capability asked for (``flag`` is then ``allowCapabilities``)."""

    def allowed_by(self, policy: ProjectPolicy) -> bool:
        if self.capability is not None:
            return self.capability in policy.allow_capabilities
        return bool(getattr(policy, _POLICY_FIELDS[self.flag]))


_POLICY_FIELDS = {"allowRunAsRoot": "allow_run_as_root", "allowPrivileged": "allow_privileged",
                  "allowHostPath": "allow_host_path", "allowHostNetwork": "allow_host_network"}


def container_needs(c: ContainerSecurity, path: tuple[str | int, ...],
                    privileged: bool = False) -> list[Need]:
    """What a container (at ``path``) asks for beyond the platform's defaults."""
    needs = [Need(f"capability {cap}", "allowCapabilities", (*path, "capabilities", i),
                  capability_level(cap), cap) for i, cap in enumerate(c.capabilities)]
    if c.run_as_user == 0:
        needs.append(Need("root", "allowRunAsRoot", (*path, "runAsUser"), "baseline"))
    if privileged:
        needs.append(Need("a privileged container", "allowPrivileged", (*path, "privileged"),
                          "privileged"))
    return needs


def sidecar_needs(spec: SideCarSpec) -> list[Need]:
    """What a managed sidecar asks for (its container and its hostPath volumes)."""
    needs = container_needs(spec.container, ("spec", "container"), spec.container.privileged)
    needs += [Need("hostPath volumes", "allowHostPath", ("spec", "volumes", i, "type"),
                   "privileged") for i, v in enumerate(spec.volumes) if v.type == "hostPath"]
    return needs


def daemon_level(sidecars: Iterable[Entry[PinterestSideCar]],
                 profile: RuntimeProfile | None) -> Level:
    """The level of the namespace of the daemon-mode sidecars: what they ask for."""
    levels: list[Level] = [namespace_level(None, profile)]
    for entry in sidecars:
        spec = entry.resource.spec
        if spec.mode == "daemon":
            levels += [n.level for n in sidecar_needs(spec)]
            levels += ["privileged"] if spec.host_network else []
    return highest(levels)
