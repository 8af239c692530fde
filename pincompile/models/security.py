"""Security settings of the spec language: what a container may ask for, and the defaults
the platform's RuntimeProfile gives every container."""

from __future__ import annotations

import typing
from typing import Annotated, Literal

from pydantic import Field

from pincompile.models.base import Strict

Capability = Literal[
    "AUDIT_CONTROL", "AUDIT_READ", "AUDIT_WRITE", "BLOCK_SUSPEND", "BPF", "CHECKPOINT_RESTORE",
    "CHOWN", "DAC_OVERRIDE", "DAC_READ_SEARCH", "FOWNER", "FSETID", "IPC_LOCK", "IPC_OWNER",
    "KILL", "LEASE", "LINUX_IMMUTABLE", "MAC_ADMIN", "MAC_OVERRIDE", "MKNOD", "NET_ADMIN",
    "NET_BIND_SERVICE", "NET_BROADCAST", "NET_RAW", "PERFMON", "SETFCAP", "SETGID", "SETPCAP",
    "SETUID", "SYS_ADMIN", "SYS_BOOT", "SYS_CHROOT", "SYS_MODULE", "SYS_NICE", "SYS_PACCT",
    "SYS_PTRACE", "SYS_RAWIO", "SYS_RESOURCE", "SYS_TIME", "SYS_TTY_CONFIG", "SYSLOG",
    "WAKE_ALARM",
]
"""A Linux capability, as Kubernetes names it (without the ``CAP_`` prefix)."""
CAPABILITIES: tuple[Capability, ...] = typing.get_args(Capability)
UserId = Annotated[int, Field(ge=0, le=2_147_483_647)]
"""A Linux user or group id (0 is root)."""
NonRootId = Annotated[int, Field(ge=1, le=2_147_483_647)]


class ContainerSecurity(Strict):
    """What one container may ask for beyond the platform's defaults."""

    run_as_user: UserId | None = None
    """Run as this user id; 0 (root) only where the project's policy allows
    ``allowRunAsRoot``. Default: the RuntimeProfile's, else the image's user (which must
    not be root)."""
    run_as_group: UserId | None = None
    """Run with this primary group id. Default: the RuntimeProfile's, else the image's."""
    read_only_root_filesystem: bool | None = None
    """Mount the container's root filesystem read-only (a writable emptyDir is mounted at
    /tmp). Default: the RuntimeProfile's ``security.readOnlyRootFilesystem``."""
    capabilities: list[Capability] = Field(default_factory=list, max_length=len(CAPABILITIES))
    """Linux capabilities added to the container (every other one is dropped); each must
    be in the project's ``policy.allowCapabilities``."""


class SecurityDefaults(Strict):
    """What every container pincompile writes runs with, unless the container says
    otherwise within its project's policy. The defaults meet the Pod Security ``restricted``
    standard; relaxing one lowers every project namespace's Pod Security level."""

    run_as_non_root: bool = True
    """Refuse to start a container whose user is root (false: the namespaces enforce
    ``baseline``)."""
    allow_privilege_escalation: bool = False
    """Let a process gain more privileges than its parent, e.g. through setuid binaries
    (true: the namespaces enforce ``baseline``)."""
    drop_all_capabilities: bool = True
    """Drop every Linux capability; a container adds back what its project allows (false:
    the container runtime's default set is kept and the namespaces enforce ``baseline``)."""
    seccomp_profile: Literal["RuntimeDefault", "Unconfined"] = "RuntimeDefault"
    """The container runtime's default syscall filter, or none (``Unconfined``: the
    namespaces enforce ``privileged``)."""
    run_as_user: NonRootId | None = None
    """A user id for every container that names none (never 0)."""
    run_as_group: UserId | None = None
    """A primary group id for every container that names none."""
    fs_group: UserId | None = None
    """The group that owns the pod's volumes (``fsGroup``)."""
    read_only_root_filesystem: bool = False
    """Every container's root filesystem read-only unless it says otherwise; such a
    container gets a writable emptyDir at /tmp."""


__all__ = ["CAPABILITIES", "Capability", "ContainerSecurity", "SecurityDefaults", "UserId"]
