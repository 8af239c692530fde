"""The security contexts pincompile writes: every container's and every pod's.

Each container carries its whole context (the platform's defaults, with what the container
asks for within its project's policy), so what it runs with is read at the container; the
pod's context repeats the pod-wide defaults for containers added later (``kubectl debug``)
and holds ``fsGroup``. A container whose root filesystem is read-only gets a writable
emptyDir at /tmp unless something else is mounted there.
"""

from __future__ import annotations

from collections.abc import Sequence

from pincompile.expand.context import Obj
from pincompile.expand.fields import mount
from pincompile.models.security import ContainerSecurity, SecurityDefaults
from pincompile.podsecurity import TMP_MOUNT, TMP_VOLUME


def container_context(defaults: SecurityDefaults, own: ContainerSecurity | None,
                      privileged: bool = False) -> Obj:
    """A container's ``securityContext``: ``defaults`` with ``own`` settings over them."""
    user = own.run_as_user if own is not None and own.run_as_user is not None \
        else defaults.run_as_user
    group = own.run_as_group if own is not None and own.run_as_group is not None \
        else defaults.run_as_group
    out: Obj = {}
    if user == 0:
        out["runAsNonRoot"] = False
    elif defaults.run_as_non_root:
        out["runAsNonRoot"] = True
    if user is not None:
        out["runAsUser"] = user
    if group is not None:
        out["runAsGroup"] = group
    if privileged:
        out["privileged"] = True  # implies privilege escalation (the API refuses both)
    elif not defaults.allow_privilege_escalation:
        out["allowPrivilegeEscalation"] = False
    capabilities: Obj = {}
    if defaults.drop_all_capabilities:
        capabilities["drop"] = ["ALL"]
    if own is not None and own.capabilities:
        capabilities["add"] = list(own.capabilities)
    if capabilities:
        out["capabilities"] = capabilities
    if read_only(defaults, own):
        out["readOnlyRootFilesystem"] = True
    out["seccompProfile"] = {"type": defaults.seccomp_profile}
    return out


def read_only(defaults: SecurityDefaults, own: ContainerSecurity | None) -> bool:
    """Whether a container's root filesystem is read-only."""
    if own is not None and own.read_only_root_filesystem is not None:
        return own.read_only_root_filesystem
    return defaults.read_only_root_filesystem


def pod_context(defaults: SecurityDefaults) -> Obj:
    """A pod's ``securityContext``: the pod-wide defaults."""
    out: Obj = {}
    if defaults.run_as_non_root:
        out["runAsNonRoot"] = True
    if defaults.run_as_user is not None:
        out["runAsUser"] = defaults.run_as_user
    if defaults.run_as_group is not None:
        out["runAsGroup"] = defaults.run_as_group
    if defaults.fs_group is not None:
        out["fsGroup"] = defaults.fs_group
    out["seccompProfile"] = {"type": defaults.seccomp_profile}
    return out


def with_writable_tmp(mounts: Sequence[Obj]) -> list[Obj]:
    """``mounts`` of a read-only container, with the writable /tmp unless one is there."""
    if any(m["mountPath"].rstrip("/") == TMP_MOUNT for m in mounts):
        return list(mounts)
    return [*mounts, mount(TMP_VOLUME, TMP_MOUNT)]


def tmp_volume(containers: Sequence[Obj]) -> Obj | None:
    """The emptyDir behind the writable /tmp, when a container mounts it."""
    if any(m["name"] == TMP_VOLUME for c in containers for m in c.get("volumeMounts", ())):
        return {"name": TMP_VOLUME, "emptyDir": {}}
    return None


def token_automount(service_account: str | None, asked: bool | None) -> Obj:
    """``automountServiceAccountToken`` of a pod: off unless the pod names a service account
    or asks for the token; on when asked (over the service account's own setting)."""
    if asked is None:
        return {} if service_account else {"automountServiceAccountToken": False}
    return {"automountServiceAccountToken": asked}
